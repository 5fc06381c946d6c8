// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Runs rdma-mcastctl as a child process with its stdout and stderr on pipes.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fake {

struct Finished {
    int exit_code = -1; // 128 + signal if killed
    std::string out;
    std::string err;
};

class Child {
public:
    // `env` entries override the test's environment; a nullopt value unsets the variable.
    Child(const std::vector<std::string> &args,
          const std::map<std::string, std::optional<std::string>> &env = {});
    ~Child();
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;

    // The next line of stdout (without '\n'); nullopt at EOF or after `timeout_ms` (a safety
    // net: the caller waits for output the child is about to write, not for time to pass).
    std::optional<std::string> read_line(int timeout_ms = 10000);
    void signal(int sig);
    // Reads the rest of both pipes and reaps the child; kills it after `timeout_ms`.
    Finished wait(int timeout_ms = 20000);

private:
    pid_t pid_ = -1;
    int out_ = -1, err_ = -1;
    std::string out_buf_, err_buf_;
    bool reaped_ = false;
};

// Runs to completion.
Finished run(const std::vector<std::string> &args,
             const std::map<std::string, std::optional<std::string>> &env = {});

} // namespace fake

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// "The lab": a real systemd booted as PID 1 in a private PID, mount, UTS and cgroup namespace
// on this machine's own (read-only) root, for system tests that need a service manager: unit
// restarts, the fd store, Restart=, kill -9 of a MainPID.
//
// The network namespace is the host's (unless Options::private_network), so a simulated fabric started on the host (its
// abstract IBSIM_SOCKNAME sockets) reaches a daemon running under the lab's systemd, and host
// processes reach sockets in the lab's private /run through host_path().
//
// boot.sh (next to this file) sets the namespace up and explains what is private and why. The
// one hazard worth repeating here: the lab's mount namespace is a copy of the host's, on the
// same file systems. A unit that wrote to a path the lab does not mount over would write to
// the host; systemd-tmpfiles-setup.service would empty the host's /tmp. The harness therefore
// leaves a canary file in the host's /tmp for each lab and fails the test if it is gone.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/fabric.hpp" // RunResult, Process

namespace mcastd::lab {

using sim::RunResult;

// Runs argv on the host (not in a lab), to completion: its exit code (-1 after a timeout or a
// signal), its output and its error output.
RunResult host_run(std::vector<std::string> argv, std::chrono::milliseconds timeout = std::chrono::seconds(60));

class Lab {
public:
    // The lab's root: the host's, read-only; or an overlay of a tmpfs on it, writable and
    // thrown away with the lab, for a test that installs a package (boot.sh, MCASTD_LAB_ROOT).
    enum class Root { read_only, overlay };

    struct Options {
        // Unit files (and NAME.d/ drop-in directories) copied into the lab's
        // /run/systemd/system before systemd starts; empty: none.
        std::filesystem::path unit_dir{};
        Root root = Root::read_only;
        // A network namespace of the lab's own, with `lo` up and nothing else, for a test that
        // changes the kernel's network state (a RoCE membership's IGMP join on lo): none of it
        // reaches the host. The lab then no longer shares the host's abstract sockets (a
        // simulated fabric's ibsim); run() and spawn() enter the namespace too.
        bool private_network = false;
        // From starting boot.sh until systemd says READY=1.
        std::chrono::milliseconds boot_timeout{30'000};
    };

    // Why no lab can boot here (not root, no namespaces, no systemd, no cgroup v2), or nullopt
    // when it can. Tests: `if (auto why = Lab::unavailable()) GTEST_SKIP() << *why;`
    static std::optional<std::string> unavailable();
    // The same, and for Root::overlay also no overlayfs in the kernel.
    static std::optional<std::string> unavailable(Root root);

    // Boots the lab and waits for systemd's READY=1 (sent when the boot transaction is done;
    // sd_notify(3)). Throws std::runtime_error, with boot.sh's output and the lab's journal,
    // when it does not come within Options::boot_timeout.
    Lab();
    explicit Lab(Options opts);
    // Tears down (see teardown()) and adds a GoogleTest failure for every problem it finds.
    ~Lab();
    Lab(const Lab &) = delete;
    Lab &operator=(const Lab &) = delete;

    // The lab's systemd as the host sees it.
    pid_t pid1() const;
    // `systemctl is-system-running` right after READY=1: "running", or "degraded" when some
    // unit failed (failed_units() says which).
    const std::string &boot_state() const;
    // From starting boot.sh to READY=1.
    std::chrono::milliseconds boot_time() const;

    // Runs argv inside the lab (its PID namespace, chrooted into its root, so it sees the
    // lab's /run and /tmp) as root, to completion. exit_code is -1 after a timeout or a
    // signal. The command is found in the lab's PATH (the host's binaries: the root is shared).
    RunResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // Starts argv inside the lab as run() does, without waiting for it: a client that holds
    // something while the test goes on. The Process is nsenter on the host: a signal sent to it
    // (and its destructor's) ends nsenter, not the command, which runs on until it exits by
    // itself or the lab goes down (teardown()). Its output comes through the Process, and with
    // `stdin_pipe` its input too (Process::write_stdin).
    sim::Process spawn(std::vector<std::string> argv, bool stdin_pipe = false);
    // run({"systemctl", args...}).
    RunResult systemctl(std::vector<std::string> args, std::chrono::milliseconds timeout = std::chrono::seconds(60));

    // Writes a unit file, or a drop-in when `name` is "UNIT.d/FILE.conf", into the lab's
    // /run/systemd/system. systemd reads it at the next daemon_reload().
    void write_unit(const std::string &name, const std::string &text);
    // Writes any file in the lab (through host_path()), creating its directories.
    void write_file(const std::string &lab_path, const std::string &text);
    // `systemctl daemon-reload`; throws when it fails.
    void daemon_reload();

    // `systemctl show -p PROP --value UNIT`, trimmed ("" for an unknown property).
    std::string show(const std::string &unit, const std::string &prop);
    // The unit's MainPID in the lab's PID namespace; nullopt when it has none (0).
    std::optional<pid_t> main_pid(const std::string &unit);
    // The host's pid of a process of the lab given by its pid in the lab; nullopt when no such
    // process runs (any more).
    std::optional<pid_t> host_pid(pid_t lab_pid) const;
    // The unit's journal since boot (`journalctl -b -u UNIT`, short-monotonic); every entry
    // when `unit` is empty.
    std::string journal(const std::string &unit = {});

    // The host's path of `lab_path`: /proc/PID1/root + lab_path. A host process can open,
    // write and connect() to files in the lab's private mounts through it.
    std::filesystem::path host_path(const std::string &lab_path) const;

    // Units in the failed state.
    std::vector<std::string> failed_units();
    // Every unit that has left the inactive state since boot (started, whether still running,
    // finished or failed), sorted: what the boot and the tests really ran.
    std::vector<std::string> started_units();

    // The host's /tmp still holds this lab's canary file with its contents.
    bool canary_intact() const;
    // The canary's path in the host's /tmp.
    const std::filesystem::path &canary() const;

    // Boot output, failed units and the last journal lines: for failure messages.
    std::string diagnostics();

    // SIGKILLs PID 1 by pid (the namespace's other processes die with it), reaps boot.sh's
    // unshare, waits for the lab's cgroup to empty and removes it, then checks and removes
    // the canary. Returns the problems found, "" when none. Idempotent; the destructor calls it.
    std::string teardown();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcastd::lab

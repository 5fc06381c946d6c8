// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A simulated InfiniBand fabric for the sim tier: ibsim + a real OpenSM, driven from a
// GoogleTest process that is itself NOT attached to the fabric (no LD_PRELOAD here).
//
// Every Fabric has its own scratch directory and its own IBSIM_SOCKNAME, so tests run in
// parallel. Processes it starts are stopped in the order doc/testbed.md §4 requires: clients
// first, then OpenSM, then ibsim, then the console FIFO writer. Nothing is ever killed by name.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/gid.hpp"

namespace mcastd::sim {

using namespace std::chrono_literals;

// Result of a command run to completion.
struct RunResult {
    int exit_code = -1; // -1: killed on timeout or by a signal
    std::string out;
    std::string err;
};

// A child process with pipes on stdin/stdout/stderr. Destruction stops it (TERM, then KILL
// after 5 s) and reaps it.
//
// A background thread drains stdout and stderr into memory as they arrive, so a chatty child
// never blocks on a full pipe while the test is busy elsewhere. Output written after the child
// has been reaped (by a grandchild that inherited the pipes) is not collected.
//
// The child gets PR_SET_PDEATHSIG(SIGKILL): if the test process dies, nothing it started
// outlives it. The signal follows the *thread* that forked, so create Processes (and Fabrics)
// on a thread that outlives them (GoogleTest's main thread does).
class Process {
public:
    struct Options {
        // The {} initializers let designated initializers skip members without
        // -Wmissing-field-initializers: Process({.argv = {"cat"}, .stdin_pipe = true}).
        std::vector<std::string> argv{};
        std::map<std::string, std::string> env{}; // added to (and overriding) the test's env
        std::filesystem::path cwd{};
        bool stdin_pipe = false;
        // Additions:
        std::filesystem::path stdin_path{}; // stdin opened read-only from this file or FIFO
        bool merge_stderr = false;          // stderr goes into the stdout pipe (2>&1)
        std::filesystem::path log_file{};   // everything read is also appended here
        // Descriptors the child inherits at 3, 4, ... in this order (what a service manager
        // passes as LISTEN_FDS); copies are passed, the caller keeps its own. With LISTEN_FDS
        // in `env`, LISTEN_PID is set to the child's pid, as a service manager does.
        std::vector<int> pass_fds{};
    };
    explicit Process(Options opts);
    ~Process();
    Process(Process &&) noexcept;
    Process &operator=(Process &&) noexcept;
    Process(const Process &) = delete;
    Process &operator=(const Process &) = delete;

    pid_t pid() const;
    bool running();
    // Writes to the child's stdin (needs stdin_pipe); returns false if the pipe is closed.
    bool write_stdin(const std::string &data);
    void close_stdin();
    // Next line of stdout without the newline; nullopt on EOF or timeout.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout);
    // Reads stdout lines until one contains `needle`; returns it, or nullopt on EOF/timeout.
    std::optional<std::string> wait_for_line(const std::string &needle,
                                             std::chrono::milliseconds timeout);
    // Everything read from stderr so far (drained without blocking).
    std::string stderr_text();
    // Waits until stderr contains `needle` (a background thread drains it, so a line the
    // child wrote before some other signal may arrive a moment later). False on timeout/EOF.
    bool wait_for_stderr(const std::string &needle, std::chrono::milliseconds timeout);
    // The rest of stdout (what read_line has not consumed) once the pipe reaches EOF or the
    // child has been reaped; on timeout, whatever has arrived so far.
    std::string read_all(std::chrono::milliseconds timeout);
    void signal(int sig);
    // Waits for exit; returns the exit code, 128+signal for a signal death, nullopt on timeout.
    std::optional<int> wait(std::chrono::milliseconds timeout);
    // SIGTERM, wait up to `grace`, then SIGKILL; reaps. Idempotent.
    void stop(std::chrono::milliseconds grace = 5s);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Waits for `p` to exit, stopping it (TERM, then KILL after 2 s) once `timeout` has passed, and
// collects what it wrote. exit_code is -1 after a timeout or a signal.
RunResult finish(Process &p, std::chrono::milliseconds timeout);

// Where the executable `name` is: the first match in PATH, then /usr/sbin, /sbin, /usr/bin and
// /bin (the administration tools live there even when a test's PATH lacks them); nullopt when
// none. A name with a slash is taken as it is.
std::optional<std::filesystem::path> find_tool(const std::string &name);

// One line per thread of process `pid`: its id, name, state, CPU ticks (user, system), kernel
// wait channel and the syscall it is in (/proc/<pid>/task/*), for a test that finds a process not answering: where
// it is stuck is what the next run cannot reproduce.
std::string thread_states(pid_t pid);

// The ids of process `pid`'s threads named `name` (/proc/<pid>/task/*/comm); empty when there is
// no such process.
std::vector<pid_t> threads_named(pid_t pid, const std::string &name);

// "<prefix>-<pid>-<n>-<random hex>": a name no other test, in this process or another, has. For
// what is global to the machine: abstract sockets, network namespaces.
std::string unique_name(const std::string &prefix);

// True when `name` is `prefix`, a pid, then anything but a digit (unique_name("P") makes
// "P-<pid>-..." for the prefix "P-"), and no process has that pid any more: what a test that
// was killed before its teardown left behind.
bool left_by_dead_process(const std::string &name, const std::string &prefix);

// A new directory $TMPDIR/<prefix>-XXXXXX (/tmp without TMPDIR), mode 0700; throws with errno.
// `in_memory`: without TMPDIR, under /dev/shm when it is a tmpfs (what a simulated host keeps
// there is in memory on a real one: see Fabric's scratch).
std::filesystem::path make_scratch_dir(const std::string &prefix, bool in_memory = false);

// The whole content of a text file (opensm-sa.dump, logs); "" when it cannot be read.
std::string read_text_file(const std::filesystem::path &path);

// Polls `done` every 50 ms until it holds (true) or `timeout` has passed (false). Only for
// state that has no readiness signal (doc/testbed.md §4): the SA's, the daemon's list.
bool poll_until(std::chrono::milliseconds timeout, const std::function<bool()> &done);

class Fabric {
public:
    struct Options {
        int hcas = 4;                           // H1..Hn on one switch S1 (doc/testbed.md §3)
        std::string sm_node = "H1";             // where OpenSM runs
        std::vector<std::string> opensm_args{}; // e.g. {"-s", "1"}
        bool sa_db_dump = false;                // write opensm-sa.dump (adds an -F config)
        // More lines for OpenSM's -F config file (opensm(8)), e.g. "force_log_flush TRUE", so
        // that the -f log is on disk as soon as OpenSM writes it.
        std::vector<std::string> opensm_conf{};
        std::chrono::seconds sa_ready_timeout{30};
        // A network namespace (`ip netns add` NAME) to run ibsim, OpenSM and every process
        // attached to the fabric in, through `ip netns exec`: ibsim's sockets are abstract, so
        // only processes in its namespace reach it (an Ethernet bed host's, tests/ethernet, for
        // one daemon serving both link layers). Empty: the test's own namespace.
        std::string netns{};
    };

    // Starts ibsim, then OpenSM, and waits until the SA answers from a non-SM node.
    // Throws std::runtime_error with ibsim/OpenSM output on failure.
    explicit Fabric(Options opts);
    Fabric();
    ~Fabric();
    Fabric(const Fabric &) = delete;
    Fabric &operator=(const Fabric &) = delete;

    const std::filesystem::path &scratch() const;
    const std::string &sockname() const;

    // Environment that attaches a process to node `node` (LD_PRELOAD, SIM_HOST, IBSIM_SOCKNAME).
    // It also adds verify_asan_link_order=0 to ASAN_OPTIONS so sanitized clients accept the
    // preload. Throws std::invalid_argument for a node that is not in the topology.
    std::map<std::string, std::string> node_env(const std::string &node) const;

    // Starts a client attached to `node`, with cwd `<scratch>/cli-<node>` (umad2sim writes
    // ./sys-<pid> there). The Fabric stops it before OpenSM and ibsim if the test did not.
    // `pass_fds` go to it at 3, 4, ... (Process::Options::pass_fds).
    Process &spawn_on(const std::string &node, std::vector<std::string> argv,
                      std::map<std::string, std::string> extra_env = {}, bool stdin_pipe = false,
                      std::vector<int> pass_fds = {});

    // Runs a command attached to `node` to completion (e.g. saquery, smpquery).
    RunResult run_on(const std::string &node, std::vector<std::string> argv,
                     std::chrono::milliseconds timeout = 20s);

    // Sends one line to the ibsim console ("Unlink \"H2\"", "Error \"H3\"[1] 50", ...).
    void console(const std::string &command);

    // Stops the running OpenSM (TERM, then KILL after 5 s). A no-op when none runs.
    void stop_opensm();
    // Starts OpenSM on `node` (default: the options' sm_node) and waits for the SA.
    void start_opensm(const std::string &node = {}, std::vector<std::string> extra_args = {});
    bool wait_sa(const std::string &from_node, std::chrono::milliseconds timeout);
    // One `saquery -s` from `from_node`: does the SA answer right now? (Addition.)
    bool sa_answers(const std::string &from_node);

    // Port identity read through the simulated port (not hard-coded).
    std::uint64_t port_guid(const std::string &node);
    Gid port_gid(const std::string &node);
    std::uint16_t lid(const std::string &node);

    // ---- The SA's own view (doc/testbed.md §9); queries run from `via` (default H<last>). ----

    // JoinState the SA holds for (mgid, port_gid), or nullopt when the port is not a member.
    // Uses `saquery --smkey 1 MCMR --mgid M --gid G`.
    std::optional<std::uint8_t> sa_join_state(const Gid &mgid, const Gid &port_gid,
                                              const std::string &via = {});
    // Every group port_gid is a member of, with its JoinState, in one query
    // (`saquery --smkey 1 MCMR --gid G`): for a watcher that must sample often.
    std::map<Gid, std::uint8_t> sa_join_states_of(const Gid &port_gid, const std::string &via = {});
    // The group record as the SA reports it (MLID, Q_Key, P_Key, MTU, rate, SL...), or nullopt
    // when the group does not exist. Fields that saquery prints are filled in.
    struct SaGroup {
        Gid mgid{};
        std::uint16_t mlid = 0;
        std::uint32_t qkey = 0;
        std::uint16_t pkey = 0;
        std::uint8_t mtu = 0;  // raw byte, selector included (0x84)
        std::uint8_t rate = 0; // raw byte (0x83)
        std::uint8_t sl = 0;
        std::uint8_t tclass = 0;
        std::uint32_t flow_label = 0;
        std::uint8_t hop_limit = 0;
        std::uint8_t scope = 0;
        std::uint8_t pkt_life = 0; // raw byte, selector included (0x92)
    };
    std::optional<SaGroup> sa_group(const Gid &mgid, const std::string &via = {});

    // Polls until sa_join_state(mgid, port_gid) == want (nullopt = not a member) or timeout.
    bool wait_sa_join_state(const Gid &mgid, const Gid &port_gid, std::optional<std::uint8_t> want,
                            std::chrono::milliseconds timeout);

    // Path of opensm-sa.dump (needs Options::sa_db_dump).
    std::filesystem::path sa_dump_path() const;
    // The MGIDs of every group the SA dump lists with `port_gid` as a member: the complete
    // picture, which saquery's GetTable answers (cut to one MAD, quirk 16) cannot give. The
    // dump follows the SA after a sweep, so it is read again until it includes `at_least` or
    // `timeout` passes; what it held last is returned either way. Needs Options::sa_db_dump
    // (and opensm_args {"-s", "1"} for a dump within about a second).
    std::set<Gid> sa_dump_groups_of(const Gid &port_gid, const std::set<Gid> &at_least,
                                    std::chrono::milliseconds timeout);

    // ---- Additions ----

    // Node names of the topology: "S1", then "H1".."Hn".
    std::vector<std::string> nodes() const;
    // The node SA queries run from by default: the last HCA, "H<n>".
    std::string default_via() const;
    // OpenSM's -f log of the current (or last) OpenSM: ERR codes explain SA rejections.
    std::filesystem::path opensm_log_path() const;
    // Everything ibsim printed so far (console replies, warnings).
    std::string ibsim_output() const;
    // The processes of the simulated fabric: ibsim and the running OpenSM (none: nothing).
    // A benchmark gives them CPUs of their own with these, as a real fabric's switches and SM
    // node do not share the host's.
    std::vector<pid_t> fabric_pids() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcastd::sim

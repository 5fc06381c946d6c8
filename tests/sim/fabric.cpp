// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd::sim::Fabric: ibsim + OpenSM per test, following doc/testbed.md §2-§6 and §9.
#include "sim/fabric.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <list>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sim/tool_output.hpp"

namespace mcastd::sim {

namespace fs = std::filesystem;

std::string read_text_file(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (in)
        text << in.rdbuf();
    return text.str();
}

namespace {

constexpr const char *kUmad2sim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
// ibsim serves at most this many clients (IBSIM_MAX_CLIENTS); the 11th dies in connect().
constexpr std::size_t kMaxSimClients = 10;
// ibsim itself is ready in < 0.15 s [sim]; the margin is for loaded CI machines.
constexpr auto kIbsimReadyTimeout = 15s;
constexpr auto kStopGrace = 5s;
// Interval of the polls that have no readiness signal (SA answering, port state, SA state).
constexpr auto kPollInterval = 50ms;
// How much of a log goes into an exception message.
constexpr std::size_t kLogExcerpt = 6000;

std::string read_file(const fs::path &path) {
    if (!fs::exists(path))
        return "(no " + path.filename().string() + ")";
    return read_text_file(path);
}

// A log for an exception message: its start (where a tool reports bad arguments) and its
// end (what happened last), with the middle cut when it is long.
std::string log_excerpt(const fs::path &path) {
    std::string all = read_file(path);
    if (all.size() <= kLogExcerpt)
        return all;
    std::size_t head = kLogExcerpt / 3, tail = kLogExcerpt - head;
    return all.substr(0, head) + "\n[... " + std::to_string(all.size() - kLogExcerpt) +
           " bytes cut ...]\n" + all.substr(all.size() - tail);
}

void write_file(const fs::path &path, const std::string &text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush())
        throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
}

// Topology of doc/testbed.md §3 (gen_net): switch "S1" with max(8, n+2) ports, HCA "Hi" on
// switch port i, every HCA cabled on its port 1. Both ends of each cable are declared.
std::string topology(int hcas) {
    std::ostringstream net;
    net << "Switch\t" << std::max(8, hcas + 2) << " \"S1\"\n";
    for (int i = 1; i <= hcas; ++i)
        net << "[" << i << "]\t\"H" << i << "\"[1]\n";
    for (int i = 1; i <= hcas; ++i)
        net << "\nHca\t1 \"H" << i << "\"\n[1]\t\"S1\"[" << i << "]\n";
    return net.str();
}

std::string join_argv(const std::vector<std::string> &argv) {
    std::string s;
    for (const auto &a : argv)
        s += (s.empty() ? "" : " ") + a;
    return s;
}

} // namespace

bool poll_until(std::chrono::milliseconds timeout, const std::function<bool()> &done) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        if (done())
            return true;
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(kPollInterval);
    }
}

struct Fabric::Impl {
    Options opts;

    // argv as the fabric starts it: inside Options::netns when there is one. `ip netns exec`
    // execs the command, so the Process's pid is the command's own.
    std::vector<std::string> in_netns(std::vector<std::string> argv) const {
        if (opts.netns.empty())
            return argv;
        const auto ip = find_tool("ip");
        if (!ip)
            throw std::runtime_error("Fabric: Options::netns needs `ip`, which is not installed");
        argv.insert(argv.begin(), {ip->string(), "netns", "exec", opts.netns});
        return argv;
    }
    fs::path scratch;
    std::string sockname;
    fs::path net_file, console_fifo, opensm_conf;
    int console_fd = -1; // the FIFO's long-lived writer: EOF on its stdin makes ibsim spin
    std::optional<Process> ibsim;
    std::optional<Process> opensm;
    std::string opensm_node;    // node of the current (or last) OpenSM
    std::list<Process> clients; // stable addresses: spawn_on hands out references
    std::mutex tool_mu;         // run_on is sequential (ibsim client budget)
    // Guards `clients` and `opensm`'s engagement: a tool's budget check counts them from
    // whichever thread runs it, while the test thread starts and stops processes.
    std::mutex roster_mu;

    ~Impl() { shutdown(); }

    fs::path ibsim_log() const { return scratch / "ibsim.out"; }
    fs::path osm_dir(const std::string &node) const { return scratch / ("osm-" + node); }
    fs::path cli_dir(const std::string &node) const { return scratch / ("cli-" + node); }

    bool known_node(const std::string &node) const {
        if (node == "S1")
            return true;
        if (node.size() < 2 || node[0] != 'H')
            return false;
        auto n = parse_number(std::string_view(node).substr(1), 1'000'000);
        return n && *n >= 1 && *n <= static_cast<std::uint64_t>(opts.hcas) &&
               node == "H" + std::to_string(*n);
    }

    void check_node(const std::string &node) const {
        if (!known_node(node))
            throw std::invalid_argument("no node '" + node + "' in this fabric (S1, H1..H" +
                                        std::to_string(opts.hcas) + ")");
    }

    std::size_t attached_clients() {
        std::lock_guard lock(roster_mu);
        std::size_t n = opensm && opensm->running() ? 1 : 0;
        for (auto &c : clients)
            n += c.running() ? 1 : 0;
        return n;
    }

    void check_client_budget(const std::string &what) {
        if (attached_clients() + 1 > kMaxSimClients)
            throw std::runtime_error(
                what + ": ibsim serves at most " + std::to_string(kMaxSimClients) +
                " clients (OpenSM and every running tool count); stop a client first");
    }

    std::string diagnostics() const {
        std::string d = "scratch: " + scratch.string() +
                        " (kept only with MCASTD_KEEP_SCRATCH=1)\n--- ibsim output ---\n" +
                        log_excerpt(ibsim_log());
        if (!opensm_node.empty()) {
            d += "\n--- OpenSM stdout (" + opensm_node + ") ---\n" +
                 log_excerpt(osm_dir(opensm_node) / "stdout") + "\n--- OpenSM log ---\n" +
                 log_excerpt(osm_dir(opensm_node) / "osm.log");
        }
        return d;
    }

    void start_ibsim() {
        fs::create_directories(scratch);
        net_file = scratch / "net";
        write_file(net_file, topology(opts.hcas));
        console_fifo = scratch / "console";
        if (::mkfifo(console_fifo.c_str(), 0600) < 0)
            throw std::runtime_error("mkfifo " + console_fifo.string() + ": " +
                                     std::strerror(errno));
        // O_RDWR never blocks on a FIFO and keeps a writer open for as long as we live, so
        // ibsim's console never sees EOF. ibsim's own open (read-only) then does not block.
        console_fd = ::open(console_fifo.c_str(), O_RDWR | O_CLOEXEC);
        if (console_fd < 0)
            throw std::runtime_error("open " + console_fifo.string() + ": " + std::strerror(errno));
        // -s: start serving at once instead of waiting for "Start" on the console.
        ibsim.emplace(Process::Options{.argv = in_netns({"ibsim", "-s", net_file.string()}),
                                       .env = {{"IBSIM_SOCKNAME", sockname}},
                                       .cwd = scratch,
                                       .stdin_path = console_fifo,
                                       .merge_stderr = true,
                                       .log_file = ibsim_log()});
        if (!ibsim->wait_for_line("Network simulator ready.", kIbsimReadyTimeout)) {
            bool alive = ibsim->running();
            throw std::runtime_error(std::string("ibsim did not become ready (") +
                                     (alive ? "still running" : "exited") + ")\n" + diagnostics());
        }
    }

    void shutdown() {
        // doc/testbed.md §4: clients first, then OpenSM, then ibsim, then the FIFO writer. A
        // client still exiting when ibsim dies can hang in sim_disconnect().
        for (auto &c : clients)
            c.signal(SIGTERM); // all at once: each may take a while to exit
        for (auto &c : clients)
            c.stop(kStopGrace);
        if (opensm)
            opensm->stop(kStopGrace);
        if (ibsim)
            ibsim->stop(kStopGrace);
        if (console_fd >= 0)
            ::close(console_fd);
        console_fd = -1;
        if (scratch.empty())
            return;
        const char *keep = std::getenv("MCASTD_KEEP_SCRATCH");
        if (keep && std::string_view(keep) == "1") {
            std::fprintf(stderr, "mcastd::sim::Fabric: kept scratch dir %s\n", scratch.c_str());
            return;
        }
        std::error_code ec;
        fs::remove_all(scratch, ec);
    }
};

Fabric::Fabric() : Fabric(Options{}) {}

Fabric::Fabric(Options opts) : impl_(std::make_unique<Impl>()) {
    auto &d = *impl_;
    d.opts = std::move(opts);
    // One switch with hcas + 2 ports; ibsim allows at most 255 ports per switch.
    if (d.opts.hcas < 1 || d.opts.hcas > 253)
        throw std::invalid_argument("Fabric: hcas must be 1..253, got " +
                                    std::to_string(d.opts.hcas));
    d.check_node(d.opts.sm_node);
    // Unique per Fabric, also across processes: ibsim's sockets are abstract, so two fabrics
    // with the same name would cross-connect instead of failing.
    d.sockname = unique_name("mcastd");
    // In memory: the nodes' processes run in it, and umad2sim writes its fake sysfs there at
    // each one's start and removes it at its exit (doc/testbed.md §2); the real sysfs, and the
    // daemon's state directory under systemd (/run), are in memory too. On a loaded disk the
    // fake sysfs alone took ~40 ms per daemon start and as much per exit.
    d.scratch = make_scratch_dir("mcastd-sim", /*in_memory=*/true);
    d.opensm_conf = d.scratch / "opensm.conf";
    // Always pass our own -F so the host's /etc/opensm/opensm.conf cannot change the test.
    std::string conf = d.opts.sa_db_dump ? "sa_db_dump TRUE\n" : "# defaults (mcastd::sim::Fabric)\n";
    for (const auto &line : d.opts.opensm_conf)
        conf += line + "\n";
    write_file(d.opensm_conf, conf);
    d.start_ibsim(); // on a throw, ~Impl stops whatever did start
    start_opensm(d.opts.sm_node);
}

Fabric::~Fabric() = default;

const fs::path &Fabric::scratch() const { return impl_->scratch; }
const std::string &Fabric::sockname() const { return impl_->sockname; }

std::vector<std::string> Fabric::nodes() const {
    std::vector<std::string> n{"S1"};
    for (int i = 1; i <= impl_->opts.hcas; ++i)
        n.push_back("H" + std::to_string(i));
    return n;
}

std::string Fabric::default_via() const { return "H" + std::to_string(impl_->opts.hcas); }

std::map<std::string, std::string> Fabric::node_env(const std::string &node) const {
    impl_->check_node(node);
    // SIM_HOST picks the node; the client uses its port 1. The preload replaces any inherited
    // LD_PRELOAD: ibsim-run's append logic is broken (doc/testbed.md §1).
    std::map<std::string, std::string> env{
        {"LD_PRELOAD", kUmad2sim}, {"SIM_HOST", node}, {"IBSIM_SOCKNAME", impl_->sockname}};
    // A sanitized build (MCASTD_SANITIZE) refuses to start when a preloaded library comes
    // before the ASan runtime; the shim must come first, so tell ASan not to check.
    const char *asan = std::getenv("ASAN_OPTIONS");
    env["ASAN_OPTIONS"] = std::string(asan && *asan ? asan : "") + (asan && *asan ? ":" : "") +
                          "verify_asan_link_order=0:suppressions=" MCASTD_ASAN_SUPPRESSIONS;
    return env;
}

Process &Fabric::spawn_on(const std::string &node, std::vector<std::string> argv,
                          std::map<std::string, std::string> extra_env, bool stdin_pipe, std::vector<int> pass_fds) {
    auto env = node_env(node);
    for (auto &[k, v] : extra_env)
        env[k] = v;
    impl_->check_client_budget("spawn_on " + node + ": " + join_argv(argv));
    fs::create_directories(impl_->cli_dir(node));
    std::lock_guard lock(impl_->roster_mu);
    return impl_->clients.emplace_back(Process::Options{.argv = impl_->in_netns(std::move(argv)),
                                                        .env = std::move(env),
                                                        .cwd = impl_->cli_dir(node),
                                                        .stdin_pipe = stdin_pipe,
                                                        .pass_fds = std::move(pass_fds)});
}

RunResult Fabric::run_on(const std::string &node, std::vector<std::string> argv,
                         std::chrono::milliseconds timeout) {
    auto env = node_env(node);
    std::lock_guard lock(impl_->tool_mu);
    impl_->check_client_budget("run_on " + node + ": " + join_argv(argv));
    fs::create_directories(impl_->cli_dir(node));
    Process p(Process::Options{.argv = impl_->in_netns(std::move(argv)), .env = std::move(env),
                               .cwd = impl_->cli_dir(node)});
    return finish(p, timeout); // a hung tool (e.g. waiting for a dead ibsim) reports -1
}

void Fabric::console(const std::string &command) {
    auto &d = *impl_;
    if (command.find('\n') != std::string::npos)
        throw std::invalid_argument("ibsim console command contains a newline: " + command);
    if (!d.ibsim || !d.ibsim->running())
        throw std::runtime_error("ibsim console: ibsim is not running\n" + d.diagnostics());
    // One write of less than PIPE_BUF bytes is atomic on a FIFO.
    std::string line = command + "\n";
    if (::write(d.console_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        throw std::runtime_error("ibsim console write: " + std::string(std::strerror(errno)));
}

void Fabric::stop_opensm() {
    std::lock_guard lock(impl_->roster_mu);
    if (impl_->opensm)
        impl_->opensm->stop(kStopGrace);
    impl_->opensm.reset();
}

void Fabric::start_opensm(const std::string &node_arg, std::vector<std::string> extra_args) {
    auto &d = *impl_;
    std::string node = node_arg.empty() ? d.opts.sm_node : node_arg;
    d.check_node(node);
    if (d.opensm && d.opensm->running())
        throw std::logic_error("start_opensm: OpenSM already runs on " + d.opensm_node);
    d.check_client_budget("start_opensm " + node);
    // Per-node state dir: a restart on the same node reuses its guid2lid cache (same LIDs),
    // as a real SM host would; another node starts with its own.
    fs::path dir = d.osm_dir(node);
    fs::create_directories(dir);
    std::vector<std::string> argv{"opensm", "-F", d.opensm_conf.string(),
                                  "-f", (dir / "osm.log").string()};
    argv.insert(argv.end(), d.opts.opensm_args.begin(), d.opts.opensm_args.end());
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    auto env = node_env(node);
    env["OSM_TMP_DIR"] = dir.string();
    env["OSM_CACHE_DIR"] = dir.string();
    d.opensm_node = node;
    std::unique_lock roster(d.roster_mu);
    d.opensm.emplace(Process::Options{.argv = d.in_netns(std::move(argv)),
                                      .env = std::move(env),
                                      .cwd = dir,
                                      .merge_stderr = true,
                                      .log_file = dir / "stdout"});
    roster.unlock();
    // Wait from a node other than the SM's: the SA ignores every MAD until its first sweep is
    // done, and only a query that succeeds from another node proves that.
    std::string via = default_via();
    if (via == node && d.opts.hcas > 1)
        via = "H1";
    bool ready = poll_until(d.opts.sa_ready_timeout, [&] {
        if (!d.opensm->running())
            throw std::runtime_error("OpenSM on " + node + " exited with status " +
                                     std::to_string(d.opensm->wait(0ms).value_or(-1)) +
                                     " before the SA answered\n" + d.diagnostics());
        return sa_answers(via);
    });
    if (!ready)
        throw std::runtime_error("the SA did not answer from " + via + " within " +
                                 std::to_string(d.opts.sa_ready_timeout.count()) +
                                 " s (OpenSM on " + node + " still running)\n" + d.diagnostics());
}

bool Fabric::sa_answers(const std::string &from_node) {
    // `saquery -s` exits 0 once the SA answers; 110 while MADs bounce (no SM attached).
    return run_on(from_node, {"saquery", "-s"}, 10s).exit_code == 0;
}

bool Fabric::wait_sa(const std::string &from_node, std::chrono::milliseconds timeout) {
    return poll_until(timeout, [&] { return sa_answers(from_node); });
}

namespace {

ToolRecord run_fields(Fabric &f, const std::string &node, std::vector<std::string> argv) {
    std::string cmd = join_argv(argv);
    auto r = f.run_on(node, std::move(argv));
    if (r.exit_code != 0)
        throw std::runtime_error("'" + cmd + "' on " + node + " exited " +
                                 std::to_string(r.exit_code) + ": " + r.err);
    return parse_fields(r.out);
}

} // namespace

std::uint64_t Fabric::port_guid(const std::string &node) {
    // NodeInfo answered by the port itself (DR path "0"): the GUID of the port it arrived on.
    return field_number(run_fields(*this, node, {"smpquery", "-D", "nodeinfo", "0"}), "portguid");
}

Gid Fabric::port_gid(const std::string &node) {
    auto pi = run_fields(*this, node, {"smpquery", "-D", "portinfo", "0", "1"});
    return make_gid(field_number(pi, "gidprefix"), port_guid(node));
}

std::uint16_t Fabric::lid(const std::string &node) {
    // Live PortInfo, not ibstat: umad2sim's sysfs is a snapshot taken at process start.
    auto pi = run_fields(*this, node, {"smpquery", "-D", "portinfo", "0", "1"});
    return static_cast<std::uint16_t>(field_number(pi, "lid", 0xffff));
}

namespace {

std::vector<ToolRecord> saquery_mcmr(Fabric &f, const std::string &via,
                                     std::vector<std::string> argv) {
    std::string cmd = join_argv(argv);
    auto r = f.run_on(via, std::move(argv));
    if (r.exit_code != 0)
        throw std::runtime_error("'" + cmd + "' on " + via + " exited " +
                                 std::to_string(r.exit_code) + " (110: no SA reachable): " + r.err);
    return parse_records(r.out, "MCMember Record dump:");
}

} // namespace

std::optional<std::uint8_t> Fabric::sa_join_state(const Gid &mgid, const Gid &port_gid,
                                                  const std::string &via) {
    // Trusted (--smkey 1 is OpenSM's default SA key): untrusted answers zero PortGID and
    // JoinState. A non-member gives no record at all, and exit 0.
    auto records = saquery_mcmr(*this, via.empty() ? default_via() : via,
                                {"saquery", "--smkey", "1", "MCMR", "--mgid", format_gid(mgid),
                                 "--gid", format_gid(port_gid)});
    for (const auto &rec : records)
        if (field_gid(rec, "mgid") == mgid && field_gid(rec, "portgid") == port_gid)
            return static_cast<std::uint8_t>(field_number(rec, "joinstate", 0xf));
    if (!records.empty())
        throw std::runtime_error("saquery MCMR --mgid " + format_gid(mgid) + " --gid " +
                                 format_gid(port_gid) + " returned records of other ports");
    return std::nullopt;
}

std::map<Gid, std::uint8_t> Fabric::sa_join_states_of(const Gid &port_gid, const std::string &via) {
    std::map<Gid, std::uint8_t> states;
    for (const auto &rec : saquery_mcmr(*this, via.empty() ? default_via() : via,
                                        {"saquery", "--smkey", "1", "MCMR", "--gid", format_gid(port_gid)})) {
        if (field_gid(rec, "portgid") != port_gid)
            throw std::runtime_error("saquery MCMR --gid " + format_gid(port_gid) + " returned records of other ports");
        states[field_gid(rec, "mgid")] = static_cast<std::uint8_t>(field_number(rec, "joinstate", 0xf));
    }
    return states;
}

std::optional<Fabric::SaGroup> Fabric::sa_group(const Gid &mgid, const std::string &via) {
    // Untrusted: one record per group (trusted would give one per member port), with
    // PortGID and JoinState zeroed. No group, no record.
    auto records = saquery_mcmr(*this, via.empty() ? default_via() : via,
                                {"saquery", "MCMR", "--mgid", format_gid(mgid)});
    for (const auto &rec : records) {
        if (field_gid(rec, "mgid") != mgid)
            continue;
        SaGroup g;
        g.mgid = mgid;
        g.mlid = static_cast<std::uint16_t>(field_number(rec, "mlid", 0xffff));
        g.qkey = static_cast<std::uint32_t>(field_number(rec, "qkey", 0xffffffff));
        g.pkey = static_cast<std::uint16_t>(field_number(rec, "pkey", 0xffff));
        g.mtu = static_cast<std::uint8_t>(field_number(rec, "mtu", 0xff));
        g.rate = static_cast<std::uint8_t>(field_number(rec, "rate", 0xff));
        g.pkt_life = static_cast<std::uint8_t>(field_number(rec, "pkt_life", 0xff));
        g.sl = static_cast<std::uint8_t>(field_number(rec, "sl", 0xf));
        g.tclass = static_cast<std::uint8_t>(field_number(rec, "tclass", 0xff));
        g.flow_label = static_cast<std::uint32_t>(field_number(rec, "flowlabel", 0xfffff));
        g.hop_limit = static_cast<std::uint8_t>(field_number(rec, "hoplimit", 0xff));
        g.scope = static_cast<std::uint8_t>(field_number(rec, "scope", 0xf));
        return g;
    }
    return std::nullopt;
}

bool Fabric::wait_sa_join_state(const Gid &mgid, const Gid &port_gid,
                                std::optional<std::uint8_t> want,
                                std::chrono::milliseconds timeout) {
    return poll_until(timeout, [&] { return sa_join_state(mgid, port_gid) == want; });
}

fs::path Fabric::sa_dump_path() const {
    if (!impl_->opts.sa_db_dump)
        throw std::logic_error("sa_dump_path: the Fabric was built without Options::sa_db_dump");
    return impl_->osm_dir(impl_->opensm_node) / "opensm-sa.dump";
}

std::set<Gid> Fabric::sa_dump_groups_of(const Gid &port_gid, const std::set<Gid> &at_least,
                                        std::chrono::milliseconds timeout) {
    std::set<Gid> got;
    poll_until(timeout, [&] {
        got.clear();
        for (const SaDumpGroup &g : parse_sa_dump(read_file(sa_dump_path())))
            if (g.members.count(port_gid))
                got.insert(g.mgid);
        return std::includes(got.begin(), got.end(), at_least.begin(), at_least.end());
    });
    return got;
}

fs::path Fabric::opensm_log_path() const { return impl_->osm_dir(impl_->opensm_node) / "osm.log"; }

std::string Fabric::ibsim_output() const { return read_file(impl_->ibsim_log()); }

std::vector<pid_t> Fabric::fabric_pids() const {
    std::lock_guard lock(impl_->roster_mu);
    std::vector<pid_t> pids;
    if (impl_->ibsim)
        pids.push_back(impl_->ibsim->pid());
    if (impl_->opensm)
        pids.push_back(impl_->opensm->pid());
    return pids;
}

} // namespace mcastd::sim

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl's metrics (libclient/ctl/format_metrics.cpp): the exposition of a fixed status,
// line for line, built here from the same input; the format's escapes; one HELP and one TYPE per
// family, before its samples; counters and only counters end in _total; every family listed in
// rdma-mcastctl(1); and the atomic file writer behind --output.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "atomic_file.hpp"
#include "metrics.hpp"

namespace {

using ctl::escape_help;
using ctl::escape_label_value;
using ctl::metrics_text;

rdmamcast::Status sample_status() {
    rdmamcast::Status s;
    s.daemon = "rdma-mcastd 0.1.0";
    s.protocol = 2;
    s.uptime_s = 12.5;
    s.clients = 3;
    rdmamcast::PortStatus p;
    p.device = "mlx5_0";
    p.port = 1;
    p.state = "ACTIVE";
    p.link_layer = "InfiniBand";
    p.groups = 4;
    p.max_groups = 1024;
    p.memberships = {6, 1, 0, 2};
    p.rejoins = 3;
    p.sa = rdmamcast::PortSa{16, false, 0.41, 300};
    s.ports.push_back(p);
    // A port that is down, without a cap, an SA window or memberships.
    rdmamcast::PortStatus down;
    down.device = "mlx5_1";
    down.port = 2;
    down.state = "DOWN";
    down.link_layer = "InfiniBand";
    down.rejoining = true;
    s.ports.push_back(down);
    s.counters.sa_mads_sent = 10;
    s.counters.sa_retransmits = 1;
    s.counters.sa_timeouts = 2;
    s.counters.sa_bounces = 0;
    s.counters.sa_responses = 9;
    s.counters.sa_late = 3;
    s.counters.sa_sets = 6;
    s.counters.sa_deletes = 2;
    s.counters.sa_gets = 11;
    s.counters.sa_amplification = 1.0225;
    s.counters.joins = 12;
    s.counters.joins_local = 8;
    s.counters.joins_failed = 1;
    s.counters.leaves = 5;
    s.counters.restored = 14;
    s.counters.lost = 7;
    // Root has no share and no SA budget; alice has both.
    s.users.push_back({0, "root", 1, 0, 0, 0, 0, 2, 0, 1, 0, 0, 0, 1, 0, 0, 0});
    s.users.push_back({1000, "alice", 3, 4096, 1, 64, 1, 1, 256, 0, 4, 512, 8388608, 2, 256, -1.5, 50});
    s.refused = {{"access.rules", 2}, {"limits.hello_timeout_ms", 0}};
    return s;
}

// The exposition the formatter must write for sample_status(), put together from its values.
std::string expected_text(const rdmamcast::Status &s) {
    const auto &p = s.ports[0], &d = s.ports[1];
    const auto &c = s.counters;
    const auto &root = s.users[0], &alice = s.users[1];
    std::ostringstream o;
    const auto family = [&](const char *name, const char *type, const char *help) {
        o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
    };
    const std::string p_labels = "device=\"" + p.device + "\",port=\"" + std::to_string(p.port) + "\"";
    const std::string d_labels = "device=\"" + d.device + "\",port=\"" + std::to_string(d.port) + "\"";
    family("rdma_mcastd_up", "gauge", "1 when rdma-mcastctl could read the daemon's status, 0 when it could not.");
    o << "rdma_mcastd_up 1\n";
    family("rdma_mcastd_info", "gauge", "The daemon's name and version, and the protocol it speaks, always 1.");
    o << "rdma_mcastd_info{daemon=\"" << s.daemon << "\",protocol=\"" << s.protocol << "\"} 1\n";
    family("rdma_mcastd_uptime_seconds", "gauge", "Seconds since the daemon started.");
    o << "rdma_mcastd_uptime_seconds 12.5\n";
    family("rdma_mcastd_clients", "gauge", "Clients of the daemon: socket connections and D-Bus callers.");
    o << "rdma_mcastd_clients " << s.clients << '\n';
    family("rdma_mcastd_port_info", "gauge",
           "A port the daemon serves, always 1: its link layer and state (ACTIVE only while an SM serves it).");
    o << "rdma_mcastd_port_info{" << p_labels << ",link_layer=\"InfiniBand\",state=\"ACTIVE\"} 1\n";
    o << "rdma_mcastd_port_info{" << d_labels << ",link_layer=\"InfiniBand\",state=\"DOWN\"} 1\n";
    family("rdma_mcastd_port_up", "gauge", "1 when the port is ACTIVE with a subnet manager, else 0.");
    o << "rdma_mcastd_port_up{" << p_labels << "} 1\nrdma_mcastd_port_up{" << d_labels << "} 0\n";
    family("rdma_mcastd_port_groups", "gauge", "Multicast groups the daemon handles on the port.");
    o << "rdma_mcastd_port_groups{" << p_labels << "} " << p.groups << "\nrdma_mcastd_port_groups{" << d_labels
      << "} 0\n";
    family("rdma_mcastd_port_max_groups", "gauge",
           "The port's cap on groups (access.quotas.groups_per_port); absent when there is none.");
    o << "rdma_mcastd_port_max_groups{" << p_labels << "} " << p.max_groups << '\n';
    family("rdma_mcastd_port_memberships", "gauge",
           "Active memberships on the port by join state; one of several bits counts under each.");
    const char *states[] = {"full", "nonmember", "sendonly-nonmember", "sendonly-full"};
    for (const auto *port : {&p, &d})
        for (int b = 0; b < 4; ++b)
            o << "rdma_mcastd_port_memberships{" << (port == &p ? p_labels : d_labels) << ",join_state=\""
              << states[b] << "\"} " << port->memberships[b] << '\n';
    family("rdma_mcastd_port_rejoins_total", "counter",
           "Re-joins of the port's groups started since the daemon started (SM restart or failover, LID change, "
           "port down and up, ...).");
    o << "rdma_mcastd_port_rejoins_total{" << p_labels << "} " << p.rejoins << "\nrdma_mcastd_port_rejoins_total{"
      << d_labels << "} 0\n";
    family("rdma_mcastd_port_rejoining", "gauge", "1 while a re-join of the port's groups is under way.");
    o << "rdma_mcastd_port_rejoining{" << p_labels << "} 0\nrdma_mcastd_port_rejoining{" << d_labels << "} 1\n";
    family("rdma_mcastd_port_sa_window", "gauge",
           "SA transactions the port may have in flight, as learned from the SA's round trips.");
    o << "rdma_mcastd_port_sa_window{" << p_labels << "} 16\n";
    family("rdma_mcastd_port_sa_slow_start", "gauge", "1 while the port's SA window still doubles per round trip.");
    o << "rdma_mcastd_port_sa_slow_start{" << p_labels << "} 0\n";
    family("rdma_mcastd_port_sa_srtt_seconds", "gauge", "The smoothed round trip to the SA; absent before its first answer.");
    o << "rdma_mcastd_port_sa_srtt_seconds{" << p_labels << "} 0.00041\n";
    family("rdma_mcastd_port_sa_timeout_seconds", "gauge",
           "The timeout of the next first try of an SA transaction; absent before the SA's first answer.");
    o << "rdma_mcastd_port_sa_timeout_seconds{" << p_labels << "} 0.3\n";
    const auto counter = [&](const char *name, const char *help, std::uint64_t v) {
        family(name, "counter", help);
        o << name << ' ' << v << '\n';
    };
    counter("rdma_mcastd_sa_mads_sent_total", "SA MADs sent, retransmissions included.", c.sa_mads_sent);
    counter("rdma_mcastd_sa_retransmits_total", "SA MADs sent again after a try timed out.", c.sa_retransmits);
    counter("rdma_mcastd_sa_timeouts_total", "SA transactions that timed out after their last try.", c.sa_timeouts);
    counter("rdma_mcastd_sa_bounces_total", "SA MADs the fabric returned undelivered.", c.sa_bounces);
    counter("rdma_mcastd_sa_responses_total", "SA transactions answered.", c.sa_responses);
    counter("rdma_mcastd_sa_late_responses_total",
            "SA answers that came for no live transaction (to a try already given up, or a duplicate).", c.sa_late);
    family("rdma_mcastd_sa_transactions_total", "counter",
           "MCMemberRecord transactions the daemon started, by method (set, delete, get).");
    o << "rdma_mcastd_sa_transactions_total{kind=\"set\"} " << c.sa_sets << "\n"
      << "rdma_mcastd_sa_transactions_total{kind=\"delete\"} " << c.sa_deletes << "\n"
      << "rdma_mcastd_sa_transactions_total{kind=\"get\"} " << c.sa_gets << "\n";
    family("rdma_mcastd_sa_amplification_ratio", "gauge",
           "SA MADs sent per SA transaction ended (answered or timed out), 0 before any; above 1.2 the SA spends "
           "its time on retransmits.");
    o << "rdma_mcastd_sa_amplification_ratio 1.0225\n";
    counter("rdma_mcastd_joins_total", "Join requests.", c.joins);
    counter("rdma_mcastd_joins_local_total", "Joins answered from the cached record, without SA traffic.",
            c.joins_local);
    counter("rdma_mcastd_joins_failed_total", "Joins answered with an error.", c.joins_failed);
    counter("rdma_mcastd_leaves_total", "Memberships released (a leave, or the client gone).", c.leaves);
    counter("rdma_mcastd_memberships_restored_total",
            "Restored events told to clients, one per membership: it holds again, or its record changed.",
            c.restored);
    counter("rdma_mcastd_memberships_lost_total",
            "Lost events told to clients, one per membership: the SA no longer holds it, or its port went down.",
            c.lost);
    family("rdma_mcastd_user_usage", "gauge",
           "What a uid with a client of the daemon uses of a shared resource: memberships (held or waiting), "
           "creates (groups its joins created), groups_per_port (on its busiest port), clients, monitors, "
           "queued_bytes (owed to its connections).");
    const auto usage = [&](const rdmamcast::UserUsage &u) {
        const std::string l = "uid=\"" + std::to_string(u.uid) + "\",user=\"" + u.user + "\"";
        o << "rdma_mcastd_user_usage{" << l << ",resource=\"memberships\"} " << u.memberships << '\n'
          << "rdma_mcastd_user_usage{" << l << ",resource=\"creates\"} " << u.creates << '\n'
          << "rdma_mcastd_user_usage{" << l << ",resource=\"groups_per_port\"} " << u.groups_per_port << '\n'
          << "rdma_mcastd_user_usage{" << l << ",resource=\"clients\"} " << u.clients << '\n'
          << "rdma_mcastd_user_usage{" << l << ",resource=\"monitors\"} " << u.monitors << '\n'
          << "rdma_mcastd_user_usage{" << l << ",resource=\"queued_bytes\"} " << u.queued_bytes << '\n';
    };
    usage(root);
    usage(alice);
    family("rdma_mcastd_user_quota", "gauge",
           "The uid's quota or share of the resource (access.quotas, limits); absent when it has none, as root.");
    const std::string a = "uid=\"1000\",user=\"alice\"";
    o << "rdma_mcastd_user_quota{" << a << ",resource=\"memberships\"} " << alice.memberships_quota << '\n'
      << "rdma_mcastd_user_quota{" << a << ",resource=\"creates\"} " << alice.creates_quota << '\n'
      << "rdma_mcastd_user_quota{" << a << ",resource=\"groups_per_port\"} " << alice.groups_per_port_quota << '\n'
      << "rdma_mcastd_user_quota{" << a << ",resource=\"clients\"} " << alice.clients_quota << '\n'
      << "rdma_mcastd_user_quota{" << a << ",resource=\"monitors\"} " << alice.monitors_quota << '\n'
      << "rdma_mcastd_user_quota{" << a << ",resource=\"queued_bytes\"} " << alice.queued_bytes_quota << '\n';
    family("rdma_mcastd_user_flagged_memberships", "gauge",
           "The uid's memberships that the access rules in force now would refuse (kept, flagged).");
    o << "rdma_mcastd_user_flagged_memberships{uid=\"0\",user=\"root\"} 0\n"
      << "rdma_mcastd_user_flagged_memberships{" << a << "} " << alice.flagged << '\n';
    family("rdma_mcastd_user_sa_tokens", "gauge",
           "SA MADs the uid may send now (below 0: a debt its next join waits out); absent without an SA budget.");
    o << "rdma_mcastd_user_sa_tokens{" << a << "} -1.5\n";
    family("rdma_mcastd_user_sa_mads_per_second", "gauge",
           "The rate of the uid's SA budget (access.quotas.sa_mads_per_second); absent without one.");
    o << "rdma_mcastd_user_sa_mads_per_second{" << a << "} " << alice.sa_mads_per_second << '\n';
    family("rdma_mcastd_refusals_total", "counter",
           "What the daemon refused since it started, by reason: the config key of the rule, quota or limit that "
           "refused, or identity (a caller whose credentials could not be read).");
    for (const auto &r : s.refused)
        o << "rdma_mcastd_refusals_total{reason=\"" << r.reason << "\"} " << r.count << '\n';
    return o.str();
}

TEST(Metrics, AFixedStatusLineForLine) {
    const auto s = sample_status();
    const std::string text = metrics_text(s);
    const std::string want = expected_text(s);
    std::istringstream got_lines(text), want_lines(want);
    std::string g, w;
    for (int line = 1; std::getline(want_lines, w); ++line) {
        ASSERT_TRUE(std::getline(got_lines, g)) << "ends before line " << line << ": " << w;
        EXPECT_EQ(g, w) << "line " << line;
    }
    EXPECT_FALSE(std::getline(got_lines, g)) << "more than expected: " << g;
    EXPECT_EQ(text, want);
}

TEST(Metrics, LabelValuesAndHelpAreEscapedAsTheFormatSays) {
    EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    EXPECT_EQ(escape_label_value("plain ünïcode"), "plain ünïcode");
    EXPECT_EQ(escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd") << "a double quote stays in HELP";
    auto s = sample_status();
    s.users[1].user = "al\"ice\\\n";
    s.daemon = "rdma-mcastd \"9\"";
    const std::string text = metrics_text(s);
    EXPECT_NE(text.find("rdma_mcastd_user_flagged_memberships{uid=\"1000\",user=\"al\\\"ice\\\\\\n\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("rdma_mcastd_info{daemon=\"rdma-mcastd \\\"9\\\"\",protocol=\"2\"} 1\n"), std::string::npos)
        << text;
    for (std::size_t at = 0; (at = text.find('\n', at)) != std::string::npos; ++at)
        EXPECT_TRUE(at + 1 == text.size() || text[at + 1] == '#' || text[at + 1] == 'r')
            << "a raw line feed inside a sample at " << at;
}

// The families of an exposition: name -> its TYPE, after checking that each has one HELP and
// one TYPE line, both before its samples, and that its samples are together.
std::map<std::string, std::string> families_of(const std::string &text) {
    std::map<std::string, std::string> type;
    std::map<std::string, int> helps, types;
    std::set<std::string> closed;
    std::string current, line;
    std::istringstream in(text);
    const std::regex help_re(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+)");
    const std::regex type_re(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge))");
    const std::regex sample_re(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? \S+)");
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_match(line, m, help_re)) {
            EXPECT_EQ(++helps[m[1]], 1) << "HELP twice: " << m[1];
            EXPECT_FALSE(closed.count(m[1])) << m[1];
            if (!current.empty())
                closed.insert(current);
            current = m[1];
        } else if (std::regex_match(line, m, type_re)) {
            EXPECT_EQ(++types[m[1]], 1) << "TYPE twice: " << m[1];
            EXPECT_EQ(m[1], current) << "TYPE right after its HELP";
            type[m[1]] = m[2];
        } else if (std::regex_match(line, m, sample_re)) {
            EXPECT_EQ(m[1], current) << "a sample outside its family: " << line;
        } else {
            ADD_FAILURE() << "not a line of the format: " << line;
        }
    }
    for (const auto &[name, n] : helps)
        EXPECT_EQ(types[name], 1) << name;
    return type;
}

TEST(Metrics, EveryFamilyHasOneHelpAndOneTypeAndCountersAloneEndInTotal) {
    const auto families = families_of(metrics_text(sample_status()));
    EXPECT_EQ(families.size(), 35u);
    for (const auto &[name, type] : families) {
        EXPECT_EQ(name.rfind("rdma_mcastd_", 0), 0u) << name;
        const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
        EXPECT_EQ(type == "counter", total) << name;
    }
    // Without users, ports or refusals their families are left out, not announced empty.
    rdmamcast::Status bare;
    const auto few = families_of(metrics_text(bare));
    EXPECT_FALSE(few.count("rdma_mcastd_user_usage"));
    EXPECT_FALSE(few.count("rdma_mcastd_port_info"));
    EXPECT_FALSE(few.count("rdma_mcastd_refusals_total"));
    EXPECT_TRUE(few.count("rdma_mcastd_sa_mads_sent_total"));
}

TEST(Metrics, AnUnreachableDaemonIsUpZeroAndNothingElse) {
    EXPECT_EQ(ctl::metrics_unreachable_text(),
              "# HELP rdma_mcastd_up 1 when rdma-mcastctl could read the daemon's status, 0 when it could not.\n"
              "# TYPE rdma_mcastd_up gauge\n"
              "rdma_mcastd_up 0\n");
}

// rdma-mcastctl(1), METRICS, names every family the formatter writes, and no other.
TEST(Metrics, TheManPageListsEveryFamily) {
    std::ifstream page(std::string(MCASTD_SOURCE_DIR) + "/libclient/rdma-mcastctl.1");
    ASSERT_TRUE(page) << "rdma-mcastctl.1";
    std::stringstream buf;
    buf << page.rdbuf();
    const std::string man = buf.str();
    const auto section = man.find(".SH METRICS");
    ASSERT_NE(section, std::string::npos);
    const std::string metrics = man.substr(section, man.find(".SH ", section + 1) - section);
    std::set<std::string> listed;
    const std::regex name_re(R"(rdma_mcastd_[a-z_]+)");
    for (std::sregex_iterator it(metrics.begin(), metrics.end(), name_re), end; it != end; ++it)
        listed.insert(it->str());
    std::set<std::string> written;
    for (const auto &[name, type] : families_of(metrics_text(sample_status())))
        written.insert(name);
    EXPECT_EQ(listed, written);
}

// ---- --output: the file appears whole or not at all ----

class AtomicFile : public ::testing::Test {
protected:
    AtomicFile() {
        char tmpl[] = "/tmp/mcastctl-metrics-XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    ~AtomicFile() override { std::filesystem::remove_all(dir); }
    std::vector<std::string> entries() const {
        std::vector<std::string> out;
        for (const auto &e : std::filesystem::directory_iterator(dir))
            out.push_back(e.path().filename());
        std::sort(out.begin(), out.end());
        return out;
    }
    static std::string read(const std::string &path) {
        std::ifstream f(path);
        std::stringstream b;
        b << f.rdbuf();
        return b.str();
    }
    std::string dir;
};

TEST_F(AtomicFile, ReplacesTheFileWholeReadableByAllAndLeavesNoTemporary) {
    const std::string path = dir + "/rdma-mcastd.prom";
    ctl::write_file_atomically(path, "first\n");
    // A reader that opened the old file reads it whole after the replacement: it is another inode.
    const int old = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(old, 0);
    const std::string big(1 << 20, 'x');
    ctl::write_file_atomically(path, big);
    char buf[16] = {};
    EXPECT_EQ(::read(old, buf, sizeof buf), 6);
    EXPECT_STREQ(buf, "first\n");
    ::close(old);
    EXPECT_EQ(read(path), big);
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u) << "node_exporter reads it as another user";
    EXPECT_EQ(entries(), std::vector<std::string>{"rdma-mcastd.prom"});
}

TEST_F(AtomicFile, AFailureNamesThePathAndLeavesNothingBehind) {
    try {
        ctl::write_file_atomically(dir + "/missing/rdma-mcastd.prom", "x\n");
        FAIL() << "no error";
    } catch (const std::system_error &e) {
        EXPECT_EQ(e.code().value(), ENOENT);
        EXPECT_NE(std::string(e.what()).find(dir + "/missing/"), std::string::npos) << e.what();
    }
    // A directory where the file should be: the rename fails, and the temporary goes.
    std::filesystem::create_directory(dir + "/taken.prom");
    std::filesystem::create_directory(dir + "/taken.prom/inside");
    EXPECT_THROW(ctl::write_file_atomically(dir + "/taken.prom", "x\n"), std::system_error);
    EXPECT_EQ(entries(), std::vector<std::string>{"taken.prom"});
}

} // namespace

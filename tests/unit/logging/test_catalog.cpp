// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// systemd/rdma-mcastd.catalog explains every MESSAGE_ID the daemon sends, and nothing else,
// in a form journalctl accepts.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "logging/message_ids.hpp"

namespace mcastd::logging {
namespace {

namespace fs = std::filesystem;

struct Entry {
    std::map<std::string, std::string> headers;
    std::string text;
};

// `-- <id>` starts an entry; "Key: value" lines up to the first blank line are its headers.
std::map<std::string, Entry> parse_catalog(const fs::path &path) {
    std::ifstream in(path);
    EXPECT_TRUE(in) << path;
    std::map<std::string, Entry> out;
    Entry *cur = nullptr;
    bool in_headers = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("-- ", 0) == 0) {
            const std::string id = line.substr(3);
            EXPECT_FALSE(out.count(id)) << "duplicate entry " << id;
            cur = &out[id];
            in_headers = true;
        } else if (!cur) {
            EXPECT_TRUE(line.empty() || line[0] == '#') << "text before the first entry: " << line;
        } else if (in_headers && line.empty()) {
            in_headers = false;
        } else if (in_headers) {
            const auto colon = line.find(": ");
            EXPECT_NE(colon, std::string::npos) << "header without ': ': " << line;
            if (colon != std::string::npos)
                cur->headers[line.substr(0, colon)] = line.substr(colon + 2);
        } else {
            cur->text += line + "\n";
        }
    }
    return out;
}

std::string run(const std::string &cmd) {
    std::string out;
    if (FILE *p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
            out.append(buf, n);
        EXPECT_EQ(::pclose(p), 0) << cmd << "\n" << out;
    }
    return out;
}

TEST(Catalog, EveryMessageIdInTheCodeHasAnEntryAndViceVersa) {
    const auto catalog = parse_catalog(MCASTD_CATALOG);
    std::set<std::string> in_catalog, in_code;
    for (const auto &[id, e] : catalog)
        in_catalog.insert(id);
    for (const MessageId &m : kMessageIds)
        in_code.insert(std::string(m.id));
    EXPECT_EQ(in_catalog, in_code);
}

TEST(Catalog, EntriesHaveSubjectDefinedBySupportAndText) {
    for (const auto &[id, e] : parse_catalog(MCASTD_CATALOG)) {
        EXPECT_TRUE(e.headers.count("Subject")) << id;
        EXPECT_EQ(e.headers.count("Defined-By") ? e.headers.at("Defined-By") : "", "rdma-mcastd") << id;
        EXPECT_EQ(e.headers.count("Support") ? e.headers.at("Support") : "", "man:rdma-mcastd(8)") << id;
        EXPECT_GT(e.text.size(), 40u) << id << " explains nothing";
    }
}

TEST(Catalog, PlaceholdersNameOnlyFieldsTheDaemonSends) {
    const std::set<std::string> sent{"RDMA_DEVICE", "RDMA_PORT", "MCAST_MGID", "MCAST_MLID", "MCAST_JOIN_STATE",
                                     "CLIENT_PID", "CLIENT_UID", "CLIENT_ACCOUNT_UID", "CLIENT_COMM", "SA_STATUS",
                                     "POLICY_RULE", "POLICY_QUOTA", "POLICY_LIMIT",
                                     // logging/sa_log.cpp
                                     "SA_AMPLIFICATION", "SA_MADS_SENT", "SA_TRANSACTIONS", "SA_RETRANSMITS",
                                     "SA_LATE",
                                     // logging/membership_log.cpp, log_folded()
                                     "FOLDED_LINES",
                                     // logging/gid_log.cpp
                                     "ROCE_CHANGE", "ROCE_GID", "ROCE_GID_TYPE", "ROCE_SGID_INDEX", "ROCE_NETDEV"};
    const std::regex placeholder("@([A-Z0-9_]+)@");
    for (const auto &[id, e] : parse_catalog(MCASTD_CATALOG)) {
        std::string all = e.text;
        for (const auto &[k, v] : e.headers)
            all += v + "\n";
        for (std::sregex_iterator it(all.begin(), all.end(), placeholder), end; it != end; ++it)
            EXPECT_TRUE(sent.count((*it)[1].str())) << id << " uses @" << (*it)[1].str() << "@";
    }
}

TEST(Catalog, JournalctlCompilesItAndListsEveryId) {
    if (std::system("command -v journalctl >/dev/null 2>&1") != 0)
        GTEST_FAIL() << "journalctl is missing: install the systemd package (scripts/deps.sh)";
    char tmpl[] = "/tmp/mcastd-catalog-XXXXXX";
    ASSERT_TRUE(::mkdtemp(tmpl));
    const fs::path root(tmpl);
    fs::create_directories(root / "usr/lib/systemd/catalog");
    fs::copy_file(MCASTD_CATALOG, root / "usr/lib/systemd/catalog/rdma-mcastd.catalog");
    run("journalctl --root=" + root.string() + " --update-catalog 2>&1");
    const std::string listed = run("journalctl --root=" + root.string() + " --list-catalog 2>&1");
    for (const MessageId &m : kMessageIds)
        EXPECT_NE(listed.find(std::string(m.id) + " rdma-mcastd: "), std::string::npos) << m.name << "\n" << listed;
    fs::remove_all(root);
}

// rdma-mcastd(8), LOGGING, lists every message id and every journal field the daemon adds.
TEST(Catalog, TheManPageListsEveryMessageIdAndField) {
    std::ifstream in(MCASTD_MANPAGE);
    ASSERT_TRUE(in) << MCASTD_MANPAGE;
    std::stringstream page;
    page << in.rdbuf();
    const std::string text = page.str();
    for (const MessageId &m : kMessageIds)
        EXPECT_NE(text.find(std::string(m.id)), std::string::npos) << m.name;
    for (const char *field : {"RDMA_DEVICE", "RDMA_PORT", "MCAST_MGID", "MCAST_MLID", "MCAST_JOIN_STATE", "CLIENT_PID",
                              "CLIENT_UID", "CLIENT_ACCOUNT_UID", "CLIENT_COMM", "SA_STATUS", "POLICY_RULE", "POLICY_QUOTA",
                              "POLICY_LIMIT",
                              "FOLDED_LINES", "ROCE_CHANGE", "ROCE_GID", "ROCE_GID_TYPE", "ROCE_SGID_INDEX",
                              "ROCE_NETDEV"})
        EXPECT_NE(text.find(field), std::string::npos) << field;
}

} // namespace
} // namespace mcastd::logging

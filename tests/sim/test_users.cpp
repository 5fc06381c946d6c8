// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sim/test_users.hpp"

#include <gtest/gtest.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "sim/fabric.hpp"

namespace mcastd::sim {

namespace {

namespace fs = std::filesystem;

std::string tool(const std::string &name) {
    auto p = find_tool(name);
    if (!p)
        throw std::runtime_error("no " + name + " in PATH, /usr/sbin or /sbin");
    return p->string();
}

// Runs an administration command to completion: its exit code and everything it printed.
std::pair<int, std::string> run(std::vector<std::string> argv) {
    Process p(Process::Options{.argv = std::move(argv), .merge_stderr = true});
    const int rc = p.wait(60s).value_or(-1);
    return {rc, p.read_all(1s)};
}

void run_or_throw(std::vector<std::string> argv) {
    const std::string what = argv.front();
    auto [rc, out] = run(std::move(argv));
    if (rc != 0)
        throw std::runtime_error(what + " exited with " + std::to_string(rc) + ": " + out);
}

bool file_has_entry(const char *file, const std::string &name) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(name + ":", 0) == 0)
            return true;
    return false;
}

} // namespace

std::optional<std::string> TestUsers::unavailable() {
    if (::geteuid() != 0)
        return "creating test users needs root (euid " + std::to_string(::geteuid()) + ")";
    for (const char *t : {"useradd", "userdel", "usermod", "groupadd", "groupdel", "setpriv"})
        if (!find_tool(t))
            return std::string("no ") + t + " in PATH, /usr/sbin or /sbin";
    return std::nullopt;
}

std::optional<pid_t> maker_of(const std::string &name) {
    // "mcp" PID "-" 4 hex digits, then the tag's lower-case letters.
    if (name.rfind("mcp", 0) != 0)
        return std::nullopt;
    const std::size_t dash = name.find('-', 3);
    if (dash == std::string::npos || dash == 3 || name.size() < dash + 5)
        return std::nullopt;
    for (std::size_t i = 3; i < dash; ++i)
        if (name[i] < '0' || name[i] > '9')
            return std::nullopt;
    for (std::size_t i = dash + 1; i < dash + 5; ++i)
        if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(static_cast<unsigned char>(name[i])))
            return std::nullopt;
    for (std::size_t i = dash + 5; i < name.size(); ++i)
        if (name[i] < 'a' || name[i] > 'z')
            return std::nullopt;
    return static_cast<pid_t>(std::stol(name.substr(3, dash - 3)));
}

TestUsers::TestUsers() {
    sweep();
    std::random_device rd;
    char rand[8];
    std::snprintf(rand, sizeof rand, "%04x", static_cast<unsigned>(rd() & 0xffff));
    // At most 3 + 7 + 1 + 4 + a short tag: well inside useradd's 32 characters.
    prefix_ = "mcp" + std::to_string(::getpid()) + "-" + rand;
}

// A test killed before its destructor ran (a timeout's SIGKILL) leaves its users and groups,
// each with a subordinate uid range. Whoever makes users next removes those whose maker is
// gone; a maker that still runs (a test beside this one) keeps its own. A pid reused since
// only postpones the removal.
void TestUsers::sweep() {
    const auto names_in = [](const char *file) {
        std::vector<std::string> out;
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);)
            out.push_back(line.substr(0, line.find(':')));
        return out;
    };
    const auto dead = [](const std::string &name) {
        const auto pid = maker_of(name);
        return pid && ::kill(*pid, 0) != 0 && errno == ESRCH;
    };
    // Failures are not the test's: another sweep may have removed it first.
    for (const std::string &n : names_in("/etc/passwd"))
        if (dead(n))
            run({tool("userdel"), n});
    for (const std::string &n : names_in("/etc/group"))
        if (dead(n))
            run({tool("groupdel"), n});
}

TestUsers::~TestUsers() {
    for (auto it = users_.rbegin(); it != users_.rend(); ++it) {
        auto [rc, out] = run({tool("userdel"), it->name});
        if (rc != 0) {
            // Most likely a process of the user still runs: the test did not stop it. Remove the
            // account all the same so nothing is left behind, and say so.
            ADD_FAILURE() << "userdel " << it->name << " exited with " << rc << ": " << out;
            run({tool("userdel"), "--force", it->name});
        }
    }
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
        auto [rc, out] = run({tool("groupdel"), it->name});
        if (rc != 0)
            ADD_FAILURE() << "groupdel " << it->name << " exited with " << rc << ": " << out;
    }
}

TestGroup TestUsers::add_group(const std::string &tag) {
    TestGroup g{prefix_ + tag, 0};
    run_or_throw({tool("groupadd"), g.name});
    groups_.push_back(g); // from here the destructor removes it
    const group *found = ::getgrnam(g.name.c_str());
    if (!found)
        throw std::runtime_error("groupadd made " + g.name + " but getgrnam does not find it");
    groups_.back().gid = found->gr_gid;
    return groups_.back();
}

TestUser TestUsers::add_user(const std::string &tag, const TestGroup &primary,
                             const std::vector<TestGroup> &supplementary) {
    TestUser u{prefix_ + tag, 0, primary.gid};
    std::vector<std::string> argv{tool("useradd"), "--no-create-home", "--no-user-group", "--home-dir", "/nonexistent",
                                  "--shell", "/usr/sbin/nologin", "--gid", primary.name};
    if (!supplementary.empty()) {
        std::string list;
        for (const auto &g : supplementary)
            list += (list.empty() ? "" : ",") + g.name;
        argv.insert(argv.end(), {"--groups", list});
    }
    argv.push_back(u.name);
    run_or_throw(argv);
    users_.push_back(u);
    const passwd *found = ::getpwnam(u.name.c_str());
    if (!found)
        throw std::runtime_error("useradd made " + u.name + " but getpwnam does not find it");
    users_.back().uid = found->pw_uid;
    return users_.back();
}

void TestUsers::add_to_group(const TestUser &user, const TestGroup &group) {
    run_or_throw({tool("usermod"), "--append", "--groups", group.name, user.name});
}

std::vector<std::string> TestUsers::as_user(const TestUser &user, std::vector<std::string> argv) {
    std::vector<std::string> out{tool("setpriv"), "--reuid=" + std::to_string(user.uid),
                                 "--regid=" + std::to_string(user.gid), "--init-groups", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

std::vector<std::string> TestUsers::user_names() const {
    std::vector<std::string> out;
    for (const auto &u : users_)
        out.push_back(u.name);
    return out;
}

std::vector<std::string> TestUsers::group_names() const {
    std::vector<std::string> out;
    for (const auto &g : groups_)
        out.push_back(g.name);
    return out;
}

void make_reachable(const fs::path &file, const fs::path &top) {
    const fs::path t = fs::weakly_canonical(top);
    const fs::path f = fs::weakly_canonical(file);
    if (f.string().rfind(t.string() + "/", 0) != 0)
        throw std::invalid_argument("make_reachable: " + f.string() + " is not under " + t.string());
    for (fs::path p = f.parent_path();; p = p.parent_path()) {
        fs::permissions(p, fs::perms::others_exec, fs::perm_options::add);
        if (p == t)
            break;
    }
}

bool in_passwd(const std::string &name) { return file_has_entry("/etc/passwd", name); }
bool in_group_file(const std::string &name) { return file_has_entry("/etc/group", name); }

} // namespace mcastd::sim

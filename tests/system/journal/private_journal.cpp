// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "private_journal.hpp"

#include <sched.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace mcastd::sim {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char *kJournalDir = "/run/log/journal";

std::string sys_error(const std::string &what) { return what + ": " + std::strerror(errno); }

// mount(2) directly: libmount's mount(8) would record the mount in the host's /run/mount.
std::optional<std::string> mount_tmpfs(const char *where) {
    if (::mount("tmpfs", where, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
        return sys_error(std::string("mount tmpfs on ") + where);
    return std::nullopt;
}

} // namespace

std::optional<std::string> enter_private_journal_namespace() {
    if (::unshare(CLONE_NEWNS) != 0)
        return sys_error("unshare(CLONE_NEWNS) (needs root: CAP_SYS_ADMIN)");
    // Nothing mounted from here on may propagate back to the host.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return sys_error("making / private");
    if (auto e = mount_tmpfs("/run"))
        return e;
    // Storage=volatile keeps journald out of /var/log/journal; the tmpfs guards the host's
    // persistent journal should that ever change. Drop-ins of the host's config go too.
    for (const char *dir : {"/var/log/journal", "/etc/systemd/journald.conf.d"})
        if (fs::is_directory(dir))
            if (auto e = mount_tmpfs(dir))
                return e;
    const fs::path conf = "/run/mcastd-test-journald.conf";
    std::ofstream(conf) << "[Journal]\nStorage=volatile\nReadKMsg=no\nForwardToSyslog=no\n"
                           "ForwardToKMsg=no\nForwardToConsole=no\nForwardToWall=no\n"
                           "RateLimitIntervalSec=0\n";
    if (!fs::exists("/etc/systemd/journald.conf"))
        return "/etc/systemd/journald.conf is missing: is the systemd package installed?";
    if (::mount(conf.c_str(), "/etc/systemd/journald.conf", nullptr, MS_BIND, nullptr) != 0)
        return sys_error("bind-mounting the test's journald.conf");
    fs::create_directories("/run/systemd/journal");
    return std::nullopt;
}

PrivateJournal::PrivateJournal(const fs::path &scratch) {
    notify_ = std::make_unique<NotifySocket>(scratch / "journald-notify.sock");
    journald_ = std::make_unique<Process>(Process::Options{
        .argv = {MCASTD_JOURNALD}, .env = {{"NOTIFY_SOCKET", notify_->path().string()}}, .cwd = scratch});
    if (!notify_->wait_for("READY=1", 20s))
        throw std::runtime_error(std::string(MCASTD_JOURNALD) + " never said READY=1: " + journald_->stderr_text());
}

PrivateJournal::~PrivateJournal() { journald_->stop(); }

std::vector<nlohmann::json> PrivateJournal::entries(const std::vector<std::string> &matches) {
    Process sync({.argv = {"journalctl", "--sync"}});
    if (sync.wait(10s) != 0)
        throw std::runtime_error("journalctl --sync failed: " + sync.stderr_text());
    std::vector<std::string> argv{"journalctl", "--directory", kJournalDir, "--output", "json", "--no-pager"};
    argv.insert(argv.end(), matches.begin(), matches.end());
    Process query({.argv = argv});
    const std::string out = query.read_all(10s);
    if (query.wait(10s) != 0)
        throw std::runtime_error("journalctl failed: " + query.stderr_text());
    std::vector<nlohmann::json> found;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind('{', 0) == 0) // not "-- No entries --"
            found.push_back(nlohmann::json::parse(line));
    return found;
}

std::vector<nlohmann::json> PrivateJournal::wait_entries(const std::vector<std::string> &matches,
                                                         std::size_t count, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto found = entries(matches);
        if (found.size() >= count || std::chrono::steady_clock::now() >= deadline)
            return found;
        std::this_thread::sleep_for(50ms);
    }
}

} // namespace mcastd::sim

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/service_manager.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace mcastd::eth {

namespace {

// The value of `key=` among the datagram's lines, or "" (and `found` false).
std::string field(const std::string &text, const std::string &key, bool *found = nullptr) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + "=", 0) == 0) {
            if (found)
                *found = true;
            return line.substr(key.size() + 1);
        }
    if (found)
        *found = false;
    return {};
}

} // namespace

ServiceManager::ServiceManager(std::filesystem::path path, bool store) : store_(store) {
    notify_ = std::make_unique<sim::NotifySocket>(
        std::move(path), [this](const std::string &text, std::vector<int> &fds) { handle(text, fds); });
}

ServiceManager::~ServiceManager() {
    notify_.reset(); // its thread first
    for (const auto &[name, fd] : stored_)
        ::close(fd);
}

void ServiceManager::handle(const std::string &text, std::vector<int> &fds) {
    std::lock_guard lock(mu_);
    bool fdstore = false, remove = false;
    field(text, "FDSTORE", &fdstore);
    field(text, "FDSTOREREMOVE", &remove);
    const std::string name = field(text, "FDNAME");
    if (fdstore && store_) {
        for (int fd : fds)
            stored_.emplace_back(name.empty() ? "stored" : name, fd);
        fds.clear();
    }
    if (remove)
        std::erase_if(stored_, [&](const auto &s) {
            if (s.first != name)
                return false;
            ::close(s.second);
            return true;
        });
}

bool ServiceManager::wait_for(const std::string &line, std::chrono::milliseconds timeout) {
    return notify_->wait_for(line, timeout).has_value();
}

std::vector<std::string> ServiceManager::stored_names() {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto &[name, fd] : stored_)
        out.push_back(name);
    return out;
}

std::vector<std::pair<std::string, int>> ServiceManager::pass() {
    std::lock_guard lock(mu_);
    std::vector<std::pair<std::string, int>> out;
    for (const auto &[name, fd] : stored_) {
        const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
            throw std::system_error(errno, std::generic_category(), "F_DUPFD_CLOEXEC of stored " + name);
        out.emplace_back(name, copy);
    }
    return out;
}

} // namespace mcastd::eth

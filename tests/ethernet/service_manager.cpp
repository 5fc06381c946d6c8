// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/service_manager.hpp"

namespace mcastd::eth {

ServiceManager::ServiceManager(std::filesystem::path path, bool store)
    : store_(store ? std::make_unique<sim::FdStore>() : nullptr) {
    // Without a store the descriptors a datagram carries are closed, as systemd does.
    notify_ = std::make_unique<sim::NotifySocket>(std::move(path),
                                                  store_ ? store_->keeper() : sim::NotifySocket::OnDatagram{});
}

ServiceManager::~ServiceManager() { notify_.reset(); }

bool ServiceManager::wait_for(const std::string &line, std::chrono::milliseconds timeout) {
    return notify_->wait_for(line, timeout).has_value();
}

std::vector<std::string> ServiceManager::stored_names() const {
    std::vector<std::string> out;
    if (store_)
        for (const auto &[name, fd] : store_->held())
            out.push_back(name);
    return out;
}

std::vector<int> ServiceManager::listen_fds(std::map<std::string, std::string> &env) const {
    return store_ ? store_->listen_fds(env) : std::vector<int>{};
}

} // namespace mcastd::eth

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/fd_store.hpp"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string_view>
#include <unordered_set>
#include <cstring>

namespace mcastd::server {

namespace {

class ServiceManagerStore final : public FdStore {
public:
    explicit ServiceManagerStore(std::size_t capacity) : capacity_(capacity) {}

    void store(int fd, const std::string &name) override {
        if (stored_.size() >= capacity_) {
            if (!warned_)
                spdlog::warn("the service manager's fd store is full ({} connections, FDSTORE); connection {} and "
                             "later ones reconnect after a restart instead",
                             capacity_, name);
            warned_ = true;
            return;
        }
        const std::string msg = "FDSTORE=1\nFDNAME=" + name;
        if (int r = sd_pid_notify_with_fds(0, 0, msg.c_str(), &fd, 1); r < 0)
            spdlog::warn("could not hand {} to the service manager's fd store: {}", name, std::strerror(-r));
        else
            stored_.insert(name);
    }
    void adopted(const std::string &name) override { stored_.insert(name); }
    void remove(const std::string &name) override {
        if (!stored_.erase(name))
            return;
        const std::string msg = "FDSTOREREMOVE=1\nFDNAME=" + name;
        if (int r = sd_pid_notify(0, 0, msg.c_str()); r < 0)
            spdlog::warn("could not remove {} from the service manager's fd store: {}", name,
                         std::strerror(-r));
    }

private:
    std::size_t capacity_;
    std::unordered_set<std::string> stored_;
    bool warned_ = false;
};

} // namespace

std::unique_ptr<FdStore> service_manager_fd_store() {
    const char *sock = std::getenv("NOTIFY_SOCKET");
    const char *max = std::getenv("FDSTORE");
    if (!sock || !*sock || !max)
        return nullptr;
    char *end = nullptr;
    const unsigned long long n = std::strtoull(max, &end, 10);
    if (*end || n == 0)
        return nullptr;
    return std::make_unique<ServiceManagerStore>(static_cast<std::size_t>(n));
}

void discard_stored_connection(int fd, std::uint64_t session) {
    ::shutdown(fd, SHUT_RDWR);
    discard_stored(fd, connection_fd_name(session));
}

void discard_stored(int fd, const std::string &name) {
    if (auto store = service_manager_fd_store()) {
        store->adopted(name);
        store->remove(name);
    }
    ::close(fd);
}

namespace {

constexpr std::string_view kConnectionPrefix = "c-";
constexpr std::string_view kMembershipSocketPrefix = "roce-membership-";

// The decimal id after `prefix` in `name` (at most 20 digits), or 0.
std::uint64_t id_after(std::string_view prefix, const std::string &name) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.size() > prefix.size() + 20)
        return 0;
    std::uint64_t id = 0;
    for (std::size_t i = prefix.size(); i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        id = id * 10 + static_cast<std::uint64_t>(name[i] - '0');
    }
    return id;
}

} // namespace

std::string connection_fd_name(std::uint64_t session_id) {
    return std::string(kConnectionPrefix) + std::to_string(session_id);
}

std::uint64_t session_of_fd_name(const std::string &name) { return id_after(kConnectionPrefix, name); }

std::string membership_socket_fd_name(std::uint64_t socket_id) {
    return std::string(kMembershipSocketPrefix) + std::to_string(socket_id);
}

std::uint64_t membership_socket_of_fd_name(const std::string &name) {
    return id_after(kMembershipSocketPrefix, name);
}

} // namespace mcastd::server

#include "server/fd_store.hpp"

#include <systemd/sd-daemon.h>

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>

namespace mcastd::server {

namespace {

class ServiceManagerStore final : public FdStore {
public:
    void store(int fd, const std::string &name) override {
        const std::string msg = "FDSTORE=1\nFDNAME=" + name;
        if (int r = sd_pid_notify_with_fds(0, 0, msg.c_str(), &fd, 1); r < 0)
            spdlog::warn("could not hand connection {} to the service manager's fd store: {}", name, std::strerror(-r));
    }
    void remove(const std::string &name) override {
        const std::string msg = "FDSTOREREMOVE=1\nFDNAME=" + name;
        if (int r = sd_pid_notify(0, 0, msg.c_str()); r < 0)
            spdlog::warn("could not remove connection {} from the service manager's fd store: {}", name,
                         std::strerror(-r));
    }
};

} // namespace

std::unique_ptr<FdStore> service_manager_fd_store() {
    const char *sock = std::getenv("NOTIFY_SOCKET");
    if (!sock || !*sock)
        return nullptr;
    return std::make_unique<ServiceManagerStore>();
}

std::string connection_fd_name(std::uint64_t session_id) { return "c-" + std::to_string(session_id); }

std::uint64_t session_of_fd_name(const std::string &name) {
    if (name.size() < 3 || name.compare(0, 2, "c-") != 0 || name.size() > 22)
        return 0;
    std::uint64_t id = 0;
    for (std::size_t i = 2; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        id = id * 10 + static_cast<std::uint64_t>(name[i] - '0');
    }
    return id;
}

} // namespace mcastd::server

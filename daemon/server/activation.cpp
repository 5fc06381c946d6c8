// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/activation.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <system_error>

#include "server/fd_store.hpp"
#include "server/listener.hpp"

namespace mcastd::server {

namespace {

struct FreeNames {
    void operator()(char **names) const noexcept {
        for (char **n = names; n && *n; ++n)
            std::free(*n);
        std::free(names);
    }
};

[[noreturn]] void fail(int err, const std::string &what) {
    throw std::system_error(err, std::generic_category(), what);
}

std::string bound_path(int fd) {
    sockaddr_un a{};
    socklen_t len = sizeof a;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) < 0 || len <= sizeof(sa_family_t))
        return "(unnamed)";
    const std::size_t n = len - sizeof(sa_family_t);
    if (a.sun_path[0] == '\0') // abstract: shown the way ss(8) does
        return "@" + std::string(a.sun_path + 1, n - 1);
    return std::string(a.sun_path, strnlen(a.sun_path, n));
}

} // namespace

ListenSocket open_client_socket(const std::string &configured_path, mode_t mode, gid_t group) {
    char **raw = nullptr;
    const int n = sd_listen_fds_with_names(1, &raw);
    const std::unique_ptr<char *, FreeNames> names(raw);
    if (n < 0)
        fail(-n, "socket activation (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES)");
    if (n == 0)
        return ListenSocket{listen_seqpacket(configured_path, mode, group), configured_path, false, {}, {}};

    // By name, as systemd intends; a lone fd without a name is what a bare
    // `systemd-socket-activate -l PATH` passes.
    int chosen = -1;
    std::vector<StoredConnection> stored;
    std::map<std::uint64_t, int> memberships;
    for (int i = 0; i < n; ++i) {
        if (std::strcmp(raw[i], kClientFdName) == 0)
            chosen = i;
        else if (const std::uint64_t session = session_of_fd_name(raw[i]))
            stored.push_back(StoredConnection{SD_LISTEN_FDS_START + i, session});
        else if (const std::uint64_t id = membership_socket_of_fd_name(raw[i]))
            memberships[id] = SD_LISTEN_FDS_START + i;
    }
    if (chosen < 0 && n == 1 && std::strcmp(raw[0], "unknown") == 0)
        chosen = 0;
    for (int i = 0; i < n; ++i)
        if (i != chosen && !session_of_fd_name(raw[i]) && !membership_socket_of_fd_name(raw[i])) {
            spdlog::warn("closing fd {} named '{}' from the service manager: only '{}', stored connections and "
                         "membership sockets are used",
                         SD_LISTEN_FDS_START + i, raw[i], kClientFdName);
            close(SD_LISTEN_FDS_START + i);
        }
    for (const StoredConnection &c : stored)
        fcntl(c.fd, F_SETFD, FD_CLOEXEC);
    for (const auto &[id, fd] : memberships)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (chosen < 0 && (!stored.empty() || !memberships.empty())) {
        // Only the fd store's fds: the daemon was not socket-activated.
        return ListenSocket{listen_seqpacket(configured_path, mode, group), configured_path, false, std::move(stored),
                            std::move(memberships)};
    }
    if (chosen < 0)
        fail(ENOENT, "socket activation passed " + std::to_string(n) + " fd(s), none named '" + kClientFdName +
                         "' (FileDescriptorName= in rdma-mcastd.socket)");

    const int fd = SD_LISTEN_FDS_START + chosen;
    const std::string what = "fd " + std::to_string(fd) + " ('" + raw[chosen] + "') from the service manager";
    const int r = sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, nullptr, 0);
    if (r < 0)
        fail(-r, what);
    if (r == 0) {
        close(fd);
        fail(ENOTSOCK, what + " is not a listening AF_UNIX SOCK_SEQPACKET socket (ListenSequentialPacket=)");
    }
    // The service manager leaves the flags to us: the loop needs non-blocking accept(), and
    // nothing the daemon runs may inherit the listener.
    const int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        fail(errno, what + ": fcntl");
    return ListenSocket{fd, bound_path(fd), true, std::move(stored), std::move(memberships)};
}

} // namespace mcastd::server

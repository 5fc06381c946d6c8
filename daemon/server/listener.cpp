// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/listener.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace mcastd::server {

namespace {

[[noreturn]] void fail(int err, const std::string &path, const std::string &what) {
    throw std::system_error(err, std::generic_category(), "socket " + path + ": " + what);
}

sockaddr_un address(const std::string &path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof a.sun_path)
        fail(ENAMETOOLONG, path, "the path must be 1.." + std::to_string(sizeof a.sun_path - 1) + " bytes");
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    return a;
}

// Is a daemon answering on this path?
bool in_use(const sockaddr_un &a) {
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    const bool answered = connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0;
    close(fd);
    return answered;
}

} // namespace

int listen_seqpacket(const std::string &path, mode_t mode, gid_t group) {
    const sockaddr_un a = address(path);
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            fail(EEXIST, path, "exists and is not a socket");
        if (in_use(a))
            fail(EADDRINUSE, path, "another daemon is answering on it");
        if (unlink(path.c_str()) < 0)
            fail(errno, path, "removing the stale socket");
    }
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fail(errno, path, "socket()");
    if (bind(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) < 0) {
        const int err = errno;
        close(fd);
        fail(err, path, "bind()");
    }
    // bind() applies the umask; set the mode the config asked for explicitly.
    if (chown(path.c_str(), static_cast<uid_t>(-1), group) < 0 || chmod(path.c_str(), mode) < 0 ||
        listen(fd, SOMAXCONN) < 0) {
        const int err = errno;
        close(fd);
        unlink(path.c_str());
        fail(err, path, "chown()/chmod()/listen()");
    }
    return fd;
}

} // namespace mcastd::server

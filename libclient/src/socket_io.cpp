#include "socket_io.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rdmamcast::detail {

Fd &Fd::operator=(Fd &&o) noexcept {
    if (this != &o) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = o.release();
    }
    return *this;
}

Fd::~Fd() {
    if (fd_ >= 0)
        ::close(fd_);
}

int Fd::release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
}

int connect_unix(const std::string &path, Fd &out) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    // sun_path need not be NUL-terminated, but we keep room for one so that the kernel and
    // every tool that prints the address agree on it.
    if (path.empty() || path.size() >= sizeof(addr.sun_path))
        return path.empty() ? -EINVAL : -ENAMETOOLONG;
    std::memcpy(addr.sun_path, path.data(), path.size());
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
    if (path[0] == '@')
        addr.sun_path[0] = '\0'; // abstract namespace: the length delimits the name
    else
        len = static_cast<socklen_t>(len + 1);

    Fd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!fd)
        return -errno;
    // connect() on a Unix socket completes at once or fails; EINTR cannot leave it half-done
    // in a way a retry would not report (EISCONN), so a plain retry is right.
    int rc;
    do {
        rc = ::connect(fd.get(), reinterpret_cast<const sockaddr *>(&addr), len);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return -errno;
    out = std::move(fd);
    return 0;
}

int send_message(int fd, std::string_view message) {
    for (;;) {
        ssize_t n = ::send(fd, message.data(), message.size(), MSG_NOSIGNAL);
        if (n >= 0)
            return static_cast<std::size_t>(n) == message.size() ? 0 : -EMSGSIZE;
        if (errno != EINTR)
            return -errno;
    }
}

int recv_message(int fd, bool dontwait, std::string &out) {
    for (;;) {
        // MSG_TRUNC on a peek reports the whole message's length, so we can size the buffer
        // exactly instead of guessing an upper bound. Without MSG_DONTWAIT the peek is also
        // the wait: two system calls per message, on the path every request takes.
        ssize_t len = ::recv(fd, nullptr, 0, MSG_PEEK | MSG_TRUNC | (dontwait ? MSG_DONTWAIT : 0));
        if (len < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        // The daemon never sends an empty message (every message is a JSON object), so a
        // zero length is the end of the stream.
        if (len == 0)
            return -ECONNRESET;
        if (static_cast<std::size_t>(len) > kMaxIncomingBytes) {
            char discard;
            (void)::recv(fd, &discard, 1, MSG_DONTWAIT | MSG_TRUNC);
            return -EMSGSIZE;
        }
        out.resize(static_cast<std::size_t>(len));
        ssize_t n = ::recv(fd, out.data(), out.size(), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        out.resize(static_cast<std::size_t>(n));
        return 0;
    }
}

} // namespace rdmamcast::detail

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "socket_io.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
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

int send_message(int fd, std::string_view message, int pass_fd) {
    iovec iov{const_cast<char *>(message.data()), message.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (pass_fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
    }
    for (;;) {
        ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n >= 0)
            return static_cast<std::size_t>(n) == message.size() ? 0 : -EMSGSIZE;
        if (errno != EINTR)
            return -errno;
    }
}

namespace {

// Where a message lands before it is copied out: big enough for any message we accept, so one
// recv() takes it whole (peeking at the length first would cost a second system call on the
// path every request takes). One per thread, reserved but not committed: only the pages a
// message touches become resident, and those past kKeptBytes are handed back after a big one.
class ReceiveArea {
public:
    static constexpr std::size_t kKeptBytes = 256u << 10;

    ReceiveArea() {
        void *p = ::mmap(nullptr, kMaxIncomingBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        base_ = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
    }
    ~ReceiveArea() {
        if (base_)
            ::munmap(base_, kMaxIncomingBytes);
    }
    ReceiveArea(const ReceiveArea &) = delete;
    ReceiveArea &operator=(const ReceiveArea &) = delete;

    char *data() const { return base_; }
    // After a message of `bytes` has been copied out.
    void release(std::size_t bytes) const {
        if (bytes > kKeptBytes)
            (void)::madvise(base_ + kKeptBytes, std::min(bytes, kMaxIncomingBytes) - kKeptBytes, MADV_DONTNEED);
    }

private:
    char *base_ = nullptr;
};

} // namespace

int recv_message(int fd, bool dontwait, std::string &out) {
    thread_local const ReceiveArea area;
    if (!area.data())
        return -ENOMEM;
    for (;;) {
        // MSG_TRUNC: the return value is the whole message's length even when it did not fit.
        const ssize_t len = ::recv(fd, area.data(), kMaxIncomingBytes, MSG_TRUNC | (dontwait ? MSG_DONTWAIT : 0));
        if (len < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        // The daemon never sends an empty message (every message is a JSON object), so a
        // zero length is the end of the stream.
        if (len == 0)
            return -ECONNRESET;
        const auto n = static_cast<std::size_t>(len);
        if (n <= kMaxIncomingBytes)
            out.assign(area.data(), n);
        area.release(n);
        return n <= kMaxIncomingBytes ? 0 : -EMSGSIZE; // too long: the kernel discarded the rest
    }
}

} // namespace rdmamcast::detail

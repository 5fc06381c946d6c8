// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/fd_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace mcastd::eth {

namespace {

// A message of one byte with room for one descriptor; the buffers live in the caller.
struct OneFdMessage {
    char byte = 's';
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    OneFdMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
    }
    OneFdMessage(const OneFdMessage &) = delete;
    OneFdMessage &operator=(const OneFdMessage &) = delete;
};

} // namespace

int send_fd(int conn, int fd) {
    OneFdMessage m;
    cmsghdr *c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t n;
    do
        n = ::sendmsg(conn, &m.msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : -(n < 0 ? errno : EIO);
}

int receive_fd(int conn) {
    OneFdMessage m;
    ssize_t n;
    do
        n = ::recvmsg(conn, &m.msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if (n == 0)
        return -ECONNRESET;
    const cmsghdr *c = CMSG_FIRSTHDR(&m.msg);
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
        return -EBADMSG;
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

} // namespace mcastd::eth

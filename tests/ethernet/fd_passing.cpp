// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/fd_passing.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "scm_rights.hpp"

namespace mcastd::eth {

// A message of one byte with room for one descriptor.
using OneFdMessage = test::ScmRightsMessage<1>;

int send_fd(int conn, int fd) {
    OneFdMessage m;
    m.put({&fd, 1});
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
    const std::vector<int> fds = m.fds();
    if (fds.size() != 1) {
        for (int fd : fds)
            ::close(fd);
        return -EBADMSG;
    }
    return fds.front();
}

} // namespace mcastd::eth

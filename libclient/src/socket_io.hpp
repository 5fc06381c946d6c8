// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SOCK_SEQPACKET transport: one message per send/recv, no framing of our own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rdmamcast::detail {

// A file descriptor that closes itself.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd &&o) noexcept : fd_(o.release()) {}
    Fd &operator=(Fd &&o) noexcept;
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd();

    int get() const { return fd_; }
    int release();
    explicit operator bool() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// Replies can be longer than the 64 KiB the daemon accepts from clients (a `list` of a busy
// host), so the limit on what we read is generous; it only guards against absurd sizes.
inline constexpr std::size_t kMaxIncomingBytes = 16u << 20;

// Connects a SOCK_SEQPACKET socket to `path` ("@name" for the abstract namespace) into `out`.
// Returns 0 or -errno.
int connect_unix(const std::string &path, Fd &out);

// Sends one message without raising SIGPIPE. With `pass_fd` (>= 0), that descriptor travels
// on the same message as SCM_RIGHTS ancillary data, so that the receiver gets both at once or
// neither (PROTOCOL.md, "RoCE ports"); the caller still owns its copy. 0 or -errno (-EPIPE when
// the daemon is gone).
int send_message(int fd, std::string_view message, int pass_fd = -1);

// Receives one whole message, blocking until one arrives unless `dontwait`.
// Returns 0 with `out` filled, -EAGAIN (dontwait and nothing there), -ECONNRESET when the peer
// closed the connection, -EMSGSIZE when a message over kMaxIncomingBytes was discarded, or
// another -errno. EINTR is retried.
int recv_message(int fd, bool dontwait, std::string &out);

} // namespace rdmamcast::detail

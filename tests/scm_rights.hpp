// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Descriptors beside a message on a Unix socket (SCM_RIGHTS), for the tests' senders and
// receivers: one msghdr with its data and control buffers, filled for sendmsg or read after
// recvmsg, so that no test spells out the CMSG arithmetic again.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace mcastd::test {

// A message with room for up to `Max` descriptors. Its data is one byte of its own, the text
// given (to send), or the buffer given (to receive into); either must outlive it.
template <std::size_t Max> struct ScmRightsMessage {
    char byte = 0;
    alignas(cmsghdr) char control[CMSG_SPACE(Max * sizeof(int))] = {};
    iovec iov{&byte, 1};
    msghdr msg{};

    ScmRightsMessage() { init(); }
    explicit ScmRightsMessage(std::string_view text) : iov{const_cast<char *>(text.data()), text.size()} {
        init();
    }
    ScmRightsMessage(char *buffer, std::size_t size) : iov{buffer, size} { init(); }
    ScmRightsMessage(const ScmRightsMessage &) = delete;
    ScmRightsMessage &operator=(const ScmRightsMessage &) = delete;

    // Puts `fds` (at most Max) on the message, in one SCM_RIGHTS header, for sendmsg.
    void put(std::span<const int> fds) {
        if (fds.size() > Max)
            throw std::length_error("ScmRightsMessage: more descriptors than its room");
        msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
        cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
        std::memcpy(CMSG_DATA(cm), fds.data(), fds.size() * sizeof(int));
    }

    // The descriptors a recvmsg brought, of every SCM_RIGHTS header, in order; the caller owns
    // them.
    std::vector<int> fds() {
        std::vector<int> out;
        for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            for (std::size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
                int fd;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                out.push_back(fd);
            }
        }
        return out;
    }

private:
    void init() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
    }
};

} // namespace mcastd::test

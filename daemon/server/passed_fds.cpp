// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/passed_fds.hpp"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace mcastd::server {

PassedFds PassedFds::from(const msghdr &mh) {
    PassedFds out;
    out.truncated_ = (mh.msg_flags & MSG_CTRUNC) != 0;
    for (const cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(const_cast<msghdr *>(&mh), const_cast<cmsghdr *>(c))) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < n; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            out.fds_.push_back(fd);
        }
    }
    return out;
}

PassedFds::PassedFds(PassedFds &&o) noexcept : fds_(std::move(o.fds_)), truncated_(o.truncated_) { o.fds_.clear(); }

PassedFds::~PassedFds() {
    for (int fd : fds_)
        ::close(fd);
}

std::optional<proto::Failure> PassedFds::hand_to(proto::Request &request) {
    auto *join = std::get_if<proto::Join>(&request);
    if (fds_.size() > 1 || truncated_) {
        const std::string carried = truncated_ ? "more than " + std::to_string(kRoom) : std::to_string(fds_.size());
        // A join's is about the group the socket would hold (PROTOCOL.md, "RoCE ports").
        std::string field;
        if (join)
            field = join->request.roce && join->request.roce->group ? "/ip" : "/mgid";
        return proto::Failure::of(Errc::invalid_argument,
                                  "a request carries at most one descriptor (the socket of a join on a RoCE port); "
                                  "this one carried " +
                                      carried,
                                  std::move(field));
    }
    if (!join || fds_.empty())
        return std::nullopt; // the destructor closes what nothing uses
    give_socket(join->request, fds_.front());
    fds_.clear();
    return std::nullopt;
}

} // namespace mcastd::server

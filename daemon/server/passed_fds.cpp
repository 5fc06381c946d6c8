// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/passed_fds.hpp"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace mcastd::server {

PassedFds PassedFds::from(const msghdr &mh, runtime::FdCloser &closer, uid_t owner) {
    PassedFds out;
    out.closer_ = &closer;
    out.owner_ = owner;
    out.truncated_ = (mh.msg_flags & MSG_CTRUNC) != 0;
    for (const cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(const_cast<msghdr *>(&mh), const_cast<cmsghdr *>(c))) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < n; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            (runtime::defuse_passed(fd) ? out.sockets_ : out.others_).push_back(fd);
        }
    }
    return out;
}

PassedFds::PassedFds(PassedFds &&o) noexcept
    : sockets_(std::exchange(o.sockets_, {})), others_(std::exchange(o.others_, {})), closer_(o.closer_),
      owner_(o.owner_), truncated_(o.truncated_) {}

PassedFds::~PassedFds() {
    for (int fd : sockets_)
        ::close(fd);
    for (int fd : others_)
        closer_->close(fd, owner_);
}

std::optional<proto::Failure> PassedFds::hand_to(proto::Request &request) {
    auto *join = std::get_if<proto::Join>(&request);
    // A join's refusal is about the group the socket would hold (PROTOCOL.md, "RoCE ports").
    auto refuse = [join](std::string why) {
        std::string field;
        if (join)
            field = join->request.roce && join->request.roce->group ? "/ip" : "/mgid";
        return proto::Failure::of(Errc::invalid_argument, std::move(why), std::move(field));
    };
    if (count() > 1 || truncated_)
        return refuse("a request carries at most one descriptor (the socket of a join on a RoCE port); this one "
                      "carried " +
                      (truncated_ ? "more than " + std::to_string(kRoom) : std::to_string(count())));
    if (!join || count() == 0)
        return std::nullopt; // the destructor closes what nothing uses
    if (sockets_.empty())
        return refuse("the descriptor a join carries is the UDP socket it holds its group on; this one is not a "
                      "socket");
    give_socket(join->request, sockets_.front());
    sockets_.clear();
    return std::nullopt;
}

} // namespace mcastd::server

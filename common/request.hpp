// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a client asks of the engine: pure data, shared with the protocol codec and the client
// library, which do not link the engine.
#pragma once

#include <sys/types.h>

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/record.hpp"
#include "common/roce_address.hpp"

namespace mcastd {

using ClientId = std::uint64_t;
using MembershipId = std::uint64_t;

// An id nobody has: (uid_t)-1 is what setresuid(2) takes for "unchanged", never a process's
// uid, and no access rule or allow list can name it (config ids end at 4294967294). A client
// whose transport could not attest an id has this one, so "unknown" never reads as root.
inline constexpr uid_t kUnknownUid = static_cast<uid_t>(-1);
inline constexpr gid_t kUnknownGid = static_cast<gid_t>(-1);

// Who a client is, as its transport learned it from the kernel or the bus (SO_PEERCRED, D-Bus
// credentials), never as the client says. The ids are the effective ones.
struct ClientInfo {
    pid_t pid = 0;
    uid_t uid = kUnknownUid;
    gid_t unix_gid = kUnknownGid; // the Unix group id ("gid" alone would read as an InfiniBand GID)
    std::string comm;
    // The uid whose shares its use takes (the daemon's accounts): the owner of the subordinate
    // uid range `uid` is in, or kUnknownUid when that is `uid` itself.
    uid_t account = kUnknownUid;
    uid_t account_uid() const { return account == kUnknownUid ? uid : account; }
    // `u` is its uid or its account's (root's evict of a uid takes both).
    bool counts_as(uid_t u) const { return uid == u || account_uid() == u; }
    bool operator==(const ClientInfo &) const = default;
};

struct Selected {
    Selector selector = Selector::exactly;
    std::uint8_t value = 0;
    bool operator==(const Selected &) const = default;
};

// Fields a member asserts about the group. Unset fields are not asserted: a join of an existing
// group then takes the group's value, and a create takes the configured default.
struct GroupParams {
    std::optional<std::uint32_t> qkey;
    std::optional<std::uint16_t> pkey;
    std::optional<std::uint8_t> sl;
    std::optional<std::uint8_t> tclass;
    std::optional<std::uint32_t> flow_label;
    std::optional<std::uint8_t> hop_limit;
    std::optional<Selected> mtu;
    std::optional<Selected> rate;
    bool operator==(const GroupParams &) const = default;
};

// What a join on an Ethernet (RoCE) port carries besides the fields every join has, for the
// port's membership backend (core/membership_backend.hpp): the engine and the sessions pass it
// on untouched. Unset fields take the backend's defaults. Owns `fd`, which it closes: moved,
// never copied (JoinRequest shares one).
struct RoceJoin {
    std::optional<IpAddress> group;  // the IP group, when the join names no MGID
    std::optional<GidType> gid_type; // the source GID's type (roce_v1 or roce_v2)
    int fd = -1;                     // a socket the client made in its network namespace, or -1
    // The interface of the socket's namespace to hold the membership on; empty: the one named
    // as the source GID's netdev (a container's interface may have another name).
    std::string ifname;

    RoceJoin() = default;
    RoceJoin(std::optional<IpAddress> g, std::optional<GidType> type, int owned_fd, std::string interface = {})
        : group(std::move(g)), gid_type(type), fd(owned_fd), ifname(std::move(interface)) {}
    RoceJoin(RoceJoin &&o) noexcept
        : group(std::move(o.group)), gid_type(o.gid_type), fd(std::exchange(o.fd, -1)), ifname(std::move(o.ifname)) {}
    RoceJoin &operator=(RoceJoin &&o) noexcept {
        if (this != &o) {
            reset();
            group = std::move(o.group);
            gid_type = o.gid_type;
            fd = std::exchange(o.fd, -1);
            ifname = std::move(o.ifname);
        }
        return *this;
    }
    RoceJoin(const RoceJoin &) = delete;
    RoceJoin &operator=(const RoceJoin &) = delete;
    ~RoceJoin() { reset(); }

private:
    void reset() {
        if (fd >= 0)
            ::close(std::exchange(fd, -1));
    }
};

struct JoinRequest;
// Gives `req` the socket `owned_fd` (closed with the request's last copy), keeping the IP group,
// GID type and interface it names: what a transport does with the socket a join carried.
void give_socket(JoinRequest &req, int owned_fd);

struct JoinRequest {
    std::string device;
    std::uint8_t port = 0;
    Gid mgid{}; // all zero: create a new group with an SA-assigned MGID
    std::uint8_t join_state = join::full;
    GroupParams params;
    std::optional<std::uint8_t> scope; // MGID 0 only: scope of the MGID the SA assigns
    // A named group (common/named_group.hpp): the daemon maps it to the MGID under its configured
    // prefix and P_Key. Non-empty only with an all-zero mgid until the daemon filled that in.
    std::string name{};
    // Ethernet ports only: what the port's membership backend needs of this join beyond the
    // above. Shared by the request's copies (the session's, the engine's member); the fd
    // closes with the last of them.
    std::shared_ptr<const RoceJoin> roce{};
    bool operator==(const JoinRequest &) const = default;
};

inline void give_socket(JoinRequest &req, int owned_fd) {
    const RoceJoin *had = req.roce.get();
    req.roce = std::make_shared<const RoceJoin>(had ? had->group : std::nullopt, had ? had->gid_type : std::nullopt,
                                                owned_fd, had ? had->ifname : std::string());
}

} // namespace mcastd

// Who a client is and whether it may use the daemon at all. The transports learn the
// credentials (SO_PEERCRED and SO_PEERGROUPS on the socket, the bus's credentials on D-Bus);
// the client session checks them.
#pragma once

#include <sys/types.h>

#include <vector>

#include "common/request.hpp"

namespace mcastd::frontend {

struct Credentials {
    ClientInfo who;                          // pid, uid, Unix gid, process name
    std::vector<gid_t> supplementary_groups; // Unix group ids
};

// The config's `access`: empty lists let in anyone who reached the front door (the socket's
// file mode decides); otherwise a client must match a uid or one of its groups. root always
// gets in.
struct AccessPolicy {
    std::vector<uid_t> allow_uids;
    std::vector<gid_t> allow_gids;
    bool allows(const Credentials &c) const;
    bool operator==(const AccessPolicy &) const = default;
};

} // namespace mcastd::frontend

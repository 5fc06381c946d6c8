#include "frontend/access.hpp"

#include <algorithm>

namespace mcastd::frontend {

bool AccessPolicy::allows(const Credentials &c) const {
    if (c.who.uid == 0 || (allow_uids.empty() && allow_gids.empty()))
        return true;
    if (std::find(allow_uids.begin(), allow_uids.end(), c.who.uid) != allow_uids.end())
        return true;
    auto in = [&](gid_t g) { return std::find(allow_gids.begin(), allow_gids.end(), g) != allow_gids.end(); };
    return in(c.who.unix_gid) || std::any_of(c.supplementary_groups.begin(), c.supplementary_groups.end(), in);
}

} // namespace mcastd::frontend

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The passwd name of a uid, for listings, from a cache. getpwuid_r asks NSS (sssd, LDAP),
// which may take as long as its server does, on the event loop; `status` names every uid it
// lists, and any client may ask for it as often as it likes. A name is asked for again after
// a minute (an account renamed shows within one) and never more than once a minute. The NSS
// lookups themselves (both ways) live here too.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/timers.hpp"

namespace mcastd::frontend {

// The passwd name of `uid` (getpwuid_r), "" when it has none. Uncached.
std::string passwd_name(uid_t uid);
// The uid of the login name `name` (getpwnam_r), or nullopt. Uncached.
std::optional<uid_t> passwd_uid(const std::string &name);

class UserNames {
public:
    using Lookup = std::function<std::string(uid_t)>;
    static constexpr Duration kFresh = std::chrono::minutes(1);
    // Bounded: uids come and go with clients; past this many the cache starts afresh.
    static constexpr std::size_t kMaxEntries = 4096;

    explicit UserNames(Timers &timers, Lookup lookup = passwd_name) : timers_(timers), lookup_(std::move(lookup)) {}

    const std::string &name(uid_t uid);

private:
    struct Entry {
        std::string name;
        TimePoint asked;
    };
    Timers &timers_;
    Lookup lookup_;
    std::unordered_map<uid_t, Entry> cache_;
};

} // namespace mcastd::frontend

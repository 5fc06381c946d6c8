// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/user_names.hpp"

#include <pwd.h>

namespace mcastd::frontend {

std::string passwd_name(uid_t uid) {
    passwd pw{}, *found = nullptr;
    char buf[1024];
    return ::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found ? found->pw_name : "";
}

std::optional<uid_t> passwd_uid(const std::string &name) {
    passwd pw{}, *found = nullptr;
    char buf[1024];
    if (::getpwnam_r(name.c_str(), &pw, buf, sizeof buf, &found) == 0 && found)
        return found->pw_uid;
    return std::nullopt;
}

const std::string &UserNames::name(uid_t uid) {
    const TimePoint now = timers_.now();
    if (auto it = cache_.find(uid); it != cache_.end() && now - it->second.asked < kFresh)
        return it->second.name;
    if (cache_.size() >= kMaxEntries && !cache_.count(uid))
        cache_.clear();
    Entry &e = cache_[uid];
    e.name = lookup_(uid);
    e.asked = now;
    return e.name;
}

} // namespace mcastd::frontend

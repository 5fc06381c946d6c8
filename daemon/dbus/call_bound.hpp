// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What one D-Bus call may make the daemon hold and say. A bus message may be 32 MiB or more (the
// bus's max_message_size), far past the socket's bound on a request (config
// limits.max_message_bytes, 64 KiB): a Join of one huge option key built a DOM that size on the
// event loop, and its error, quoting the key JSON-pointer-escaped ('/' -> '~1'), twice that: a
// reply past the bus's limit, for which the bus drops the daemon's connection and with it every
// D-Bus caller's memberships. So a call's arguments are counted against the socket's limit as they
// are read, before anything is copied or decoded, and a key is quoted only cut short.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace mcastd::dbus {

// What an option costs besides its key and string value: about what its entry takes on the
// wire and in the socket's JSON ("key":value,), so that many empty options are bounded too.
inline constexpr std::size_t kOptionBytes = 16;
// A quoted key keeps this many bytes; no key of Join or Evict is longer than 13.
inline constexpr std::size_t kQuotedKeyBytes = 32;

class ArgumentBound {
public:
    explicit ArgumentBound(std::size_t limit) : limit_(limit) {}
    // Counts `bytes` more of the call (a string's length; an option's kOptionBytes); false once
    // the call is over the limit, and from then on.
    bool take(std::size_t bytes) {
        used_ = bytes > limit_ - std::min(used_, limit_) ? limit_ + 1 : used_ + bytes;
        return used_ <= limit_;
    }
    bool over() const { return used_ > limit_; }
    // Errc::too_large, the socket's code for a request over the same limit, naming it.
    Error too_large() const;

private:
    std::size_t limit_;
    std::size_t used_ = 0;
};

// "/key" for a message: the key as a JSON pointer token, as the socket protocol's decoder names
// it, its bytes that are not printable ASCII as \xNN and cut after kQuotedKeyBytes ("...").
std::string quoted_key(std::string_view key);

} // namespace mcastd::dbus

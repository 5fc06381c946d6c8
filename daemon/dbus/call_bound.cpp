// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/call_bound.hpp"

#include "common/json_check.hpp"
#include "common/utf8.hpp"

namespace mcastd::dbus {

Error ArgumentBound::too_large() const {
    return Error{Errc::too_large,
                 "the call carries more than the " + std::to_string(limit_) +
                     " bytes of arguments this daemon accepts (config limits.max_message_bytes: " +
                     std::to_string(limit_) + "; each option counts " + std::to_string(kOptionBytes) +
                     " bytes besides its key and string value)",
                 std::nullopt};
}

std::string quoted_key(std::string_view key) {
    return json_check::pointer_to("", escape_bytes(key, kQuotedKeyBytes));
}

} // namespace mcastd::dbus

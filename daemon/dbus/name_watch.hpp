// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// When each unique bus name appeared, from the bus's NameOwnerChanged signals, which the daemon
// watches from its start (dbus_server.hpp). A connection's unique name appears when the
// connection says Hello, so the process that made the connection started before that moment:
// a process with the recorded pid that started later is another one that got the pid
// (caller_identity.hpp). Names that appeared before the watch began are unknown. Pure: the
// transport hands over the signals and the time.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mcastd::dbus {

class NameWatch {
public:
    // A NameOwnerChanged(name, old_owner, new_owner) signal, received at `now` (boot_clock()):
    // a unique name with a new owner appeared, one with none left the bus. Well-known names
    // are not recorded.
    void owner_changed(std::string_view name, std::string_view old_owner, std::string_view new_owner,
                       std::chrono::nanoseconds now);
    // When `unique_name` appeared, as seen by the daemon; nullopt when it appeared before the
    // watch began (or is not on the bus).
    std::optional<std::chrono::nanoseconds> appeared(std::string_view unique_name) const;
    // Names on the bus now whose appearance is known.
    std::size_t size() const { return appeared_.size(); }

private:
    std::unordered_map<std::string, std::chrono::nanoseconds> appeared_;
};

} // namespace mcastd::dbus

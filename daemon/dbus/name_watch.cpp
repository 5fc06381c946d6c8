// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/name_watch.hpp"

namespace mcastd::dbus {

void NameWatch::owner_changed(std::string_view name, std::string_view, std::string_view new_owner,
                              std::chrono::nanoseconds now) {
    if (name.empty() || name[0] != ':')
        return;
    if (new_owner.empty())
        appeared_.erase(std::string(name));
    else
        appeared_.try_emplace(std::string(name), now); // a unique name appears once
}

std::optional<std::chrono::nanoseconds> NameWatch::appeared(std::string_view unique_name) const {
    const auto it = appeared_.find(std::string(unique_name));
    if (it == appeared_.end())
        return std::nullopt;
    return it->second;
}

} // namespace mcastd::dbus

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/name_registry.hpp"

#include <fmt/format.h>

namespace mcastd::frontend {

std::variant<JoinRequest, proto::Failure> NameRegistry::resolve(const JoinRequest &req) const {
    if (!names_.enabled)
        return proto::Failure::of(Errc::invalid_argument,
                                  "this daemon does not map names to groups (config groups.names.enabled)", "/name");
    auto hex4 = [](unsigned v) { return fmt::format("{:#06x}", v); };
    if (req.params.pkey && *req.params.pkey != names_.pkey)
        return proto::Failure::of(Errc::invalid_argument,
                                  "named groups have P_Key " + hex4(names_.pkey) + " (config groups.names.pkey), not " +
                                      hex4(*req.params.pkey),
                                  "/pkey");
    JoinRequest out = req;
    out.mgid = named_mgid(names_.prefix, req.name);
    out.params.pkey = names_.pkey;
    // A collision of the truncated hash is astronomically unlikely; where it happens under this
    // daemon's eyes, it is refused rather than merging two jobs' traffic silently.
    const auto it = held_.find(out.mgid);
    const auto other = it == held_.end() ? nullptr : [&]() -> const std::string * {
        for (const auto &[name, count] : it->second)
            if (name != req.name)
                return &name;
        return nullptr;
    }();
    if (other) {
        const std::string &hit = *other;
        return proto::Failure::of(Errc::conflict,
                                  "the group names \"" + req.name + "\" and \"" + hit + "\" both map to " +
                                      format_gid(out.mgid) + ", which this host holds for \"" + hit +
                                      "\" (a hash collision: rename one of them)",
                                  "/name");
    }
    return out;
}

void NameRegistry::hold(const std::string &name, const Gid &mgid) { ++held_[mgid][name]; }

void NameRegistry::release(const std::string &name, const Gid &mgid) {
    const auto it = held_.find(mgid);
    if (it == held_.end())
        return;
    if (auto n = it->second.find(name); n != it->second.end() && --n->second == 0)
        it->second.erase(n);
    if (it->second.empty())
        held_.erase(it);
}

} // namespace mcastd::frontend

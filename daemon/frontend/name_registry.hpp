// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// NameRegistry: how a join's name maps to its MGID (config groups.names, PROTOCOL.md "Named
// groups"), and which names this daemon holds or is joining, by MGID. Read at start and never
// reloaded: a name keeps meaning the group it means while the daemon holds it. Two names that
// map to one MGID (a collision of the truncated hash) are refused where they meet, rather than
// merging two jobs' traffic silently.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <variant>

#include "common/named_group.hpp"
#include "common/request.hpp"
#include "proto/protocol.hpp"

namespace mcastd::frontend {

class NameRegistry {
public:
    explicit NameRegistry(NamedGroups names = {}) : names_(std::move(names)) {}

    const NamedGroups &config() const { return names_; }
    void configure(const NamedGroups &names) { names_ = names; }

    // A named join as the join of its MGID with the configured P_Key asserted, or why not:
    // names disabled, another P_Key asked for, or another name that this daemon holds or is
    // joining maps to the same MGID (`conflict`, naming both).
    std::variant<JoinRequest, proto::Failure> resolve(const JoinRequest &req) const;
    // `mgid` is one a name may map to: joined by MGID instead, it could squat a name's group.
    bool reserved(const Gid &mgid) const { return names_.enabled && names_.prefix.contains(mgid); }

    // A membership joined by `name` (held or pending) in `mgid` begins or ends.
    void hold(const std::string &name, const Gid &mgid);
    void release(const std::string &name, const Gid &mgid);

private:
    NamedGroups names_;
    // MGID -> the names joined to it and how many memberships (held and pending) each has. More
    // than one name only where a restart took back what a collision once let through.
    GidMap<std::map<std::string, std::size_t>> held_;
};

} // namespace mcastd::frontend

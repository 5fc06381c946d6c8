// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The access policy's journal entries: who was refused what and by which rule or quota, which
// memberships the rules in force would refuse, and what an administrator evicted. Each carries
// CLIENT_UID= (and the rest of the client and group fields) for `journalctl CLIENT_UID=1001`,
// and POLICY_RULE= or POLICY_QUOTA= with POLICY_LIMIT=.
#pragma once

#include <string>

#include "common/error.hpp"
#include "common/request.hpp"
#include "logging/fields.hpp"

namespace mcastd::logging {

// A join the policy refused (denied by a rule, or a quota reached): a warning.
void log_refused(const ClientInfo &who, const JoinRequest &req, const Error &why);

// Membership `id` of `who` in `mgid` on `port`: the rules in force would refuse it now (`why`,
// a warning), or would admit it again (`why` empty, a notice).
void log_flagged(const ClientInfo &who, std::uint64_t id, const PortName &port, const Gid &mgid,
                 const std::string &rule, const std::string &why);

// An administrator (`by`) evicted `count` memberships of `whose`; `what` says which.
void log_evicted(const ClientInfo &by, const ClientInfo &whose, std::size_t count, const std::string &what);

// A client refused or closed before it was served (`why`: the allow lists, client slots, no hello).
void log_refused_client(const ClientInfo &who, const std::string &why);

// An administrator (`by`) disconnected session `session` of `whose` (evict --disconnect).
void log_disconnected(const ClientInfo &by, const ClientInfo &whose, std::uint64_t session);

} // namespace mcastd::logging

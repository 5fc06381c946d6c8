// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The join rules: pure functions that decide whether a join is valid, whether it fits the
// group, what the next SA request for a group is, and how it is built. No I/O, no clock, no
// engine state: the group state machine (group_machine.hpp) asks them and acts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/request.hpp"
#include "core/engine_config.hpp"
#include "core/sa_knowledge.hpp"
#include "core/sa_service.hpp"

namespace mcastd {

// A request the engine can never serve, whatever the SA says: a malformed field, or an MGID
// the kernel shares (IPoIB, rdma_cm signatures) unless the config allows it.
std::optional<Error> validate_request(const JoinRequest &req, const EngineConfig &cfg);
// The part of validate_request that holds on every fabric: the JoinState and the asserted
// fields. On a port with a membership backend the backend judges the group (group_of).
std::optional<Error> validate_fields(const JoinRequest &req);

// The kernel's own MGIDs, which it shares per port: IPoIB (x01b at bytes 2-3: 401b, 601b) and
// rdma_cm (4001, 6001). A Delete from the daemon would cut the kernel's members off.
enum class KernelMgid : std::uint8_t { none, ipoib, rdma_cm };
KernelMgid kernel_mgid(const Gid &mgid);
const char *kernel_mgid_name(KernelMgid kind); // "IPoIB", "rdma_cm"

// Why an MGID the SA assigned to a create (MGID 0) cannot be the daemon's group, or nullopt:
// it is not a multicast GID, it has a kernel signature (whatever the config allows clients),
// or another agent on the port holds bits in a group of that MGID (`another_agents`; a group of
// the daemon's own is merged with it instead: OpenSM hands MGIDs out again after an SM restart,
// and the SA holds one membership for both). A reason that `deletes` says
// the Set's bits are the daemon's alone and must be deleted again (nobody else can hold a
// group that is not multicast); otherwise they may be another agent's and are left alone.
struct AssignedMgidRefusal {
    std::string why; // "has the IPoIB signature: refused without a Delete, since ..."
    bool deletes = false;
};
std::optional<AssignedMgidRefusal> refuse_assigned_mgid(const Gid &mgid, bool another_agents);

// Compares the fields a member asserts with an existing group the way OpenSM and the kernel's
// cmp_rec do. Returns a sentence naming the group's value on the first mismatch.
std::optional<std::string> mismatch(const GroupParams &params, const McRecord &group);

// What to do for the join at the head of a group's queue.
struct JoinStep {
    enum class Kind : std::uint8_t {
        conflict,       // the member's fields contradict the fresh record (`why`)
        answer,         // the bits are there and the record is fresh: answer locally
        refresh,        // the bits are there but the record may be old: Get it first
        port_down,      // the port is not usable: the join cannot go on
        probe,          // the port's membership was never probed: probe it first
        leak_hazard,    // full beside another agent's sendonly-full: refuse (MLID leak)
        set,            // Set `bits` (normalized)
    };
    Kind kind = Kind::set;
    std::uint8_t bits = 0;
    std::string why; // conflict only
};
JoinStep next_join_step(const SaKnowledge &sa, std::uint8_t member_bits, const GroupParams &params,
                        bool port_active, std::uint64_t epoch);

// ---- the SA requests of one group on one port ----

// The port's membership of the group, for Gets and Deletes: MGID, PortGID, JoinState.
McRecord member_record(const Gid &mgid, const Gid &port_gid, std::uint8_t bits);

// A join's Set. When `create` is given the Set may create the group: the defaults fill what
// the member did not assert, and an SA-assigned MGID (`scope` set) carries the scope.
struct CreateFields {
    const EngineConfig::CreateDefaults &defaults;
    std::optional<std::uint8_t> scope; // SA-assigned MGID: the scope it is created in
};
SaRequest join_set(PortIndex port, const Gid &mgid, const Gid &port_gid, std::uint8_t bits, const GroupParams &params,
                   const std::optional<CreateFields> &create);

// Re-sets bits from a cached record with the create mask and the record's exact values,
// because the group may be gone at the SA.
SaRequest repair_set(PortIndex port, const McRecord &cached, const Gid &port_gid, std::uint8_t bits);

// The exact-match probe can test one JoinState at a time (untrusted queries hide the stored
// value), so the likely values come first. A re-sync starts from what the daemon believes.
std::vector<std::uint8_t> probe_candidates(const SaKnowledge &sa, bool resync);

} // namespace mcastd

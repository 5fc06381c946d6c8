// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SaKnowledge: what the daemon knows of the SA's state for one group on one port, and how each
// answer (or silence) of the SA changes it. A value type: no I/O, no clock, no members.
//
// Three bit sets describe the port's JoinState at the SA:
//   held      bits the daemon set and believes the SA holds;
//   foreign   bits another agent on this port (the kernel, a raw umad program) held before the
//             daemon's first Set: they serve members, but the daemon never deletes them;
//   uncertain bits whose fate is unknown (a Set or Delete went unanswered, or the SA may have
//             lost the port's state): a probe learns the truth before anything is deleted.
// Beside them, the group's record and how far it can be trusted: `record_epoch` is the port's
// epoch when the record was last confirmed (every invalidation of the port bumps the epoch),
// and `record_doubt` says that a Set went unanswered and may have (re)created the group under
// an MLID nobody told us.
#pragma once

#include <cstdint>

#include "common/record.hpp"
#include "core/join_state.hpp"

namespace mcastd {

struct SaKnowledge {
    std::uint8_t held = 0;
    std::uint8_t foreign = 0;
    std::uint8_t uncertain = 0;
    bool probed = false; // `foreign` is known (the port's membership was probed once)
    bool absent = false; // the SA said the group does not exist: the next Set creates it
    McRecord record;     // port_gid = the port's GID, join_state unused
    bool have_record = false;
    std::uint64_t record_epoch = 0;
    bool record_doubt = false;

    bool operator==(const SaKnowledge &) const = default;

    // ---- questions ----

    // Bits serving members now: held or foreign, with a FullMember covering 0x8.
    std::uint8_t present() const { return cover(static_cast<std::uint8_t>(held | foreign)); }
    // A record confirmed since the port's last invalidation (`epoch`). An older one is only
    // good for re-creating the group, never for answering a join locally.
    bool fresh(std::uint64_t epoch) const { return have_record && !record_doubt && record_epoch == epoch; }
    // Nothing of this group that the daemon set may still be at the SA.
    bool nothing_of_ours() const { return !held && !uncertain; }

    // ---- what the SA said ----

    // The SA may have lost the port's state (SM restart, port down, ...): what was held is
    // uncertain until a Set confirms it.
    void sa_may_have_lost();
    // A first probe found the port holding `stored` before the daemon set anything.
    void probed_foreign(std::uint8_t stored);
    // A re-sync probe found the port holding exactly `stored`: of it, the bits held or uncertain
    // are the daemon's, the rest another agent's.
    void resynced(std::uint8_t stored);
    // The group's record from a Get(MGID), before the port's own membership is probed.
    void group_found(const McRecord &rec, const Gid &port_gid, std::uint64_t epoch);
    // A Get(MGID) said the group no longer exists: nobody holds bits in it. A re-join keeps
    // the old record to re-create the group from (`keep_record`).
    void group_gone(bool keep_record);
    // A Get(MGID) returned the group's current record. Returns the group fields that changed.
    std::uint64_t refreshed(const McRecord &rec, std::uint64_t epoch);
    // An audit saw the group under another MLID. Returns field::mlid if it changed.
    std::uint64_t mlid_seen(std::uint16_t mlid);

    struct SetAnswer {
        std::uint64_t changed = 0; // group fields that differ from the record known before
        std::uint8_t others = 0;   // bits another agent set since the probe (now foreign)
    };
    // A Set of `set_bits` answered with `resp`. An answer from before the port's last
    // invalidation (`trusted` false) gives a record but says nothing about the bits held now.
    SetAnswer set_answered(const McRecord &resp, std::uint8_t set_bits, bool trusted, const Gid &port_gid,
                           std::uint64_t epoch);
    // A Set went unanswered: its bits are uncertain, and it may have created the group.
    void set_unanswered(std::uint8_t bits);
    // A Set sent before the port's last invalidation: whatever it did is unknown.
    void set_outdated(std::uint8_t bits) { uncertain = static_cast<std::uint8_t>(uncertain | bits); }
    // A Delete of `bits` succeeded; `remaining` is the JoinState the DeleteResp carries.
    void deleted(std::uint8_t bits, std::uint8_t remaining);
    // A Delete went unanswered, was refused, or predates the last invalidation.
    void delete_uncertain(std::uint8_t bits);
    // The port holds nothing here any more: the record and whether the group exists may be
    // stale, so the next join sees the SA afresh.
    void forget();
    // An SA-assigned group turned out to be one the daemon already had: take over its state.
    void fold_in(const SaKnowledge &other);

    // ---- what to do next ----

    // The level-triggered reconcile: with no joins waiting, what brings the held bits in line
    // with `want` (the bits members need, normalized).
    struct Step {
        enum class Kind : std::uint8_t {
            none,    // in line: nothing to send
            resync,  // learn the exact JoinState first (a probe)
            repair,  // Set `bits` members need but the SA no longer holds
            remove,  // Delete `bits` nobody needs
            refresh, // Get the record: the bits are right, the record may not be
        };
        Kind kind = Kind::none;
        std::uint8_t bits = 0;
        // A FullMember the daemon holds is kept although nobody needs it: deleting it beside
        // another agent's SendOnlyFullMember would leak the MLID at the SA.
        bool kept_full_for_leak = false;

        bool operator==(const Step &) const = default;
    };
    Step reconcile(std::uint8_t want, std::uint64_t epoch) const;
};

// Group-level fields that differ between two records (field:: bits): what a member must react
// to (a new MLID means detach, re-attach and a new address handle).
std::uint64_t changed_fields(const McRecord &before, const McRecord &after);

} // namespace mcastd

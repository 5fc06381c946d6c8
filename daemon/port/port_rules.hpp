// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PortRules: what one port's observations mean, as PortEventSink calls. Pure decision logic: no
// I/O, no clock, no timers. PortPoller (port_poller.hpp) feeds it PortInfo and SMInfoRecord
// samples, verbs async events and P_Key tables, and does what each call's Followup asks.
//
// The rules (doc/architecture.md §6; §7 there for what the kernel, IPoIB, ibacm and
// srp_daemon do with the same events):
//
//   PortInfo   usable = PortState ACTIVE and MasterSMLID != 0. port_usable() on the first
//              sample and on every change. A port that comes back (usable after a sample or a
//              PORT_ERR said it was not) is invalidated with port_up: the SA drops a port's
//              memberships when its link goes down (doc/sa-multicast.md §11). While usable, a
//              new LID invalidates (lid_change). A new MasterSMLID or MasterSMSL moves the SA
//              (sa_moved); a new MasterSMLID after an earlier one also invalidates (sm_change).
//              A ClientReregister bit that turns on invalidates (client_reregister).
//              port_info() whenever LID, PortState or NeighborMTU changed.
//   SMInfo     The first successful sample of an SM (after start, after its LID changed, or
//              after any re-join of the port: see below) is the baseline. A later one with
//              another GUID, or with an ActCount below the last successful sample's, means the
//              SM restarted or failed over (sm_restart). ActCount growing is normal. Failed
//              samples change nothing. The first success after failed ones asks for an audit
//              now: OpenSM's ActCount counts the SMPs it sent, so an SM restarted while the
//              polls failed need not show a lower one, and one membership Get tells whether
//              the SA still holds the port's state.
//   re-join    on_memberships_gone() drops the SMInfo baseline: the daemon calls it once for
//              every re-join of the whole port, whatever found the loss (these rules'
//              port_invalidated(), or the engine's audit), through the Service's one
//              "memberships gone" path (service.hpp, PortListener). So do a CLIENT_REREGISTER
//              (or ClientReregister bit) deferred on a port that is not usable. The re-join Sets
//              every group at whichever SM is master by then, so a restart before it is
//              covered: one SM restart seen by CLIENT_REREGISTER (or an audit) and then by the
//              SMInfo poll is one re-join, not two. The next successful sample, the answer
//              already in flight included, is the new baseline, taken at the poll's normal
//              time; the ones after compare with it as before. An sm_restart's own sample is
//              the new baseline (set after its port_invalidated() returns). A second restart
//              before the new baseline goes unseen by the SMInfo rule; the audit finds it.
//   verbs      CLIENT_REREGISTER invalidates a usable port at once; on a port that is not
//              usable it is remembered and applied when the port becomes usable (ibacm's
//              pending_rereg). LID_CHANGE, SM_CHANGE and PORT_ACTIVE ask for a PortInfo poll
//              that then decides. PORT_ERR makes the port unusable. PKEY_CHANGE asks for the
//              P_Key table, and only a move of the SA's P_Key index invalidates (pkey_change),
//              as the kernel's multicast.c does.
//
// At most one port_invalidated() per observation: when several causes coincide (the port came
// back with a new LID and a new SM) the strongest names the trigger (client_reregister, then
// port_up, sm_change, lid_change) and `why` lists them all. Within one observation the calls
// come in this order: port_info, sa_moved, port_usable(false), port_invalidated,
// port_usable(true). So the sink learns the new SA address before it is asked to re-join, and
// learns that the memberships are gone before it is told the port is usable again.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "port/port_events.hpp"
#include "port/portinfo_smp.hpp"
#include "sa/mad_codec.hpp" // sa::SmInfoRecord

namespace mcastd::port {

// The verbs async events the port rules act on (IBV_EVENT_*; verbs_events.hpp maps them).
// GID_CHANGE is left out on purpose: the kernel ignores it for multicast too.
enum class VerbsEvent : std::uint8_t {
    client_reregister,
    lid_change,
    pkey_change,
    sm_change,
    port_err,
    port_active,
};
// "CLIENT_REREGISTER", "LID_CHANGE", ... as in IBV_EVENT_<name>.
const char *verbs_event_name(VerbsEvent e);

// A line for the log about something the sink does not hear about (a failed poll, an event
// that was deferred). The poller passes it on; PortRules itself logs nothing.
struct Note {
    enum class Level : std::uint8_t { debug, info, warning, error };
    Level level = Level::info;
    std::string text;

    bool operator==(const Note &) const = default;
};

// What the caller of a PortRules method should do next.
struct Followup {
    bool poll_portinfo_now = false; // something may have changed: ask PortInfo now
    bool poll_sminfo_soon = false;  // (re)take the SMInfo baseline, or retry a failed sample,
                                    // sooner than the normal interval
    bool read_pkey_table = false;   // re-read the P_Key table and call on_pkey_table()
    bool audit_now = false;         // audit one membership now (PortEventSink::audit_due)
    std::optional<Note> note;

    bool operator==(const Followup &) const = default;
};

class PortRules {
public:
    // `sink` must outlive the rules.
    PortRules(PortIndex port, PortEventSink &sink) : port_(port), sink_(sink) {}

    // A PortInfo answer from the port itself.
    Followup on_portinfo(const PortInfo &info);
    // The PortInfo query got no usable answer. The last known state stands: a local SMP that
    // goes unanswered says nothing about the fabric. Only the first failure of a run is worth
    // a warning; the next success says how many there were.
    Followup on_portinfo_failed(std::string_view detail = {});

    // The master SM's SMInfoRecord (a successful Get).
    Followup on_sminfo(const sa::SmInfoRecord &record);
    // The SMInfoRecord Get failed: no answer, an error status, or (bounced) the SA could not
    // be reached at all. Nothing to invalidate; the baseline stays. Asks for a sooner retry,
    // and after a bounce also for a PortInfo poll: an unreachable SA is the first sign of an
    // SM that moved (doc/testbed.md §7).
    Followup on_sminfo_failed(bool bounced, std::string_view detail = {});

    Followup on_verbs_event(VerbsEvent event);

    // The port's P_Key table, by index. The first one is the baseline.
    Followup on_pkey_table(std::span<const std::uint16_t> table);

    // The port's memberships are gone at the SA and the engine re-joins every group (after
    // these rules' port_invalidated(), or an audit's finding): the SMInfo baseline is taken
    // anew, so the new SM that the next sample shows is not a second re-join.
    void on_memberships_gone();

    // ---- what the rules know (for the poller and for tests) ----
    PortIndex port() const { return port_; }
    // Usable as last told to the sink; nullopt before the first PortInfo sample or PORT_ERR.
    std::optional<bool> usable() const { return usable_; }
    // The last PortInfo sample, if any.
    const std::optional<PortInfo> &portinfo() const { return info_; }
    // The master SM's LID and SL from the last PortInfo sample; 0 when unknown or none.
    std::uint16_t sm_lid() const { return info_ ? info_->master_sm_lid : 0; }
    std::uint8_t sm_sl() const { return info_ ? info_->master_sm_sl : 0; }
    // The SMInfo baseline: the last successful sample of the current SM.
    const std::optional<sa::SmInfoRecord> &sm_baseline() const { return sm_; }
    // A CLIENT_REREGISTER waiting for the port to become usable.
    bool reregister_pending() const { return pending_rereg_; }
    // The index of the SA's P_Key (0xFFFF) in the last table, if one was seen.
    std::optional<std::uint16_t> sa_pkey_index() const { return pkey_index_; }

private:
    // Collects one observation's invalidation causes; emits at most one port_invalidated.
    struct Causes {
        bool rereg = false, port_up = false, sm_change = false, lid_change = false;
        std::vector<std::string> why;
        bool any() const { return rereg || port_up || sm_change || lid_change; }
    };
    void invalidate(const Causes &c);
    // port_invalidated(); the re-join it starts comes back as on_memberships_gone().
    void invalidate(Trigger t, const std::string &why);
    // The next successful SMInfo sample is the baseline, whatever the last one was.
    void forget_sm_baseline();

    PortIndex port_;
    PortEventSink &sink_;
    std::optional<PortInfo> info_;
    std::optional<bool> usable_;
    std::string down_reason_;       // why it last became unusable, for the port_up `why`
    std::uint16_t last_sm_lid_ = 0; // the last non-zero MasterSMLID: "was there an SM before"
    std::optional<sa::SmInfoRecord> sm_;
    bool pending_rereg_ = false;
    std::optional<std::uint16_t> pkey_index_;
    unsigned portinfo_failures_ = 0; // in a row
    unsigned sminfo_failures_ = 0;   // in a row
};

} // namespace mcastd::port

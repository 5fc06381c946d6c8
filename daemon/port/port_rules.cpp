// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/port_rules.hpp"

#include <cstdio>

#include "port/port_attributes.hpp"

namespace mcastd::port {

namespace {

constexpr auto kActive = static_cast<std::uint8_t>(PortState::active);

std::string hex64(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
    return buf;
}

bool is_usable(const PortInfo &p) { return p.port_state == kActive && p.master_sm_lid != 0; }

// Why a port is not usable, in the words members get in their `lost` event.
std::string unusable_reason(const PortInfo &p) {
    if (p.port_state == static_cast<std::uint8_t>(PortState::down))
        return "port down";
    if (p.port_state != kActive)
        return "port not active (" + port_state_name(p.port_state) + ")";
    return "no subnet manager";
}

std::string join(const std::vector<std::string> &parts) {
    std::string out;
    for (const auto &p : parts) {
        if (!out.empty())
            out += "; ";
        out += p;
    }
    return out;
}

Note note(Note::Level level, std::string text) { return Note{level, std::move(text)}; }

std::string with_detail(std::string what, std::string_view detail) {
    if (!detail.empty()) {
        what += ": ";
        what += detail;
    }
    return what;
}

} // namespace

// Declared in port_events.hpp, which has no source file of its own.
const char *verbs_event_name(VerbsEvent e) {
    switch (e) {
    case VerbsEvent::client_reregister:
        return "CLIENT_REREGISTER";
    case VerbsEvent::lid_change:
        return "LID_CHANGE";
    case VerbsEvent::pkey_change:
        return "PKEY_CHANGE";
    case VerbsEvent::sm_change:
        return "SM_CHANGE";
    case VerbsEvent::port_err:
        return "PORT_ERR";
    case VerbsEvent::port_active:
        return "PORT_ACTIVE";
    }
    return "unknown verbs event";
}

void PortRules::invalidate(const Causes &c) {
    // The strongest cause names the trigger; `why` keeps all of them.
    const Trigger t = c.rereg       ? Trigger::client_reregister
                      : c.port_up   ? Trigger::port_up
                      : c.sm_change ? Trigger::sm_change
                                    : Trigger::lid_change;
    invalidate(t, join(c.why));
}

void PortRules::invalidate(Trigger t, const std::string &why) { sink_.port_invalidated(port_, t, why); }

// The re-join Sets every group again at whichever SM is master by then, so an SM restart that
// came before it is covered: the sample that shows it must become the baseline, not re-join the
// port a second time (CLIENT_REREGISTER after an SM restart, then the SMInfo poll that shows the
// new SM). Any answer from now on counts, the one already in flight too. No sooner poll: a
// CLIENT_REREGISTER reaches every port of the fabric at once, and their Gets would arrive in step
// at the SA while it serves the re-join (the fabric simulation, 2,000 hosts x 10 groups: 6.8 s
// instead of 3.9 s); the audit covers a second restart before the next regular poll.
void PortRules::forget_sm_baseline() { sm_.reset(); }

Followup PortRules::on_portinfo(const PortInfo &in) {
    Followup f;
    if (portinfo_failures_ > 0) {
        f.note = note(Note::Level::info, "PortInfo answers again after " +
                                             std::to_string(portinfo_failures_) + " failed queries");
        portinfo_failures_ = 0;
    }
    const bool first = !info_;
    const PortInfo prev = info_.value_or(PortInfo{});
    info_ = in;
    const bool now_usable = is_usable(in);
    const bool was_unusable = usable_.has_value() && !*usable_;

    if (first || in.lid != prev.lid || in.port_state != prev.port_state ||
        in.neighbor_mtu != prev.neighbor_mtu)
        sink_.port_info(port_, in.lid, in.port_state, in.neighbor_mtu);

    Causes c;
    // SA address. MasterSMLID 0 means no SM has configured the port (yet): there is nowhere
    // to move to, and the last SM stays the one a later LID is compared with.
    const bool sm_lid_changed = in.master_sm_lid != 0 && in.master_sm_lid != last_sm_lid_;
    if (in.master_sm_lid != 0 &&
        (first || sm_lid_changed || in.master_sm_lid != prev.master_sm_lid ||
         in.master_sm_sl != prev.master_sm_sl)) {
        sink_.sa_moved(port_, in.master_sm_lid, in.master_sm_sl);
    }
    if (sm_lid_changed) {
        // An SL change alone is the same SM reached another way: its records are intact.
        if (last_sm_lid_ != 0) {
            c.sm_change = true;
            c.why.push_back("the master SM moved from LID " + std::to_string(last_sm_lid_) +
                            " to LID " + std::to_string(in.master_sm_lid));
        }
        last_sm_lid_ = in.master_sm_lid;
        sm_.reset(); // a new SM: its first SMInfo sample is a new baseline
        f.poll_sminfo_soon = true;
    }

    if (!first && usable_ == true && now_usable && in.lid != prev.lid) {
        c.lid_change = true;
        c.why.push_back("the port's LID changed from " + std::to_string(prev.lid) + " to " +
                        std::to_string(in.lid));
    }
    // An edge, not a level: an SM that sets the bit expects it to be acted on once.
    if (in.client_reregister && !prev.client_reregister) {
        if (now_usable) {
            c.rereg = true;
            c.why.push_back("the SM set ClientReregister in PortInfo");
        } else {
            pending_rereg_ = true;
            forget_sm_baseline(); // the SM that asked is the one the re-join will cover
        }
    }
    if (now_usable && pending_rereg_) {
        c.rereg = true;
        c.why.push_back("CLIENT_REREGISTER arrived while the port was not usable");
    }
    if (now_usable && was_unusable) {
        c.port_up = true;
        c.why.insert(c.why.begin(), "the port is usable again (it was: " + down_reason_ +
                                        "); the SA dropped its memberships when it went down");
        f.poll_sminfo_soon = true;
    }
    if (first && now_usable)
        f.poll_sminfo_soon = true; // the SMInfo baseline

    if (!now_usable && usable_ != false) {
        down_reason_ = unusable_reason(in);
        usable_ = false;
        sink_.port_usable(port_, false, down_reason_);
    }
    // While the port is not usable, causes wait: its return invalidates as port_up anyway.
    if (now_usable && c.any()) {
        pending_rereg_ = false;
        invalidate(c);
    }
    if (now_usable && usable_ != true) {
        usable_ = true;
        sink_.port_usable(port_, true,
                          "port active, subnet manager at LID " + std::to_string(in.master_sm_lid));
    }
    return f;
}

Followup PortRules::on_portinfo_failed(std::string_view detail) {
    Followup f;
    ++portinfo_failures_;
    if (portinfo_failures_ == 1)
        f.note = note(Note::Level::warning,
                      with_detail("PortInfo query failed", detail) + "; keeping the last known state");
    else
        f.note = note(Note::Level::debug, with_detail("PortInfo query failed again (" +
                                                          std::to_string(portinfo_failures_) +
                                                          " in a row)",
                                                      detail));
    return f;
}

Followup PortRules::on_sminfo(const sa::SmInfoRecord &r) {
    Followup f;
    if (sminfo_failures_ > 0) {
        f.note = note(Note::Level::info, "the SM answers SMInfoRecord again after " +
                                             std::to_string(sminfo_failures_) + " failed polls");
        sminfo_failures_ = 0;
        f.audit_now = true; // a restart meanwhile may not show in ActCount
    }
    sink_.sm_seen(port_, r.lid, r.guid, r.act_count);
    if (r.sm_state != sa::sm_state::master) {
        // We asked for the master's LID and got an SM that is not master: the master has
        // moved and PortInfo will say where.
        f.poll_portinfo_now = true;
        f.note = note(Note::Level::info, "the SM at LID " + std::to_string(r.lid) +
                                             " is no longer master (SMState " +
                                             std::to_string(r.sm_state) + ")");
    }
    if (!sm_ || sm_->lid != r.lid) {
        sm_ = r; // the baseline of this SM
        return f;
    }
    std::string why;
    if (r.guid != sm_->guid)
        why = "another SM took over at LID " + std::to_string(r.lid) + ": GUID " +
              hex64(sm_->guid) + " -> " + hex64(r.guid) + ", ActCount " +
              std::to_string(sm_->act_count) + " -> " + std::to_string(r.act_count);
    else if (r.act_count < sm_->act_count)
        why = "the SM (GUID " + hex64(r.guid) + ") restarted: its ActCount fell from " +
              std::to_string(sm_->act_count) + " to " + std::to_string(r.act_count);
    if (!why.empty()) {
        f.audit_now = false; // the re-join covers every group
        sink_.port_invalidated(port_, Trigger::sm_restart, why);
    }
    // After the re-join dropped the baseline (on_memberships_gone): this sample, the restarted
    // SM's, is its new baseline.
    sm_ = r;
    return f;
}

Followup PortRules::on_sminfo_failed(bool bounced, std::string_view detail) {
    Followup f;
    ++sminfo_failures_;
    f.poll_sminfo_soon = true;
    f.poll_portinfo_now = bounced;
    if (sminfo_failures_ == 1)
        f.note = note(Note::Level::warning,
                      with_detail(bounced ? "SMInfoRecord poll could not reach the SA"
                                          : "SMInfoRecord poll failed",
                                  detail));
    else
        f.note = note(Note::Level::debug, with_detail("SMInfoRecord poll failed again (" +
                                                          std::to_string(sminfo_failures_) +
                                                          " in a row)",
                                                      detail));
    return f;
}

Followup PortRules::on_verbs_event(VerbsEvent e) {
    Followup f;
    switch (e) {
    case VerbsEvent::client_reregister:
        if (usable_ == true) {
            pending_rereg_ = false;
            invalidate(Trigger::client_reregister, "the SM asked for re-registration (CLIENT_REREGISTER)");
        } else {
            // ibacm's pending_rereg: the port cannot re-join now; do it when it can.
            pending_rereg_ = true;
            forget_sm_baseline();       // the SM that asked is the one the re-join will cover
            f.poll_portinfo_now = true; // our idea of "not usable" may be stale
            f.note = note(Note::Level::info,
                          "CLIENT_REREGISTER on a port that is not usable: deferred until it is");
        }
        break;
    case VerbsEvent::port_err:
        if (usable_ != false) {
            down_reason_ = "port error";
            usable_ = false;
            sink_.port_usable(port_, false, down_reason_);
        }
        f.poll_portinfo_now = true; // for the live state; its return re-joins as port_up
        break;
    case VerbsEvent::lid_change:
    case VerbsEvent::sm_change:
    case VerbsEvent::port_active:
        f.poll_portinfo_now = true; // the PortInfo sample decides
        break;
    case VerbsEvent::pkey_change:
        f.read_pkey_table = true;
        break;
    }
    return f;
}

Followup PortRules::on_pkey_table(std::span<const std::uint16_t> table) {
    const std::uint16_t index = pkey_index_or_default(table);
    const auto before = pkey_index_;
    pkey_index_ = index;
    if (before && *before != index)
        invalidate(Trigger::pkey_change, "the default P_Key 0xffff moved from index " +
                                             std::to_string(*before) + " to " + std::to_string(index));
    return {};
}

void PortRules::on_memberships_gone() { forget_sm_baseline(); }

} // namespace mcastd::port

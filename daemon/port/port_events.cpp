// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/port_events.hpp"

namespace mcastd::port {

const char *trigger_name(Trigger t) {
    switch (t) {
    case Trigger::client_reregister:
        return "client-reregister";
    case Trigger::lid_change:
        return "lid-change";
    case Trigger::pkey_change:
        return "pkey-change";
    case Trigger::sm_change:
        return "sm-change";
    case Trigger::sm_restart:
        return "sm-restart";
    case Trigger::port_up:
        return "port-up";
    }
    return "unknown";
}

} // namespace mcastd::port

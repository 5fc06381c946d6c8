// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The membership log: one record per engine note ("mlx5_0/1: joined group ff15::1 as full"),
// carrying the note's structured fields (logging/fields.hpp) into the journal.
#pragma once

#include "core/engine.hpp"

namespace mcastd {
class Service;
}

namespace mcastd::logging {

// An observer for Service::add_observer(); `service` names the ports and must outlive it.
EngineObserver membership_log(const Service &service);

} // namespace mcastd::logging

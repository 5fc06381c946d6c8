// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/port_attributes.hpp"

namespace mcastd::port {

std::string port_state_name(std::uint8_t state) {
    switch (static_cast<PortState>(state)) {
    case PortState::no_change: return "NOP";
    case PortState::down: return "DOWN";
    case PortState::init: return "INIT";
    case PortState::armed: return "ARMED";
    case PortState::active: return "ACTIVE";
    }
    return "state(" + std::to_string(state) + ")";
}

std::string phys_state_name(std::uint8_t phys) {
    switch (static_cast<PhysState>(phys)) {
    case PhysState::no_change: return "NoChange";
    case PhysState::sleep: return "Sleep";
    case PhysState::polling: return "Polling";
    case PhysState::disabled: return "Disabled";
    case PhysState::port_configuration_training: return "PortConfigurationTraining";
    case PhysState::link_up: return "LinkUp";
    case PhysState::link_error_recovery: return "LinkErrorRecovery";
    case PhysState::phy_test: return "PhyTest";
    }
    return "phys(" + std::to_string(phys) + ")";
}

std::optional<std::uint16_t> find_full_member_pkey(std::span<const std::uint16_t> table,
                                                   std::uint16_t pkey) {
    std::uint16_t base = pkey & kPkeyBaseMask;
    if (base == 0)
        return std::nullopt;
    for (std::size_t i = 0; i < table.size() && i <= 0xFFFF; ++i)
        if (table[i] == (base | kPkeyFullMember))
            return static_cast<std::uint16_t>(i);
    return std::nullopt;
}

std::uint16_t pkey_index_or_default(std::span<const std::uint16_t> table, std::uint16_t pkey) {
    return find_full_member_pkey(table, pkey).value_or(0);
}

} // namespace mcastd::port

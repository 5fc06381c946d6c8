// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/record.hpp"

namespace mcastd {

std::optional<RoceSource> roce_source(const McRecord &r) {
    if (r.link_layer != LinkLayer::ethernet)
        return std::nullopt;
    return RoceSource{r.gid_type, r.sgid_index, r.netdev};
}

std::string join_state_name(std::uint8_t bits) {
    static constexpr const char *names[] = {"full", "nonmember", "sendonly-nonmember",
                                            "sendonly-full"};
    std::string out;
    for (unsigned i = 0; i < 4; ++i) {
        if (!(bits & (1u << i)))
            continue;
        if (!out.empty())
            out += '+';
        out += names[i];
    }
    return out.empty() ? "none" : out;
}

bool selector_matches(Selector sel, std::uint8_t requested, std::uint8_t value) {
    switch (sel) {
    case Selector::greater: return value > requested;
    case Selector::less: return value < requested;
    case Selector::exactly: return value == requested;
    case Selector::best: return true;
    }
    return false;
}

unsigned mtu_bytes(std::uint8_t mtu_enum) {
    return mtu_enum >= 1 && mtu_enum <= 5 ? 128u << mtu_enum : 0;
}

unsigned rate_mbps(std::uint8_t rate_enum) {
    // IBA table 211 (doc/sa-multicast.md §10), in Mb/s.
    static constexpr unsigned table[] = {
        0,      0,      2500,   10000,  30000,  5000,   20000,  40000,
        60000,  80000,  120000, 14000,  56000,  112000, 168000, 25000,
        100000, 200000, 300000, 28000,  50000,  400000, 600000};
    return rate_enum < std::size(table) ? table[rate_enum] : 0;
}

} // namespace mcastd

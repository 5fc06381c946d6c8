// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The two link layers an RDMA port runs on. Which one a port has decides how its memberships
// are made at the fabric: at the SA on InfiniBand, as kernel IGMP/MLD memberships on Ethernet
// (RoCE), where there is no SA and no SM (doc/architecture.md §6).
#pragma once

#include <cstdint>
#include <string_view>

namespace mcastd {

enum class LinkLayer : std::uint8_t { infiniband, ethernet };

// As sysfs and libibumad spell it: "InfiniBand", "Ethernet".
constexpr const char *link_layer_name(LinkLayer l) { return l == LinkLayer::ethernet ? "Ethernet" : "InfiniBand"; }

// A port's link layer from sysfs's `link_layer` text. libibumad reports "IB" when sysfs has no
// such file (old kernels, umad2sim), and only InfiniBand ports lack it.
constexpr LinkLayer link_layer_from(std::string_view text) {
    return text == "Ethernet" ? LinkLayer::ethernet : LinkLayer::infiniband;
}

} // namespace mcastd

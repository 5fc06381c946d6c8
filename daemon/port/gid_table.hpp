// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A port's GID table: which GIDs the port sends from, of which type, on which netdev. On a RoCE
// port it is what a membership needs (the source GID, its `sgid_index` and the netdev that holds
// the host's IP membership: doc/roce-multicast.md §3); an address removed from the netdev takes
// its entries with it, and one added back may come at another index.
//
// Pure: the parsers turn the texts sysfs shows into entries (sysfs_ports.hpp reads the files),
// and diff_gid_tables says what changed between two reads. No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/gid.hpp"
#include "common/link_layer.hpp"
#include "common/roce_address.hpp"

namespace mcastd::port {

// One used entry of a port's GID table.
struct GidEntry {
    unsigned index = 0; // the entry's index: a RoCE record's sgid_index
    Gid gid{};
    GidType type = GidType::ib;
    std::string netdev; // the netdev it belongs to; "" where the kernel names none (InfiniBand)
    // The netdev as the daemon last looked it up in its own network namespace (HostPorts; sysfs
    // does not say): not there (removed, or moved to another namespace), else its index and
    // MTU; 0 where not looked up. The RoCE memberships are made on it, in the client's namespace.
    bool netdev_gone = false;
    int ifindex = 0;
    unsigned mtu = 0;

    bool operator==(const GidEntry &) const = default;
};

// The texts sysfs shows for one index of a port's table, each nullopt when reading its file
// failed: gids/<i>, gid_attrs/types/<i>, gid_attrs/ndevs/<i> (trailing newline allowed).
struct GidFiles {
    unsigned index = 0;
    std::optional<std::string> gid;
    std::optional<std::string> type;
    std::optional<std::string> netdev;
};

// A table as read: its used entries in index order, and what could not be made sense of
// ("gids/7: 'xyz' is not a GID"), for the log. A problem costs its entry only.
struct GidTable {
    std::vector<GidEntry> entries;
    std::vector<std::string> problems;

    bool operator==(const GidTable &) const = default;
};

// `text` without the whitespace around it: sysfs ends every attribute with a newline.
std::string_view trim_sysfs_text(std::string_view text);

// A GID as sysfs prints it, eight groups of four hex digits ("fe80:0000:...:0001"), or any IPv6
// text; surrounding whitespace is ignored. nullopt for anything else.
std::optional<Gid> parse_sysfs_gid(std::string_view text);

// A gid_attrs/types text: "IB/RoCE v1" is RoCE v1 on an Ethernet port and the InfiniBand type on
// an InfiniBand one (the kernel gives the two one type); "RoCE v2" is RoCE v2. nullopt otherwise.
std::optional<GidType> parse_sysfs_gid_type(std::string_view text, LinkLayer link_layer);

// Whether the gids/<i> text is an unused entry's: the kernel shows those as all zeros (and then
// fails the reads of their gid_attrs with EINVAL), so their attribute files need not be read.
bool unused_gid_text(std::string_view text);

// The table from the files of each index, the way the kernel leaves them: an entry is used when
// its GID reads non-zero and its type reads; an unreadable file is an entry that is not there
// (unused, or going away as it is read), never an error. On an Ethernet port a used entry also
// names its netdev (an entry without one is going away too); on InfiniBand it has none.
GidTable parse_gid_table(std::span<const GidFiles> files, LinkLayer link_layer);

// What changed between two reads of one table. An entry is the same address when its GID, type
// and netdev are: one that is in both reads at another index has moved.
struct GidTableChange {
    std::vector<GidEntry> removed; // in the old read only (as it was there)
    std::vector<GidEntry> added;   // in the new read only
    std::vector<GidEntry> moved;   // in both, at another index (as it is now)
    // In both at the same index, its netdev's state differs: gone or back, another ifindex (made
    // anew), another MTU (as it is now).
    std::vector<GidEntry> netdev;

    bool empty() const { return removed.empty() && added.empty() && moved.empty() && netdev.empty(); }
    bool operator==(const GidTableChange &) const = default;
};
GidTableChange diff_gid_tables(std::span<const GidEntry> before, std::span<const GidEntry> after);

// "3 ::ffff:10.77.0.1 roce_v2 veth1": an entry for the log, with "(ifindex 7, MTU 1500)" when
// looked up, or "(not in the daemon's network namespace)".
std::string describe(const GidEntry &entry);
// "removed 1 ::ffff:10.77.0.1 roce_v2 veth1; added 2 ...; netdev ..." (the parts that are not
// empty).
std::string describe(const GidTableChange &change);

} // namespace mcastd::port

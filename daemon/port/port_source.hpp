// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PortSource: the one interface through which the daemon reads its devices' ports, their
// attributes and their GID tables. Two implementations read the host: libibumad for
// InfiniBand ports (UmadPortSource, port_discovery.hpp: what the SA stack opens) and a
// directory laid out like /sys/class/infiniband for Ethernet (RoCE) ports (SysfsPortSource,
// sysfs_ports.hpp: the default directory, or --sysfs-root). CombinedPortSource is what the
// daemon uses: both at once, each port from one of them (doc/architecture.md §6.2).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "port/gid_table.hpp"
#include "port/port_attributes.hpp"

namespace mcastd::port {

struct Discovery {
    std::vector<PortAttributes> ports; // every port of every CA that could be read
    std::vector<Error> errors;         // one per CA or port that could not be read, or problem in it
};

class PortSource {
public:
    virtual ~PortSource() = default;
    // What the source reads, for messages: "libibumad", "/sys/class/infiniband".
    virtual std::string name() const = 0;
    // Every port of every device the source sees. One unreadable device does not hide the others.
    virtual Discovery discover() const = 0;
    // One port read afresh (sysfs is live on hardware, so this is the current state).
    // Errors: no_such_device, no_such_port, internal (the read failed otherwise).
    virtual std::variant<PortAttributes, Error> read_port(std::string_view device, unsigned port) const = 0;
    // The port's GID table read afresh: what a RoCE membership polls to learn that its source
    // address went away or came back. Errors as read_port's.
    virtual std::variant<GidTable, Error> read_gid_table(std::string_view device, unsigned port) const = 0;
};

// The two sources combined: InfiniBand ports are `infiniband`'s, Ethernet ports `ethernet`'s,
// whatever else each reports. So a device both see is taken once: libibumad reports RoCE
// ports too (it reads the same sysfs), and the directory InfiniBand ones, and each is left to
// the other. A port of the directory whose name libibumad serves already is left out with an
// error saying so. InfiniBand ports come first (their indexes do not depend on RoCE ports).
Discovery combine(Discovery infiniband, Discovery ethernet, std::string_view ethernet_name);

class CombinedPortSource final : public PortSource {
public:
    CombinedPortSource(std::unique_ptr<PortSource> infiniband, std::unique_ptr<PortSource> ethernet);

    std::string name() const override;
    Discovery discover() const override;
    // From the source the port belongs to by its link layer (the InfiniBand one asked first).
    std::variant<PortAttributes, Error> read_port(std::string_view device, unsigned port) const override;
    // From the Ethernet source, whatever the port's link layer: libibumad reads no GID table.
    std::variant<GidTable, Error> read_gid_table(std::string_view device, unsigned port) const override;

private:
    std::unique_ptr<PortSource> infiniband_;
    std::unique_ptr<PortSource> ethernet_;
};

} // namespace mcastd::port

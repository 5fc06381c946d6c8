// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/gid_log.hpp"

#include <spdlog/spdlog.h>

#include "common/port_name.hpp"
#include "logging/fields.hpp"
#include "logging/message_ids.hpp"

namespace mcastd::logging {

namespace {

void log_entry(const std::string &device, unsigned port, const char *change, const port::GidEntry &e) {
    const Fields f{{"MESSAGE_ID", std::string(kRoceSource.id)},
                   {"RDMA_DEVICE", device},
                   {"RDMA_PORT", std::to_string(port)},
                   {"ROCE_CHANGE", change},
                   {"ROCE_GID", format_gid(e.gid)},
                   {"ROCE_GID_TYPE", std::string(gid_type_name(e.type))},
                   {"ROCE_SGID_INDEX", std::to_string(e.index)},
                   {"ROCE_NETDEV", e.netdev}};
    const FieldScope scope(f);
    const bool bad = std::string_view(change) == "removed" || e.netdev_gone;
    spdlog::log(bad ? spdlog::level::warn : spdlog::level::info, "{}: GID table: {} {}",
                port_name(device, static_cast<std::uint8_t>(port)), change, port::describe(e));
}

} // namespace

void log_gid_change(const std::string &device, unsigned port, const port::GidTableChange &c) {
    for (const port::GidEntry &e : c.removed)
        log_entry(device, port, "removed", e);
    for (const port::GidEntry &e : c.added)
        log_entry(device, port, "added", e);
    for (const port::GidEntry &e : c.moved)
        log_entry(device, port, "moved", e);
    for (const port::GidEntry &e : c.netdev)
        log_entry(device, port, "netdev", e);
}

} // namespace mcastd::logging

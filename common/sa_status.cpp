// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/sa_status.hpp"

#include <cstdio>

namespace mcastd {

namespace {

struct StatusInfo {
    std::uint16_t code;
    const char *name;
    const char *sentence;
};

// SA class codes live in bits 15:8, generic MAD codes in the low byte.
constexpr StatusInfo kStatuses[] = {
    {0x0000, "SUCCESS", "the request succeeded"},
    {0x0001, "BUSY", "the SA is busy; try again later"},
    {0x0002, "REDIRECT", "the SA asked to be reached through another port (redirect is not supported)"},
    {0x0004, "BAD_VERSION", "the SA does not support this MAD base or class version"},
    {0x0008, "METHOD_NOT_SUPPORTED", "the SA does not support this method"},
    {0x000C, "METHOD_ATTR_NOT_SUPPORTED",
     "the SA does not support this method/attribute combination"},
    {0x001C, "INVALID_ATTR_VALUE", "the SA found an invalid attribute or field value"},
    {0x0100, "ERR_NO_RESOURCES",
     "the SA has no resources for the request (for a create: no free MLID left in the subnet)"},
    {0x0200, "ERR_REQ_INVALID",
     "the SA rejected the request as invalid (a field does not match the group, the MGID or "
     "P_Key is not allowed, the port's MTU or rate is below the group's, or the bits are not "
     "held)"},
    {0x0300, "ERR_NO_RECORDS", "the SA holds no matching record"},
    {0x0400, "ERR_TOO_MANY_RECORDS", "the SA matched more than one record"},
    {0x0500, "ERR_REQ_INVALID_GID", "the PortGID's subnet prefix is not this subnet's"},
    {0x0600, "ERR_REQ_INSUFFICIENT_COMPONENTS",
     "the component mask lacks fields the SA needs (creating a group needs Q_Key, P_Key, SL, "
     "TClass and FlowLabel)"},
    {0x0700, "ERR_REQ_DENIED", "the SA denied the request"},
    {0x0800, "ERR_STATUS_PRIO_SUGGESTED", "the SA suggests a different priority"},
};

const StatusInfo *find(std::uint16_t status) {
    for (const auto &s : kStatuses)
        if (s.code == status)
            return &s;
    return nullptr;
}

} // namespace

std::string sa_status_name(std::uint16_t status) {
    if (const auto *s = find(status))
        return s->name;
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%04x", status);
    return buf;
}

std::string sa_status_sentence(std::uint16_t status) {
    if (const auto *s = find(status))
        return s->sentence;
    return "the SA returned a status this daemon does not know";
}

std::string sa_status_describe(std::uint16_t status) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "SA status 0x%04x ", status);
    return buf + sa_status_name(status) + ": " + sa_status_sentence(status);
}

} // namespace mcastd

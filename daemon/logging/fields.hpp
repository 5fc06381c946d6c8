// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Structured journal fields: the ones a record carries beyond MESSAGE and PRIORITY.
//
// A FieldScope attaches fields to every record logged on its thread while it lives, so the
// membership log keeps spdlog's one logging path (levels, targets) and the journal sink adds
// the fields; the console ignores them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/engine.hpp"

namespace mcastd::logging {

struct Field {
    std::string name; // A-Z, 0-9 and _, not starting with _
    std::string value;
    bool operator==(const Field &) const = default;
};
using Fields = std::vector<Field>;

class FieldScope {
public:
    explicit FieldScope(const Fields &fields);
    ~FieldScope();
    FieldScope(const FieldScope &) = delete;
    FieldScope &operator=(const FieldScope &) = delete;

private:
    const Fields *outer_;
};

// The fields of the innermost live FieldScope on this thread, or nullptr.
const Fields *scope_fields();

// Where a note happened, as the operator names it.
struct PortName {
    std::string device;
    std::uint8_t port = 0;
};

// CLIENT_PID, CLIENT_UID and CLIENT_COMM of a client; CLIENT_ACCOUNT_UID too when its shares
// are another uid's (the owner of the subordinate range its uid is in).
void add_client_fields(Fields &f, const ClientInfo &who);

// MESSAGE_ID, RDMA_DEVICE, RDMA_PORT, MCAST_MGID, MCAST_MLID, MCAST_JOIN_STATE, CLIENT_PID,
// CLIENT_UID, CLIENT_COMM and SA_STATUS of one engine note; a field with nothing to say
// (no group, no client, no SA status, no MLID yet) is left out rather than sent empty.
Fields note_fields(const EngineNote &note, const std::optional<PortName> &port);

} // namespace mcastd::logging

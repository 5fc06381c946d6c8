// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The caller's structure sizes (struct rdmamcast_sizes, libclient/ABI.md): what the *_sized
// entry points check before they hand out a structure, so that a program built against a newer
// librdmamcast is refused by name instead of reading past the end of what this one allocated.
#pragma once

#include <initializer_list>

#include "error_state.hpp"
#include "rdmamcast/client.h"

namespace rdmamcast::detail {

// The structures a call hands out, each a member of struct rdmamcast_sizes.
enum class Struct {
    error,
    record,
    event,
    member,
    group,
    port_groups,
    group_list,
    rejoin,
    port_sa,
    port_status,
    counters,
    user_usage,
    daemon_status,
    refusal,
};

// 0 when `caller` admits every structure of `structs`: a table this library can read, each
// appended-to structure no larger than this library's and each fixed one equal to it. Else
// -EINVAL with `error` set: RDMAMCAST_E_ABI, naming `call`, the structure and both sizes.
int check_sizes(const rdmamcast_sizes *caller, std::initializer_list<Struct> structs,
                const char *call, ErrorState &error);

// What rdmamcast_last_error_sized() returns: `error`, or when check_sizes() refuses the
// caller's error structure, an RDMAMCAST_E_ABI error that says so, of this thread, in room
// enough for any caller's rdmamcast_error (it must fit in the fixed event) and zero past this
// library's. Allocates nothing; a refusal stays valid until the next one on the thread.
const rdmamcast_error *error_for(const rdmamcast_sizes *caller, const rdmamcast_error *error);

} // namespace rdmamcast::detail

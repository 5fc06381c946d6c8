// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "abi.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace rdmamcast::detail {

namespace {

// The table as this library knows it; a caller's may be longer (a newer library's) or, from a
// broken caller, shorter.
constexpr std::size_t kFirstSizesSize = 56; // RDMAMCAST_1.5's table
static_assert(sizeof(rdmamcast_sizes) >= kFirstSizesSize);

// The structures only ever grow: on LP64, never below what the headers of RDMAMCAST_1.4 (and
// the programs built on them) have. The ABI baseline (libclient/abi) pins every field.
static_assert(sizeof(void *) != 8 ||
              (sizeof(rdmamcast_error) >= 88 && sizeof(rdmamcast_member) >= 72 &&
               sizeof(rdmamcast_group) >= 64 && sizeof(rdmamcast_port_groups) >= 48 &&
               sizeof(rdmamcast_group_list) >= 16 && sizeof(rdmamcast_rejoin) >= 40 &&
               sizeof(rdmamcast_port_sa) >= 40 && sizeof(rdmamcast_port_status) >= 120 &&
               sizeof(rdmamcast_counters) >= 112 && sizeof(rdmamcast_user_usage) >= 56 &&
               sizeof(rdmamcast_daemon_status) >= 72));

struct StructInfo {
    const char *name;
    std::uint32_t rdmamcast_sizes::*caller;
    std::size_t own;
    bool fixed; // the caller allocates it (or it is embedded): the sizes must be equal
};

StructInfo info(Struct s) {
    switch (s) {
    case Struct::error: return {"rdmamcast_error", &rdmamcast_sizes::error, sizeof(rdmamcast_error), false};
    case Struct::record: return {"rdmamcast_record", &rdmamcast_sizes::record, sizeof(rdmamcast_record), true};
    case Struct::event: return {"rdmamcast_event", &rdmamcast_sizes::event, sizeof(rdmamcast_event), true};
    case Struct::member: return {"rdmamcast_member", &rdmamcast_sizes::member, sizeof(rdmamcast_member), false};
    case Struct::group: return {"rdmamcast_group", &rdmamcast_sizes::group, sizeof(rdmamcast_group), false};
    case Struct::port_groups:
        return {"rdmamcast_port_groups", &rdmamcast_sizes::port_groups, sizeof(rdmamcast_port_groups), false};
    case Struct::group_list:
        return {"rdmamcast_group_list", &rdmamcast_sizes::group_list, sizeof(rdmamcast_group_list), false};
    case Struct::rejoin: return {"rdmamcast_rejoin", &rdmamcast_sizes::rejoin, sizeof(rdmamcast_rejoin), false};
    case Struct::port_sa: return {"rdmamcast_port_sa", &rdmamcast_sizes::port_sa, sizeof(rdmamcast_port_sa), false};
    case Struct::port_status:
        return {"rdmamcast_port_status", &rdmamcast_sizes::port_status, sizeof(rdmamcast_port_status), false};
    case Struct::counters:
        return {"rdmamcast_counters", &rdmamcast_sizes::counters, sizeof(rdmamcast_counters), false};
    case Struct::user_usage:
        return {"rdmamcast_user_usage", &rdmamcast_sizes::user_usage, sizeof(rdmamcast_user_usage), false};
    case Struct::daemon_status:
        return {"rdmamcast_daemon_status", &rdmamcast_sizes::daemon_status, sizeof(rdmamcast_daemon_status), false};
    case Struct::refusal: return {"rdmamcast_refusal", &rdmamcast_sizes::refusal, sizeof(rdmamcast_refusal), false};
    }
    return {"?", &rdmamcast_sizes::size, 0, true};
}

// True when `caller` admits `structs`; else false with the reason in `why` (no allocation, so
// that rdmamcast_last_error_sized() can say it too).
bool admits(const rdmamcast_sizes *caller, std::initializer_list<Struct> structs, const char *call,
            char *why, std::size_t why_len) {
    if (!caller) {
        std::snprintf(why, why_len, "%s: no structure sizes (pass rdmamcast_compiled_sizes())", call);
        return false;
    }
    if (caller->size < kFirstSizesSize) {
        std::snprintf(why, why_len,
                      "%s: struct rdmamcast_sizes is %u bytes, less than the %zu of the first one "
                      "(pass rdmamcast_compiled_sizes())",
                      call, static_cast<unsigned>(caller->size), kFirstSizesSize);
        return false;
    }
    // Only the part this library knows: a newer table's extra members name structures this
    // library never hands out.
    rdmamcast_sizes known{};
    std::memcpy(&known, caller, caller->size < sizeof known ? caller->size : sizeof known);
    for (Struct s : structs) {
        const StructInfo i = info(s);
        const std::uint32_t theirs = known.*i.caller;
        if (i.fixed ? theirs == i.own : theirs <= i.own)
            continue;
        std::snprintf(why, why_len,
                      "%s: struct %s is %u bytes in this program and %zu in librdmamcast %s%s", call,
                      i.name, static_cast<unsigned>(theirs), i.own, rdmamcast_version(),
                      i.fixed ? ", and its size never changes: the program's headers are not "
                                "librdmamcast's"
                              : ": the program was built against a newer librdmamcast, and "
                                "needs it");
        return false;
    }
    return true;
}

} // namespace

int check_sizes(const rdmamcast_sizes *caller, std::initializer_list<Struct> structs,
                const char *call, ErrorState &error) {
    char why[320];
    if (admits(caller, structs, call, why, sizeof why))
        return 0;
    return error.set(RDMAMCAST_E_ABI, -EINVAL, why);
}

const rdmamcast_error *error_for(const rdmamcast_sizes *caller, const rdmamcast_error *error) {
    // The caller's rdmamcast_error ends rdmamcast_event_join_error, inside the event's union,
    // whose size is fixed: no caller's can be larger than this.
    constexpr std::size_t kRoom =
        sizeof(rdmamcast_event::reserved) - offsetof(rdmamcast_event_join_error, error);
    static_assert(kRoom >= sizeof(rdmamcast_error));
    struct Refusal {
        union {
            rdmamcast_error error;
            unsigned char room[kRoom];
        };
        char message[320];
    };
    thread_local Refusal r;
    if (admits(caller, {Struct::error}, "rdmamcast_last_error", r.message, sizeof r.message))
        return error;
    std::memset(r.room, 0, sizeof r.room);
    r.error.code = RDMAMCAST_E_ABI;
    r.error.err = -EINVAL;
    r.error.code_name = rdmamcast_errc_name(RDMAMCAST_E_ABI);
    r.error.message = r.message;
    r.error.field = "";
    r.error.sa_status_name = "";
    r.error.rule = "";
    r.error.quota = "";
    return &r.error;
}

} // namespace rdmamcast::detail

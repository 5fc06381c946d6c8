// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Conversions between the protocol's C++ types (proto/protocol.hpp) and the C API's structs.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "error_state.hpp"
#include "protocol.hpp"
#include "rdmamcast/client.h"

namespace rdmamcast::detail {

// Checks the caller's join parameters and builds the request. Returns 0, or a negative code
// with `error` describing the offending field.
int join_request_from_c(const rdmamcast_join_params *p, mcastd::proto::Join &out,
                        ErrorState &error);

rdmamcast_record record_to_c(const mcastd::McRecord &r);

// field:: bits of the daemon's "changed" list -> RDMAMCAST_FIELD_* bits.
std::uint32_t changed_to_c(std::uint64_t fields);

// Owns everything a C result tree points to; freed in one piece.
class Arena {
public:
    template <class T> T *make() {
        auto p = std::make_shared<T>(); // value-initialised: zeroed C structs
        T *raw = p.get();
        objects_.push_back(std::move(p));
        return raw;
    }
    template <class T> T **array(std::size_t n) {
        auto p = std::make_shared<std::vector<T *>>(n);
        T **raw = p->data();
        objects_.push_back(std::move(p));
        return raw;
    }
    const char *str(std::string s) {
        auto p = std::make_shared<std::string>(std::move(s));
        const char *raw = p->c_str();
        objects_.push_back(std::move(p));
        return raw;
    }
    // Keeps `p` alive as long as the arena.
    template <class T> T *adopt(std::shared_ptr<T> p) {
        T *raw = p.get();
        objects_.push_back(std::move(p));
        return raw;
    }
    // A copy of `v`; NULL when it is empty.
    template <class T> const T *values(std::vector<T> v) {
        if (v.empty())
            return nullptr;
        auto p = std::make_shared<std::vector<T>>(std::move(v));
        const T *raw = p->data();
        objects_.push_back(std::move(p));
        return raw;
    }

private:
    std::vector<std::shared_ptr<void>> objects_;
};

// The library's own event: the handle reconnected (RDMAMCAST_EVENT_RECONNECTED).
struct Reconnected {
    bool resumed = false;
    std::vector<std::uint64_t> kept, lost; // ascending
    std::uint32_t gap_ms = 0;
};

// The completion of a join: the result, or the error rdmamcast_join() would have reported.
struct JoinCompletion {
    std::uint64_t join_id = 0;
    void *context = nullptr;
    std::optional<mcastd::proto::JoinResult> result;
    std::shared_ptr<ErrorState> error; // set exactly when result is not
};

// What the handle queues for rdmamcast_next_event(): the daemon's events and its own.
using QueuedEvent = std::variant<mcastd::proto::Event, Reconnected, JoinCompletion>;

// Fills `ev` from `event`; its strings and arrays live in `arena`, which the caller keeps
// until the next event. A `stopping` event is not one: the handle turns it into an error.
void event_to_c(const QueuedEvent &event, rdmamcast_event &ev, Arena &arena);

// The result trees handed to callers: the public struct first, so the pointer the caller gets
// back converts to the holder (both are standard-layout).
struct ListHolder {
    rdmamcast_group_list pub;
    Arena *arena;
};
struct StatusHolder {
    rdmamcast_daemon_status pub;
    Arena *arena;
};

rdmamcast_group_list *list_to_c(const mcastd::proto::ListResult &list);
rdmamcast_daemon_status *status_to_c(const mcastd::proto::StatusResult &status);
void free_list(rdmamcast_group_list *list);
void free_status(rdmamcast_daemon_status *status);

} // namespace rdmamcast::detail

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The exported C entry points. Each one is an exception barrier: nothing C++ may cross into a
// C caller, so allocation failures and surprises become negative codes with a message.
#include <array>
#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "abi.hpp"
#include "client_impl.hpp"
#include "rdmamcast/client.h"

using rdmamcast::detail::ErrorState;
using rdmamcast::detail::Struct;
namespace proto = mcastd::proto;

namespace {

// rdmamcast_connect() has no handle to report through when it fails.
thread_local ErrorState connect_error;

template <class F> int guarded(ErrorState &error, F &&body) noexcept {
    try {
        try {
            return body();
        } catch (const std::bad_alloc &) {
            return error.set(RDMAMCAST_E_SYSTEM, -ENOMEM, "librdmamcast: out of memory");
        } catch (const std::exception &e) {
            return error.set(RDMAMCAST_E_SYSTEM, -EIO,
                             std::string("librdmamcast: unexpected failure: ") + e.what());
        }
    } catch (...) {
        return -ENOMEM; // setting the message itself failed
    }
}

int evict(rdmamcast_client &c, const proto::Evict &e, uint64_t *released, uint64_t *disconnected = nullptr) {
    proto::EvictResult result;
    if (int rc = c.decode_result(c.call(e), proto::decode_evict_result, result); rc < 0)
        return rc;
    if (released)
        *released = result.released;
    if (disconnected)
        *disconnected = result.disconnected;
    return 0;
}

// (uid_t)-1 is no uid; the daemon would refuse it too, but say so without a round trip.
int no_uid(rdmamcast_client &c, const char *what) {
    return c.error.set(RDMAMCAST_E_INVALID_ARGUMENT, -EINVAL,
                       std::string(what) + ": uid 4294967295 is (uid_t)-1, which no process has", "/uid");
}

// Checks the parameters and starts the join: its id, or a negative code with the error set.
std::int64_t start_join(rdmamcast_client &c, const rdmamcast_join_params *p, void *context,
                        bool sync) {
    c.error.clear();
    proto::Join request;
    if (int rc = rdmamcast::detail::join_request_from_c(p, request, c.error); rc < 0)
        return rc;
    return c.start_join(request, context, sync);
}

int list(rdmamcast_client *c, bool own, rdmamcast_group_list **out, const rdmamcast_sizes *sizes) {
    if (!c || !out)
        return -EINVAL;
    *out = nullptr;
    return guarded(c->error, [&] {
        c->error.clear();
        if (int rc = rdmamcast::detail::check_sizes(
                sizes, {Struct::group_list, Struct::port_groups, Struct::group, Struct::member},
                own ? "rdmamcast_list_own" : "rdmamcast_list", c->error);
            rc < 0)
            return rc;
        proto::ListResult result;
        if (int rc = c->list(own, result); rc < 0)
            return rc;
        *out = rdmamcast::detail::list_to_c(result);
        return 0;
    });
}

} // namespace

extern "C" {

const char *rdmamcast_version(void) { return RDMAMCAST_VERSION_STRING; }

int rdmamcast_connect(const char *path, rdmamcast_client **out) {
    if (!out)
        return -EINVAL;
    *out = nullptr;
    connect_error.clear();
    return guarded(connect_error, [&] {
        std::unique_ptr<rdmamcast_client> c;
        int rc = rdmamcast_client::open(path, c, connect_error);
        if (rc == 0)
            *out = c.release();
        return rc;
    });
}

void rdmamcast_close(rdmamcast_client *c) { delete c; }

const char *rdmamcast_socket_path(const rdmamcast_client *c) { return c ? c->path.c_str() : ""; }

unsigned rdmamcast_protocol_version(const rdmamcast_client *c) { return c ? c->version : 0; }

const char *rdmamcast_daemon_version(const rdmamcast_client *c) {
    return c ? c->daemon.c_str() : "";
}

const rdmamcast_error *rdmamcast_last_error_sized(const rdmamcast_client *c,
                                                  const rdmamcast_sizes *sizes) {
    return rdmamcast::detail::error_for(sizes, c ? c->error.get() : connect_error.get());
}

int rdmamcast_join(rdmamcast_client *c, const rdmamcast_join_params *p, rdmamcast_record *rec_out,
                   uint64_t *membership_out) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        // The asynchronous path, waiting for this join's own completion.
        const std::int64_t id = start_join(*c, p, nullptr, true);
        if (id < 0)
            return static_cast<int>(id);
        proto::JoinResult result;
        if (int rc = c->wait_join(static_cast<std::uint64_t>(id), result); rc < 0)
            return rc;
        if (rec_out)
            *rec_out = rdmamcast::detail::record_to_c(result.record);
        if (membership_out)
            *membership_out = result.membership;
        return 0;
    });
}

int rdmamcast_join_start(rdmamcast_client *c, const rdmamcast_join_params *p, void *context,
                         uint64_t *join_id_out) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        const std::int64_t id = start_join(*c, p, context, false);
        if (id < 0)
            return static_cast<int>(id);
        c->error.clear(); // a break met while sending is the completion's to report
        if (join_id_out)
            *join_id_out = static_cast<std::uint64_t>(id);
        return 0;
    });
}

int rdmamcast_join_cancel(rdmamcast_client *c, uint64_t join_id) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] { return c->cancel_join(join_id); });
}

int rdmamcast_leave(rdmamcast_client *c, uint64_t membership) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        proto::Leave leave;
        leave.membership = membership;
        c->leaving = membership;
        auto reply = c->call(leave);
        c->leaving.reset();
        const int *rc = std::get_if<int>(&reply);
        if (!rc || c->error.get()->code == RDMAMCAST_E_NOT_FOUND)
            c->left(membership);
        return rc ? *rc : 0;
    });
}

int rdmamcast_membership_netdev(rdmamcast_client *c, uint64_t membership, char *buf, size_t size) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        std::string name;
        if (int rc = c->netdev_of(membership, name); rc < 0)
            return rc;
        if (!buf || name.size() >= size)
            return c->error.set(RDMAMCAST_E_INVALID_ARGUMENT, -ERANGE,
                                "netdev: " + name + " needs " + std::to_string(name.size() + 1) +
                                    " bytes, the buffer has " + std::to_string(buf ? size : 0));
        std::memcpy(buf, name.c_str(), name.size() + 1);
        return static_cast<int>(name.size());
    });
}

int rdmamcast_monitor(rdmamcast_client *c, bool enable) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        auto reply = c->call(proto::Monitor{enable});
        const int *rc = std::get_if<int>(&reply);
        if (!rc)
            c->monitoring = enable;
        return rc ? *rc : 0;
    });
}

int rdmamcast_evict_uid(rdmamcast_client *c, uint32_t uid, uint64_t *released) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        c->error.clear();
        if (uid == UINT32_MAX)
            return no_uid(*c, "evict");
        return evict(*c, proto::Evict{uid, std::nullopt}, released);
    });
}

int rdmamcast_disconnect_uid(rdmamcast_client *c, uint32_t uid, uint64_t *released, uint64_t *disconnected) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        c->error.clear();
        if (uid == UINT32_MAX)
            return no_uid(*c, "disconnect");
        return evict(*c, proto::Evict{uid, std::nullopt, true}, released, disconnected);
    });
}

int rdmamcast_evict_membership(rdmamcast_client *c, uint64_t membership, uint64_t *released) {
    if (!c)
        return -EINVAL;
    return guarded(c->error,
                   [&] { return evict(*c, proto::Evict{std::nullopt, membership}, released); });
}

int rdmamcast_list_sized(rdmamcast_client *c, rdmamcast_group_list **out,
                         const rdmamcast_sizes *sizes) {
    return list(c, false, out, sizes);
}

int rdmamcast_list_own_sized(rdmamcast_client *c, rdmamcast_group_list **out,
                             const rdmamcast_sizes *sizes) {
    return list(c, true, out, sizes);
}

void rdmamcast_list_free(rdmamcast_group_list *list) { rdmamcast::detail::free_list(list); }

int rdmamcast_status_sized(rdmamcast_client *c, rdmamcast_daemon_status **out,
                           const rdmamcast_sizes *sizes) {
    if (!c || !out)
        return -EINVAL;
    *out = nullptr;
    return guarded(c->error, [&] {
        c->error.clear();
        if (int rc = rdmamcast::detail::check_sizes(
                sizes,
                {Struct::daemon_status, Struct::counters, Struct::port_status, Struct::rejoin,
                 Struct::port_sa, Struct::user_usage, Struct::refusal},
                "rdmamcast_status", c->error);
            rc < 0)
            return rc;
        proto::StatusResult result;
        if (int rc = c->decode_result(c->call(proto::Status{}), proto::decode_status_result,
                                      result);
            rc < 0)
            return rc;
        *out = rdmamcast::detail::status_to_c(result);
        return 0;
    });
}

void rdmamcast_status_free(rdmamcast_daemon_status *status) { rdmamcast::detail::free_status(status); }

int rdmamcast_set_reconnect(rdmamcast_client *c, int enable, unsigned timeout_ms) {
    if (!c)
        return -EINVAL;
    return guarded(c->error, [&] {
        c->set_reconnect(enable != 0, timeout_ms);
        return 0;
    });
}

int rdmamcast_event_fd(const rdmamcast_client *c) { return c ? c->epoll.get() : -EINVAL; }

int rdmamcast_next_event_sized(rdmamcast_client *c, rdmamcast_event *ev,
                               const rdmamcast_sizes *sizes) {
    if (!c || !ev)
        return -EINVAL;
    return guarded(c->error, [&] {
        c->error.clear();
        if (int rc = rdmamcast::detail::check_sizes(
                sizes, {Struct::event, Struct::record, Struct::error}, "rdmamcast_next_event",
                c->error);
            rc < 0)
            return rc;
        return c->next_event(*ev);
    });
}

const char *rdmamcast_join_state_name(uint8_t join_state) {
    // Built once (thread-safe static init) so that callers get static strings.
    static const std::array<std::string, 16> names = [] {
        std::array<std::string, 16> n;
        for (std::uint8_t bits = 0; bits < 16; ++bits)
            n[bits] = mcastd::join_state_name(bits);
        return n;
    }();
    return join_state < 16 ? names[join_state].c_str() : "invalid";
}

int rdmamcast_join_state_parse(const char *name, uint8_t *join_state) {
    if (!name || !join_state)
        return -EINVAL;
    auto bits = proto::join_state_from_name(name);
    if (!bits)
        return -EINVAL;
    *join_state = *bits;
    return 0;
}

double rdmamcast_rate_gbps(uint8_t rate) { return mcastd::rate_mbps(rate) / 1000.0; }

// ---- the entry points of programs built before RDMAMCAST_1.5 ----
// They passed no sizes: theirs are those of the 1.4 headers, which are this library's or
// smaller (structures only grow; abi.cpp), so they are served as this library's own.

const rdmamcast_error *rdmamcast_last_error(const rdmamcast_client *c) {
    return rdmamcast_last_error_sized(c, rdmamcast_compiled_sizes());
}

int rdmamcast_next_event(rdmamcast_client *c, rdmamcast_event *ev) {
    return rdmamcast_next_event_sized(c, ev, rdmamcast_compiled_sizes());
}

int rdmamcast_list(rdmamcast_client *c, rdmamcast_group_list **out) {
    return rdmamcast_list_sized(c, out, rdmamcast_compiled_sizes());
}

int rdmamcast_list_own(rdmamcast_client *c, rdmamcast_group_list **out) {
    return rdmamcast_list_own_sized(c, out, rdmamcast_compiled_sizes());
}

int rdmamcast_status(rdmamcast_client *c, rdmamcast_daemon_status **out) {
    return rdmamcast_status_sized(c, out, rdmamcast_compiled_sizes());
}

} // extern "C"

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "client_impl.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <thread>
#include <utility>

#include "common/roce_address.hpp"

using rdmamcast::detail::ErrorState;
namespace proto = mcastd::proto;

namespace {

// The name the daemon logs us under. The daemon learns who we are from SO_PEERCRED and /proc;
// this is only a label, so anything outside printable ASCII is replaced rather than rejected.
std::string client_name() {
    std::string name = program_invocation_short_name ? program_invocation_short_name : "";
    if (name.size() > proto::kMaxClientName)
        name.resize(proto::kMaxClientName);
    for (char &ch : name)
        if (ch < ' ' || ch > '~')
            ch = '?';
    return name.empty() ? "librdmamcast" : name;
}

std::string resolve_path(const char *path) {
    if (path)
        return path;
    const char *env = std::getenv(RDMAMCAST_SOCKET_ENV);
    return env && *env ? env : RDMAMCAST_DEFAULT_SOCKET;
}

std::string connect_hint(int err) {
    switch (-err) {
    case ENOENT:
    case ECONNREFUSED: return " (is rdma-mcastd running?)";
    case EACCES: return " (the socket's permissions do not admit this user)";
    default: return "";
    }
}

// The C++ clock's milliseconds as the event carries them.
std::uint32_t millis(std::chrono::steady_clock::duration d) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    return ms < 0 ? 0 : ms > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(ms);
}

// Adds `fd` to the epoll set for POLLIN. 0 or -errno.
int watch(int epoll, int fd) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    return ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &e) < 0 ? -errno : 0;
}

constexpr const char *kClosed = "rdma-mcastd closed the connection";

} // namespace

int rdmamcast_client::open(const char *path, std::unique_ptr<rdmamcast_client> &out,
                           ErrorState &error) {
    auto c = std::make_unique<rdmamcast_client>();
    c->path = resolve_path(path);
    if (int rc = rdmamcast::detail::connect_unix(c->path, c->sock); rc < 0)
        return error.set(RDMAMCAST_E_SYSTEM, rc,
                         "connect to " + c->path + ": " + std::strerror(-rc) + connect_hint(rc));
    if (int rc = c->setup_event_fd(); rc < 0)
        return error.set_errno(rc, "event descriptor");
    proto::HelloResult result;
    if (int rc = c->hello(std::nullopt, result); rc < 0) {
        error.assign(c->error);
        return rc;
    }
    c->error.clear();
    out = std::move(c);
    return 0;
}

int rdmamcast_client::setup_event_fd() {
    wake = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake)
        return -errno;
    epoll = Fd(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll)
        return -errno;
    for (int fd : {sock.get(), wake.get()})
        if (int rc = watch(epoll.get(), fd); rc < 0)
            return rc;
    return 0;
}

int rdmamcast_client::hello(const std::optional<proto::SessionTicket> &resume,
                            proto::HelloResult &result) {
    proto::Hello h;
    h.versions.assign(proto::kVersions.begin(), proto::kVersions.end());
    h.client = client_name();
    h.resume = resume;
    bool sent = false;
    auto reply = exchange(h, sent);
    if (const int *rc = std::get_if<int>(&reply)) {
        if (error.get()->code == RDMAMCAST_E_UNSUPPORTED_VERSION) {
            std::string served;
            for (std::size_t i = 0; i < error.get()->num_versions; ++i)
                served += (i ? ", " : "") + std::to_string(error.get()->versions[i]);
            error.append_message(" (this librdmamcast speaks protocol version " +
                                 std::to_string(proto::kVersion) + "; the daemon serves " +
                                 (served.empty() ? "none" : served) + ")");
        }
        return *rc;
    }
    if (int rc = decode_result(reply, proto::decode_hello_result, result); rc < 0)
        return rc;
    if (std::find(proto::kVersions.begin(), proto::kVersions.end(), result.version) == proto::kVersions.end())
        return mark_dead(RDMAMCAST_E_PROTOCOL, -EPROTO,
                         "the daemon chose protocol version " + std::to_string(result.version) +
                             ", which this librdmamcast did not offer");
    version = result.version;
    daemon = result.daemon;
    // Only a version 2 session can be resumed; a daemon that went back to version 1 has none.
    ticket = version >= 2 ? result.session : std::nullopt;
    return 0;
}

std::variant<mcastd::json_check::OwnedValue, int> rdmamcast_client::call(
    const proto::Request &request) {
    error.clear();
    for (bool first = true;; first = false) {
        if (dead)
            return fail_dead();
        if (broken) {
            if (int rc = reconnect(); rc < 0)
                return rc;
            error.clear();
        }
        bool sent = false;
        auto reply = exchange(request, sent);
        if (!std::holds_alternative<int>(reply) || !broken)
            return reply;
        // The connection broke under this call. A request that never left is sent again on
        // the new connection (once: a daemon that keeps dropping us gets the error back).
        if (!sent && first)
            continue;
        if (!sent)
            return reply;
        if (int rc = reconnect(); rc < 0)
            return rc;
        return error.set(RDMAMCAST_E_DISCONNECTED, -ECONNRESET,
                         "rdma-mcastd restarted while the request was in flight, so its outcome "
                         "is unknown; the connection is back");
    }
}

std::variant<mcastd::json_check::OwnedValue, int>
rdmamcast_client::exchange(const proto::Request &request, bool &sent) {
    sent = false;
    if (dead)
        return fail_dead();
    const std::uint64_t id = next_id++;
    if (int rc = rdmamcast::detail::send_message(sock.get(), proto::encode_request(id, request));
        rc < 0) {
        if (rdmamcast::detail::is_disconnect(rc))
            return connection_lost(rc, kClosed);
        return error.set_errno(rc, "send to " + path);
    }
    sent = true;
    for (;;) {
        proto::Reply reply;
        int rc = receive(false, reply);
        if (rc < 0)
            return rc;
        if (rc == 0)
            continue; // an event, now queued
        // A reply without an id answers a request the daemon could not read; joins are the
        // only other requests in flight, and they are always readable, so it is ours. Another
        // id is a join's (completed here) or nobody's.
        if (reply.id && *reply.id != id) {
            route_reply(reply);
            continue;
        }
        if (auto *failure = std::get_if<proto::Failure>(&reply.body))
            return error.set_failure(*failure);
        return std::move(std::get<mcastd::json_check::OwnedValue>(reply.body));
    }
}

int rdmamcast_client::receive(bool dontwait, proto::Reply &reply) {
    std::string message;
    int rc = rdmamcast::detail::recv_message(sock.get(), dontwait, message);
    if (rc == -EAGAIN)
        return rc;
    if (rc == -ECONNRESET)
        return connection_lost(rc, kClosed);
    if (rc == -EMSGSIZE)
        return mark_dead(RDMAMCAST_E_PROTOCOL, -EPROTO,
                         "rdma-mcastd sent a message longer than " +
                             std::to_string(rdmamcast::detail::kMaxIncomingBytes) + " bytes");
    if (rc < 0) {
        std::string what = std::string("receive from rdma-mcastd: ") + std::strerror(-rc);
        if (rdmamcast::detail::is_disconnect(rc))
            return connection_lost(rc, std::move(what));
        return mark_dead(RDMAMCAST_E_SYSTEM, rc, std::move(what));
    }

    auto incoming = proto::decode_incoming(message);
    if (auto *e = std::get_if<mcastd::Error>(&incoming))
        return mark_dead(RDMAMCAST_E_PROTOCOL, -EPROTO, e->message); // names the daemon
    auto &in = std::get<proto::Incoming>(incoming);
    if (auto *r = std::get_if<proto::Reply>(&in)) {
        reply = std::move(*r);
        return 1;
    }
    if (std::holds_alternative<proto::UnknownEvent>(in))
        return 0; // a newer daemon's event: this library has nothing to say of it
    auto &event = std::get<proto::Event>(in);
    // Stopping for good: the connection closes next and must not be made again.
    if (const auto *s = std::get_if<proto::StoppingEvent>(&event))
        return mark_dead(RDMAMCAST_E_DISCONNECTED, -ECONNRESET,
                         "rdma-mcastd stopped" + (s->message.empty() ? "" : ": " + s->message));
    if (const auto *r = std::get_if<proto::RestoredEvent>(&event); r && held.count(r->membership))
        joined(r->membership, r->record); // its netdev may have changed
    push_event(std::move(event));
    return 0;
}

void rdmamcast_client::push_event(rdmamcast::detail::QueuedEvent event) {
    queue.push_back(std::move(event));
    if (!in_next_event)
        set_wake(true);
}

void rdmamcast_client::set_wake(bool readable) {
    if (readable == wake_readable)
        return;
    wake_readable = readable;
    std::uint64_t count = 1;
    // Cannot fail short of a counter overflow, which a 0/1 counter never reaches; a read of
    // a readable eventfd does not fail either.
    [[maybe_unused]] ssize_t n = readable ? ::write(wake.get(), &count, sizeof count)
                                          : ::read(wake.get(), &count, sizeof count);
}

int rdmamcast_client::next_event(rdmamcast_event &ev) {
    error.clear();
    // An event read from the socket and handed out in the same call needs no wake-up: the
    // caller is here already. What stays queued when this returns makes `wake` readable.
    in_next_event = true;
    struct Leave {
        rdmamcast_client &c;
        ~Leave() {
            c.in_next_event = false;
            if (!c.queue.empty())
                c.set_wake(true);
        }
    } leave{*this};
    for (;;) {
        if (!queue.empty()) {
            event_strings = rdmamcast::detail::Arena{};
            rdmamcast::detail::event_to_c(queue.front(), ev, event_strings);
            queue.pop_front();
            if (queue.empty())
                set_wake(false);
            error.clear();
            return 0;
        }
        if (dead)
            return fail_dead();
        if (broken) {
            // Blocks with the backoff; then the RECONNECTED event is queued.
            if (int rc = reconnect(); rc < 0)
                return rc;
            continue;
        }
        proto::Reply stray;
        int rc = receive(true, stray);
        // A connection that died just now completed the joins it had: those come first.
        if (rc < 0 && !broken && queue.empty())
            return rc;
        // rc == 1: a join's reply (completed, now queued), or one nobody waits for (dropped).
        if (rc == 1)
            route_reply(stray);
    }
}

int rdmamcast_client::list(bool own, proto::ListResult &out) {
    out = {};
    proto::List request{own, std::nullopt};
    for (;;) {
        proto::ListResult page;
        if (int rc = decode_result(call(request), proto::decode_list_result, page); rc < 0)
            return rc;
        proto::append_list_page(out, std::move(page));
        if (!out.next)
            return 0;
        // A daemon that pages must get somewhere each time, or the loop would never end.
        if (out.next == request.after)
            return error.set(RDMAMCAST_E_PROTOCOL, -EPROTO,
                             "rdma-mcastd returned list cursor \"" + *out.next +
                                 "\" for the page after itself; the list would never end");
        request.after = std::exchange(out.next, std::nullopt);
    }
}

int rdmamcast_client::mark_dead(rdmamcast_errc code, int err, std::string message) {
    dead = err;
    dead_code = code;
    dead_message = std::move(message);
    fail_joins(true, code, err, dead_message);
    return error.set(code, err, dead_message);
}

int rdmamcast_client::fail_dead() { return error.set(dead_code, dead, dead_message); }

// ---- reconnecting ----

void rdmamcast_client::set_reconnect(bool enable, unsigned timeout_ms) {
    reconnect_enabled = enable;
    reconnect_timeout =
        std::chrono::milliseconds(timeout_ms ? timeout_ms : RDMAMCAST_RECONNECT_TIMEOUT_MS);
    if (!enable && broken && !dead)
        mark_dead(RDMAMCAST_E_DISCONNECTED, -ECONNRESET, kClosed);
    error.clear();
}

int rdmamcast_client::connection_lost(int err, std::string message) {
    if (!may_reconnect())
        return mark_dead(RDMAMCAST_E_DISCONNECTED, err, std::move(message));
    if (!broken) {
        broken = true;
        broken_since = Clock::now();
        fail_joins(false, RDMAMCAST_E_DISCONNECTED, -ECONNRESET,
                   "rdma-mcastd restarted while the join was in flight, so its outcome is "
                   "unknown; a membership it made is left once the connection is back: start "
                   "the join again");
    }
    return error.set(RDMAMCAST_E_DISCONNECTED, err, std::move(message));
}

int rdmamcast_client::reconnect() {
    using std::chrono::milliseconds;
    const auto deadline = broken_since + reconnect_timeout;
    std::minstd_rand jitter(static_cast<std::uint_fast32_t>(
        Clock::now().time_since_epoch().count() ^ reinterpret_cast<std::uintptr_t>(this)));
    std::uniform_real_distribution<double> spread(0.8, 1.2);
    milliseconds delay(50);
    bool resume = true;
    std::string why;
    for (;;) {
        if (int rc = reconnect_once(resume, why); rc <= 0)
            return rc;
        const auto now = Clock::now();
        if (now >= deadline)
            break;
        const auto pause = std::chrono::duration_cast<Clock::duration>(delay * spread(jitter));
        std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
        delay = std::min(delay * 2, milliseconds(2000));
    }
    return mark_dead(RDMAMCAST_E_DISCONNECTED, -ECONNRESET,
                     std::string(kClosed) + " and did not come back within " +
                         std::to_string(reconnect_timeout.count()) + " ms (" + why + ")");
}

int rdmamcast_client::reconnect_once(bool &resume, std::string &why) {
    Fd fresh;
    if (int rc = rdmamcast::detail::connect_unix(path, fresh); rc < 0) {
        why = "connect to " + path + ": " + std::strerror(-rc);
        return 1;
    }
    if (int rc = swap_socket(std::move(fresh)); rc < 0)
        return mark_dead(RDMAMCAST_E_SYSTEM, rc,
                         std::string("event descriptor: ") + std::strerror(-rc));
    proto::HelloResult result;
    const bool resuming = resume && ticket;
    if (int rc = hello(resuming ? ticket : std::nullopt, result); rc < 0) {
        if (dead)
            return rc;
        const rdmamcast_error *e = error.get();
        why = e->message;
        if (e->code == RDMAMCAST_E_DISCONNECTED)
            return 1; // closed again: the daemon is still on its way up or down
        if (resuming && std::string_view(e->field) == "/resume") {
            // A daemon that does not know sessions (version 1 only): a plain hello, at once.
            resume = false;
            return reconnect_once(resume, why);
        }
        return mark_dead(RDMAMCAST_E_DISCONNECTED, -ECONNRESET,
                         "rdma-mcastd restarted and refused the new connection: " +
                             std::string(e->code_name) + ": " + why);
    }
    take_session(result, resuming);
    return 0;
}

int rdmamcast_client::swap_socket(Fd fresh) {
    if (sock)
        (void)::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, sock.get(), nullptr);
    sock = std::move(fresh);
    return watch(epoll.get(), sock.get());
}

void rdmamcast_client::take_session(const proto::HelloResult &result, bool resuming) {
    rdmamcast::detail::Reconnected ev;
    ev.resumed = resuming && result.resumed.value_or(false);
    ev.gap_ms = millis(Clock::now() - broken_since);
    broken = false;

    const std::set<std::uint64_t> back =
        ev.resumed ? std::set<std::uint64_t>(result.memberships.begin(), result.memberships.end())
                   : std::set<std::uint64_t>{};
    for (std::uint64_t m : held) {
        if (back.count(m))
            ev.kept.push_back(m);
        else if (m != leaving) // a leave in flight that took effect is not a loss
            ev.lost.push_back(m);
    }
    std::vector<std::uint64_t> unknown;
    for (std::uint64_t m : back)
        if (!held.count(m))
            unknown.push_back(m);
    held = std::set<std::uint64_t>(ev.kept.begin(), ev.kept.end());
    for (std::uint64_t m : ev.lost)
        netdevs.erase(m);
    const bool renew_monitor = monitoring && !ev.resumed;
    push_event(std::move(ev)); // before anything the new connection brings

    // A join whose reply the break swallowed: its id never reached the application, so
    // nobody could ever leave it.
    bool sent = false;
    for (std::uint64_t m : unknown) {
        proto::Leave leave;
        leave.membership = m;
        (void)exchange(leave, sent);
    }
    if (renew_monitor)
        (void)exchange(proto::Monitor{true}, sent);
    send_joins(); // the ones that never left
    error.clear(); // what failed here is not the caller's call's error
}

// ---- joins ----

std::int64_t rdmamcast_client::start_join(const proto::Join &request, void *context,
                                          bool sync) {
    if (dead)
        return fail_dead();
    const std::uint64_t id = next_join_id++;
    joins.emplace(id, PendingJoin{request, context, sync, 0});
    unsent.push_back(id);
    if (broken) {
        // Made again by the next call; rdmamcast_next_event() must get to run for that.
        set_wake(true);
    }
    send_joins();
    return static_cast<std::int64_t>(id);
}

void rdmamcast_client::send_joins() {
    while (!unsent.empty() && in_flight.size() < RDMAMCAST_JOIN_WINDOW && !broken && !dead) {
        const std::uint64_t join_id = unsent.front();
        PendingJoin &j = joins.at(join_id);
        Fd membership;
        if (int rc = membership_socket(j.request, membership); rc < 0) {
            unsent.pop_front();
            fail_join(join_id, RDMAMCAST_E_SYSTEM, rc,
                      "the socket for the host's membership of the group on RoCE port " +
                          j.request.request.device + "/" + std::to_string(j.request.request.port) +
                          ": " + std::strerror(-rc));
            continue;
        }
        const std::uint64_t wire = next_id++;
        // The socket goes with the request or not at all; ours closes here either way.
        int rc = rdmamcast::detail::send_message(sock.get(), proto::encode_request(wire, j.request),
                                                 membership ? membership.get() : -1);
        if (rc < 0 && rdmamcast::detail::is_disconnect(rc)) {
            // Still queued: it goes out on the next connection (or fails with the handle).
            connection_lost(rc, kClosed);
            return;
        }
        unsent.pop_front();
        if (rc < 0) {
            fail_join(join_id, RDMAMCAST_E_SYSTEM, rc,
                      "send to " + path + ": " + std::strerror(-rc));
            continue;
        }
        j.wire_id = wire;
        in_flight.emplace(wire, join_id);
    }
}

int rdmamcast_client::membership_socket(const proto::Join &join, Fd &out) const {
    const mcastd::JoinRequest &r = join.request;
    if (!mcastd::holds_ip_membership(r.join_state))
        return 0;
    const auto known = link_layers.find({r.device, r.port});
    if (known != link_layers.end() && known->second == mcastd::LinkLayer::infiniband)
        return 0;
    // The group's family: an IPv4 group given as such, or by one of its two MGIDs.
    const auto group = join.ip ? join.ip : mcastd::roce_ip_group(r.mgid);
    out = Fd(::socket(group && group->is_v4() ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    return !out && known != link_layers.end() ? -errno : 0;
}

void rdmamcast_client::joined(std::uint64_t membership, const mcastd::McRecord &record) {
    held.insert(membership);
    if (record.link_layer == mcastd::LinkLayer::ethernet)
        netdevs[membership] = record.netdev;
    else
        netdevs.erase(membership);
}

int rdmamcast_client::netdev_of(std::uint64_t membership, std::string &out) {
    error.clear();
    if (!held.count(membership))
        return error.set(RDMAMCAST_E_NOT_FOUND, -ENOENT,
                         "netdev: this handle holds no membership " + std::to_string(membership));
    const auto it = netdevs.find(membership);
    if (it == netdevs.end())
        return error.set(RDMAMCAST_E_INVALID_ARGUMENT, -ENODATA,
                         "netdev: membership " + std::to_string(membership) +
                             " is on an InfiniBand port, which has no netdev");
    out = it->second;
    return 0;
}

bool rdmamcast_client::route_reply(proto::Reply &reply) {
    auto it = in_flight.end();
    if (reply.id) {
        it = in_flight.find(*reply.id);
    } else if (!in_flight.empty()) {
        // A request the daemon could not read. A join never is one in practice (it is far
        // below the smallest limits.max_message_bytes), so this is a daemon in trouble: charge
        // the oldest join in flight, the one it most likely choked on, rather than let it hang.
        it = std::min_element(in_flight.begin(), in_flight.end(),
                              [](const auto &a, const auto &b) { return a.first < b.first; });
    }
    if (it == in_flight.end())
        return false;
    const std::uint64_t join_id = it->second;
    const PendingJoin &j = joins.at(join_id);
    rdmamcast::detail::JoinCompletion done;
    done.join_id = join_id;
    done.context = j.context;
    if (auto *failure = std::get_if<proto::Failure>(&reply.body)) {
        done.error = std::make_shared<ErrorState>();
        done.error->set_failure(*failure);
    } else {
        auto decoded = proto::decode_join_result(std::get<mcastd::json_check::OwnedValue>(reply.body).get());
        if (auto *e = std::get_if<mcastd::Error>(&decoded)) {
            done.error = std::make_shared<ErrorState>();
            done.error->set(RDMAMCAST_E_PROTOCOL, -EPROTO, e->message);
        } else {
            done.result = std::move(std::get<proto::JoinResult>(decoded));
            joined(done.result->membership, done.result->record);
            link_layers[{j.request.request.device, j.request.request.port}] = done.result->record.link_layer;
        }
    }
    complete(join_id, std::move(done));
    return true;
}

void rdmamcast_client::complete(std::uint64_t join_id, rdmamcast::detail::JoinCompletion done) {
    auto it = joins.find(join_id);
    if (it == joins.end())
        return;
    const bool sync = it->second.sync;
    if (it->second.wire_id)
        in_flight.erase(it->second.wire_id);
    else
        unsent.erase(std::remove(unsent.begin(), unsent.end(), join_id), unsent.end());
    joins.erase(it);
    if (sync)
        sync_done = std::move(done);
    else
        push_event(std::move(done));
    send_joins();
}

void rdmamcast_client::fail_join(std::uint64_t join_id, rdmamcast_errc code, int err,
                                 const std::string &message) {
    auto it = joins.find(join_id);
    if (it == joins.end())
        return;
    rdmamcast::detail::JoinCompletion done;
    done.join_id = join_id;
    done.context = it->second.context;
    done.error = std::make_shared<ErrorState>();
    done.error->set(code, err, message);
    complete(join_id, std::move(done));
}

void rdmamcast_client::fail_joins(bool also_unsent, rdmamcast_errc code, int err,
                                  const std::string &message) {
    std::vector<std::uint64_t> ids;
    for (const auto &[id, j] : joins)
        if (j.wire_id || also_unsent)
            ids.push_back(id);
    for (std::uint64_t id : ids)
        fail_join(id, code, err, message);
}

int rdmamcast_client::wait_join(std::uint64_t join_id, proto::JoinResult &result) {
    for (;;) {
        if (sync_done && sync_done->join_id == join_id) {
            // Sent, then the connection broke: the handle is made usable again first, as
            // call() does, and the join reports the unknown outcome.
            if (broken && !dead && !sync_done->result)
                (void)reconnect();
            auto done = std::move(*sync_done);
            sync_done.reset();
            if (done.result) {
                result = std::move(*done.result);
                error.clear();
                return 0;
            }
            error.assign(*done.error);
            return error.get()->err;
        }
        if (dead) // mark_dead completed it: not reached
            return fail_dead();
        if (broken) {
            (void)reconnect(); // success sends it (it was queued), failure completes it
            continue;
        }
        send_joins();
        proto::Reply reply;
        if (receive(false, reply) == 1)
            route_reply(reply); // other replies (none: this is the only caller) are dropped
    }
}

int rdmamcast_client::cancel_join(std::uint64_t join_id) {
    error.clear();
    auto it = joins.find(join_id);
    if (it == joins.end() || it->second.sync)
        return error.set(RDMAMCAST_E_NOT_FOUND, -ENOENT,
                         "cancel: join " + std::to_string(join_id) +
                             " is not waiting on this handle: it completed (its completion says "
                             "how) or was never started");
    if (!it->second.wire_id) {
        rdmamcast::detail::JoinCompletion done;
        done.join_id = join_id;
        done.context = it->second.context;
        done.error = std::make_shared<ErrorState>();
        done.error->set(RDMAMCAST_E_CANCELLED, -ECANCELED,
                        "the join was cancelled before it was sent to rdma-mcastd");
        complete(join_id, std::move(done));
        return 0;
    }
    proto::Leave leave;
    leave.join = it->second.wire_id;
    auto reply = call(leave);
    if (const int *rc = std::get_if<int>(&reply)) {
        if (error.get()->code == RDMAMCAST_E_NOT_FOUND)
            return error.set(RDMAMCAST_E_NOT_FOUND, -ENOENT,
                             "cancel: join " + std::to_string(join_id) +
                                 " completed before the cancel reached rdma-mcastd; its "
                                 "completion says how");
        return *rc;
    }
    return 0;
}

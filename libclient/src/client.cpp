#include "client_impl.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <thread>

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

std::variant<std::string, int> rdmamcast_client::call(const proto::Request &request) {
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

std::variant<std::string, int> rdmamcast_client::exchange(const proto::Request &request,
                                                          bool &sent) {
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
        // A reply without an id answers a request the daemon could not read; with one request
        // in flight at a time that can only be ours. Any other id is not ours to handle.
        if (reply.id && *reply.id != id)
            continue;
        if (auto *failure = std::get_if<proto::Failure>(&reply.body))
            return error.set_failure(*failure);
        return std::move(std::get<std::string>(reply.body));
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
    auto &event = std::get<proto::Event>(in);
    // Stopping for good: the connection closes next and must not be made again.
    if (const auto *s = std::get_if<proto::StoppingEvent>(&event))
        return mark_dead(RDMAMCAST_E_DISCONNECTED, -ECONNRESET,
                         "rdma-mcastd stopped" + (s->message.empty() ? "" : ": " + s->message));
    push_event(std::move(event));
    return 0;
}

void rdmamcast_client::push_event(rdmamcast::detail::QueuedEvent event) {
    const bool was_empty = queue.empty();
    queue.push_back(std::move(event));
    if (was_empty) {
        const std::uint64_t one = 1;
        // Cannot fail short of a counter overflow, which a 0/1 counter never reaches.
        [[maybe_unused]] ssize_t n = ::write(wake.get(), &one, sizeof one);
    }
}

int rdmamcast_client::next_event(rdmamcast_event &ev) {
    error.clear();
    for (;;) {
        if (!queue.empty()) {
            event_strings = rdmamcast::detail::Arena{};
            rdmamcast::detail::event_to_c(queue.front(), ev, event_strings);
            queue.pop_front();
            if (queue.empty()) {
                std::uint64_t count;
                [[maybe_unused]] ssize_t n = ::read(wake.get(), &count, sizeof count);
            }
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
        if (int rc = receive(true, stray); rc < 0 && !broken)
            return rc;
        // rc == 1: a reply nobody waits for (see call()); dropped.
    }
}

int rdmamcast_client::mark_dead(rdmamcast_errc code, int err, std::string message) {
    dead = err;
    dead_code = code;
    dead_message = std::move(message);
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
    error.clear(); // what failed here is not the caller's call's error
}

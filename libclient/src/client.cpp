#include "client_impl.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

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
    if (int rc = c->hello(); rc < 0) {
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
    for (int fd : {sock.get(), wake.get()}) {
        epoll_event e{};
        e.events = EPOLLIN;
        e.data.fd = fd;
        if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &e) < 0)
            return -errno;
    }
    return 0;
}

int rdmamcast_client::hello() {
    proto::Hello h;
    h.versions.assign(proto::kVersions.begin(), proto::kVersions.end());
    h.client = client_name();
    auto reply = call(h);
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
    proto::HelloResult result;
    if (int rc = decode_result(reply, proto::decode_hello_result, result); rc < 0)
        return rc;
    if (std::find(proto::kVersions.begin(), proto::kVersions.end(), result.version) == proto::kVersions.end())
        return mark_dead(RDMAMCAST_E_PROTOCOL, -EPROTO,
                         "the daemon chose protocol version " + std::to_string(result.version) +
                             ", which this librdmamcast did not offer");
    version = result.version;
    daemon = result.daemon;
    return 0;
}

std::variant<std::string, int> rdmamcast_client::call(const proto::Request &request) {
    error.clear();
    if (dead)
        return fail_dead();
    const std::uint64_t id = next_id++;
    if (int rc = rdmamcast::detail::send_message(sock.get(), proto::encode_request(id, request));
        rc < 0) {
        if (rdmamcast::detail::is_disconnect(rc))
            return mark_dead(RDMAMCAST_E_DISCONNECTED, rc, "rdma-mcastd closed the connection");
        return error.set_errno(rc, "send to " + path);
    }
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
        return mark_dead(RDMAMCAST_E_DISCONNECTED, rc, "rdma-mcastd closed the connection");
    if (rc == -EMSGSIZE)
        return mark_dead(RDMAMCAST_E_PROTOCOL, -EPROTO,
                         "rdma-mcastd sent a message longer than " +
                             std::to_string(rdmamcast::detail::kMaxIncomingBytes) + " bytes");
    if (rc < 0)
        return mark_dead(rdmamcast::detail::is_disconnect(rc) ? RDMAMCAST_E_DISCONNECTED
                                                              : RDMAMCAST_E_SYSTEM,
                         rc, std::string("receive from rdma-mcastd: ") + std::strerror(-rc));

    auto incoming = proto::decode_incoming(message);
    if (auto *e = std::get_if<mcastd::Error>(&incoming))
        return mark_dead(RDMAMCAST_E_PROTOCOL, -EPROTO, e->message); // names the daemon
    auto &in = std::get<proto::Incoming>(incoming);
    if (auto *r = std::get_if<proto::Reply>(&in)) {
        reply = std::move(*r);
        return 1;
    }
    push_event(std::move(std::get<proto::Event>(in)));
    return 0;
}

void rdmamcast_client::push_event(proto::Event event) {
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
        proto::Reply stray;
        if (int rc = receive(true, stray); rc < 0)
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

#include "server/socket_server.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <variant>

#include "proto/protocol.hpp"
#include "views.hpp"

namespace mcastd::server {

namespace {

template <class... Fs> struct overloaded : Fs... { using Fs::operator()...; };
template <class... Fs> overloaded(Fs...) -> overloaded<Fs...>;

proto::Failure failure(Errc code, std::string message, std::string field = {}) {
    return proto::Failure{Error{code, std::move(message), {}}, std::move(field), {}};
}

const char *note_kind(EngineNote::Kind k) {
    switch (k) {
    case EngineNote::Kind::joined: return "joined";
    case EngineNote::Kind::left: return "left";
    case EngineNote::Kind::join_failed: return "join-failed";
    case EngineNote::Kind::sa_left: return "deleted";
    case EngineNote::Kind::lost: return "lost";
    case EngineNote::Kind::restored: return "restored";
    case EngineNote::Kind::warning: return "warning";
    }
    return "warning";
}

} // namespace

// ---- one client connection ----

class SocketServer::Session {
public:
    Session(SocketServer &srv, int fd, Peer peer) : srv_(srv), fd_(fd), peer_(std::move(peer)) {
        client_ = srv_.service_.add_client(ClientInfo{peer_.pid, peer_.uid, peer_.gid, peer_.comm}, &srv_);
        io_ = srv_.clients_io_.watch(fd_, EPOLLIN, [this](std::uint32_t ev) { on_io(ev); });
        buf_.resize(srv_.limits_.max_message_bytes);
    }

    ~Session() {
        set_monitor(false);
        io_.reset();
        // Releases every membership of this client, exactly as if each had been left.
        srv_.service_.remove_client(client_);
        ::close(fd_);
    }

    ClientId client() const { return client_; }

    // The server counts subscribers so that a join costs nothing extra when nobody watches.
    void set_monitor(bool on) {
        if (on != monitor_)
            srv_.monitors_ += on ? 1 : -1;
        monitor_ = on;
    }
    bool monitoring() const { return monitor_ && !closing_; }
    const Peer &peer() const { return peer_; }

    void send(std::string msg) {
        if (closing_)
            return;
        if (out_.empty() && try_send(msg))
            return;
        if (closing_)
            return;
        out_bytes_ += msg.size();
        out_.push_back(std::move(msg));
        if (out_bytes_ > srv_.limits_.max_queued_bytes) {
            spdlog::warn("client pid {} ({}) does not read its replies ({} bytes queued); disconnecting",
                         peer_.pid, peer_.comm, out_bytes_);
            close();
            return;
        }
        io_.set_events(EPOLLIN | EPOLLOUT);
    }

private:
    // False: could not send now (queue it). On a fatal error the session closes.
    bool try_send(const std::string &msg) {
        if (::send(fd_, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
            return true;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return false;
        if (errno != EPIPE && errno != ECONNRESET)
            spdlog::warn("client pid {} ({}): send: {}", peer_.pid, peer_.comm, std::strerror(errno));
        close();
        return false;
    }

    void close() {
        if (closing_)
            return;
        closing_ = true;
        io_.reset();
        // Not from inside our own callback: the loop runs it next.
        SocketServer &srv = srv_;
        const int fd = fd_;
        srv.loop_.post([&srv, fd] { srv.close_session(fd); });
    }

    void on_io(std::uint32_t events) {
        if (events & EPOLLOUT) {
            while (!out_.empty() && try_send(out_.front())) {
                out_bytes_ -= out_.front().size();
                out_.pop_front();
            }
            if (closing_)
                return;
            if (out_.empty()) {
                if (close_after_flush_) {
                    close();
                    return;
                }
                io_.set_events(EPOLLIN);
            }
        }
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
            read_message();
    }

    // One message per turn: the watch is level-triggered, so a client with more queued is
    // called again in the next batch, behind the other clients that were ready (IoGroup).
    void read_message() {
        if (closing_)
            return;
        iovec iov{buf_.data(), buf_.size()};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        const ssize_t n = ::recvmsg(fd_, &mh, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            if (errno != ECONNRESET)
                spdlog::warn("client pid {} ({}): recv: {}", peer_.pid, peer_.comm, std::strerror(errno));
            close();
            return;
        }
        if (n == 0) { // the client went away
            close();
            return;
        }
        if (mh.msg_flags & MSG_TRUNC) {
            send(proto::encode_error(std::nullopt,
                                     failure(Errc::too_large, "the message is longer than the " +
                                                                  std::to_string(buf_.size()) +
                                                                  " bytes this daemon accepts")));
            return;
        }
        handle(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
    }

    void reply_error(std::optional<std::uint64_t> id, proto::Failure f) { send(proto::encode_error(id, f)); }

    void handle(std::string_view message) {
        if (close_after_flush_)
            return; // denied: only the answer to its hello is still to go out
        auto decoded = proto::decode_request(message);
        if (auto *bad = std::get_if<proto::BadRequest>(&decoded)) {
            reply_error(bad->id, bad->failure);
            return;
        }
        auto &env = std::get<proto::RequestEnvelope>(decoded);
        if (!hello_ && !std::holds_alternative<proto::Hello>(env.request)) {
            reply_error(env.id, failure(Errc::invalid_argument, "the first request must be hello", "/op"));
            return;
        }
        std::visit(overloaded{
                       [&](const proto::Hello &r) { hello(env.id, r); },
                       [&](const proto::Join &r) { join(env.id, r); },
                       [&](const proto::Leave &r) { leave(env.id, r); },
                       [&](const proto::List &) { list(env.id); },
                       [&](const proto::Status &) { status(env.id); },
                       [&](const proto::Monitor &r) {
                           set_monitor(r.enable);
                           send(proto::encode_reply(env.id, proto::Empty{}));
                       },
                   },
                   env.request);
    }

    void hello(std::uint64_t id, const proto::Hello &r) {
        if (hello_) {
            reply_error(id, failure(Errc::invalid_argument, "hello was already said on this connection", "/op"));
            return;
        }
        unsigned best = 0;
        for (unsigned v : r.versions)
            if (std::find(proto::kVersions.begin(), proto::kVersions.end(), v) != proto::kVersions.end())
                best = std::max(best, v);
        if (!best) {
            proto::Failure f = failure(Errc::unsupported_version,
                                       "none of the requested protocol versions is served; this daemon speaks 1",
                                       "/versions");
            f.versions.assign(proto::kVersions.begin(), proto::kVersions.end());
            reply_error(id, f);
            return;
        }
        if (!srv_.access_.allows(peer_)) {
            spdlog::warn("client pid {} uid {} ({}) denied by the access policy", peer_.pid, peer_.uid, peer_.comm);
            reply_error(id, failure(Errc::denied, "uid " + std::to_string(peer_.uid) +
                                                      " is not allowed to use rdma-mcastd (config: access)"));
            close_after_flush_ = true;
            if (out_.empty())
                close(); // otherwise on_io closes once the answer is out
            return;
        }
        hello_ = true;
        spdlog::debug("client pid {} uid {} ({}) connected as '{}'", peer_.pid, peer_.uid, peer_.comm, r.client);
        send(proto::encode_reply(id, proto::HelloResult{best, srv_.daemon_name_}));
    }

    void join(std::uint64_t id, const proto::Join &r) {
        const Limits &lim = srv_.limits_;
        if (pending_.count(id)) {
            reply_error(id, failure(Errc::invalid_argument,
                                    "request id " + std::to_string(id) + " is already used by a pending join", "/id"));
            return;
        }
        if (pending_.size() >= lim.max_requests_in_flight) {
            reply_error(id, failure(Errc::limit, "already " + std::to_string(pending_.size()) +
                                                     " joins waiting for the SA on this connection (limit " +
                                                     std::to_string(lim.max_requests_in_flight) + ")"));
            return;
        }
        if (memberships_ + pending_.size() >= lim.max_memberships_per_client) {
            reply_error(id, failure(Errc::limit, "this connection holds " + std::to_string(memberships_) +
                                                     " memberships (limit " +
                                                     std::to_string(lim.max_memberships_per_client) + ")"));
            return;
        }
        pending_[id] = 0;
        const MembershipId m = srv_.service_.engine().join(client_, r.request, [this, id](const JoinResult &res) {
            pending_.erase(id);
            if (res.error) {
                reply_error(id, proto::Failure{*res.error, {}, {}});
                return;
            }
            ++memberships_;
            send(proto::encode_reply(id, proto::JoinResult{res.id, res.record}));
        });
        if (auto it = pending_.find(id); it != pending_.end())
            it->second = m; // still waiting for the SA: remember it for leave {"join": id}
    }

    void leave(std::uint64_t id, const proto::Leave &r) {
        MembershipId m = 0;
        bool was_pending = false;
        if (r.join) {
            auto it = pending_.find(*r.join);
            if (it == pending_.end()) {
                reply_error(id, failure(Errc::not_found, "no join request " + std::to_string(*r.join) +
                                                             " is waiting on this connection", "/join"));
                return;
            }
            m = it->second;
            was_pending = true;
        } else {
            m = *r.membership;
        }
        if (auto err = srv_.service_.engine().leave(client_, m)) {
            reply_error(id, proto::Failure{*err, r.join ? "/join" : "/membership", {}});
            return;
        }
        if (!was_pending && memberships_ > 0)
            --memberships_;
        send(proto::encode_reply(id, proto::Empty{}));
    }

    void list(std::uint64_t id) { send_sized(id, proto::encode_reply(id, list_view(srv_.service_))); }

    void status(std::uint64_t id) {
        send(proto::encode_reply(id, status_view(srv_.service_, StatusExtras{srv_.daemon_name_, srv_.started_,
                                                                             srv_.sessions_.size()})));
    }

    // A SOCK_SEQPACKET message cannot exceed the socket's send buffer.
    void send_sized(std::uint64_t id, std::string msg) {
        int sndbuf = 0;
        socklen_t len = sizeof sndbuf;
        getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len);
        if (sndbuf > 0 && msg.size() + 64 > static_cast<std::size_t>(sndbuf)) {
            reply_error(id, failure(Errc::limit, "the reply would be " + std::to_string(msg.size()) +
                                                     " bytes, more than one message can carry (" +
                                                     std::to_string(sndbuf) + ")"));
            return;
        }
        send(std::move(msg));
    }

    SocketServer &srv_;
    int fd_;
    Peer peer_;
    ClientId client_ = 0;
    runtime::IoGroup::Watch io_;
    std::string buf_;
    bool hello_ = false;
    bool monitor_ = false;
    bool closing_ = false;
    bool close_after_flush_ = false;
    std::unordered_map<std::uint64_t, MembershipId> pending_; // join request id -> membership
    std::size_t memberships_ = 0;
    std::deque<std::string> out_;
    std::size_t out_bytes_ = 0;

    friend class SocketServer;
};

// ---- the server ----

SocketServer::SocketServer(runtime::EventLoop &loop, Service &service, int listen_fd, Limits limits,
                           AccessPolicy access, std::string daemon_name)
    : loop_(loop), service_(service), listen_fd_(listen_fd), limits_(limits), access_(std::move(access)),
      daemon_name_(std::move(daemon_name)), started_(std::chrono::steady_clock::now()),
      clients_io_(loop, "clients") {
    accept_source_ = loop_.watch_io(listen_fd_, EPOLLIN, [this](std::uint32_t) { on_accept(); }, "listener");
    service_.add_observer([this, alive = std::weak_ptr<bool>(alive_)](const EngineNote &n) {
        if (alive.lock())
            on_note(n);
    });
}

SocketServer::~SocketServer() {
    *alive_ = false;
    alive_.reset();
    disconnect_all();
    stop_accepting();
}

void SocketServer::stop_accepting() {
    accept_source_.reset();
    if (listen_fd_ >= 0)
        ::close(listen_fd_);
    listen_fd_ = -1;
}

void SocketServer::disconnect_all() {
    while (!sessions_.empty())
        close_session(sessions_.begin()->first);
}

void SocketServer::on_accept() {
    for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                spdlog::warn("accept: {}", std::strerror(errno));
            return;
        }
        if (sessions_.size() >= limits_.max_clients) {
            const std::string msg = proto::encode_error(
                std::nullopt, failure(Errc::limit, "the daemon serves " + std::to_string(sessions_.size()) +
                                                       " clients, its limit (config: limits.max_clients)"));
            ::send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            ::close(fd);
            continue;
        }
        try {
            auto s = std::make_unique<Session>(*this, fd, read_peer(fd));
            by_client_[s->client()] = s.get();
            sessions_.emplace(fd, std::move(s));
        } catch (const std::exception &e) {
            spdlog::warn("dropping a new connection: {}", e.what());
            ::close(fd);
        }
    }
}

void SocketServer::close_session(int fd) {
    auto node = sessions_.extract(fd);
    if (node.empty())
        return;
    by_client_.erase(node.mapped()->client());
    // `node` is destroyed here, outside sessions_: notes emitted while its memberships are
    // released do not see it.
}

void SocketServer::membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) {
    auto it = by_client_.find(client);
    if (it == by_client_.end())
        return;
    if (ev.kind == MembershipEvent::Kind::restored)
        it->second->send(proto::encode_event(proto::RestoredEvent{id, ev.record, ev.changed}));
    else
        it->second->send(proto::encode_event(
            proto::LostEvent{id, proto::Failure{ev.reason.value_or(Error{Errc::internal, "unknown", {}}), {}, {}}}));
}

void SocketServer::on_note(const EngineNote &n) {
    if (monitors_ == 0)
        return;
    std::string encoded;
    for (auto &[fd, s] : sessions_) {
        if (!s->monitoring())
            continue;
        if (encoded.empty()) {
            proto::MonitorEvent ev;
            ev.kind = note_kind(n.kind);
            const auto &ports = service_.ports();
            if (n.port < ports.size()) {
                ev.device = ports[n.port].device;
                ev.port = ports[n.port].port_num;
            }
            ev.mgid = n.mgid;
            ev.mlid = n.mlid;
            ev.join_state = n.join_state;
            if (n.client_info) { // the client may be gone already ("left" after its disconnect)
                ev.pid = n.client_info->pid;
                ev.uid = n.client_info->uid;
                ev.comm = n.client_info->comm;
            }
            ev.message = describe(n, ev.device + "/" + std::to_string(ev.port));
            ev.sa_status = n.sa_status;
            encoded = proto::encode_event(ev);
        }
        s->send(encoded);
    }
}

} // namespace mcastd::server

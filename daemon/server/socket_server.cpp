// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/socket_server.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <utility>

#include "logging/policy_log.hpp"
#include "policy/policy.hpp"
#include "server/passed_fds.hpp"
#include "server/peer.hpp"
#include "runtime/sd_error.hpp"

namespace mcastd::server {

namespace {

// Replies this large are checked against the socket's send buffer first: a SOCK_SEQPACKET
// message cannot exceed it. `list` pages itself well below the default buffer
// (proto::kListPageBytes); this is the last resort for what is not paged (a `status` of
// thousands of users, hello's memberships under raised limits) and for a buffer set small.
constexpr std::size_t kCheckAbove = 4096;

} // namespace

// ---- one client connection ----

class SocketServer::Connection final : private frontend::SessionOutlet {
public:
    Connection(SocketServer &srv, int fd) : srv_(srv), fd_(fd) {}

    ~Connection() {
        closing_ = true;
        io_.reset();
        if (hello_timer_)
            srv_.loop_.timers().cancel(hello_timer_);
        if (session_ && out_bytes_)
            srv_.sessions_.accounts().sent(account(), out_bytes_);
        session_.reset(); // releases every membership, exactly as if each had been left
        if (!srv_.handing_over_) {
            // The client must see the close: the store's copy goes first, and shutdown()
            // reaches the peer whatever other copy may still be open.
            ::shutdown(fd_, SHUT_RDWR);
            if (!stored_as_.empty() && srv_.store_)
                srv_.store_->remove(stored_as_);
        }
        ::close(fd_);
    }

    // A connection kept by the previous instance, as the session it was.
    void resume(std::unique_ptr<frontend::ClientSession> session) {
        session_ = std::move(session);
        session_->attach(*this);
        stored_as_ = connection_fd_name(session_->id()); // the name it is stored under already
        if (srv_.store_)
            srv_.store_->adopted(stored_as_);
        watch();
    }

    unsigned version() const { return session_ ? session_->version() : 0; }
    uid_t account() const { return session_->who().who.account_uid(); }
    void say(const std::string &msg) { send(msg, Kind::event); }

    void pause() {
        if (!closing_)
            io_.set_events(out_.empty() ? 0u : std::uint32_t{EPOLLOUT});
    }

    // Opens the client's session; false (the client told why) when it cannot be served.
    bool start(frontend::Credentials who) {
        auto opened = srv_.sessions_.open(frontend::Door::socket, std::move(who), *this);
        if (auto *f = std::get_if<proto::Failure>(&opened)) {
            const std::string msg = proto::encode_error(std::nullopt, *f);
            ::send(fd_, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            return false;
        }
        session_ = std::get<std::unique_ptr<frontend::ClientSession>>(std::move(opened));
        struct stat st{};
        if (::fstat(fd_, &st) == 0)
            session_->set_inode(st.st_ino);
        watch();
        // Kept in the fd store only once greeted: a connection that never said hello is never
        // handed to the next instance, and one that says none in time is closed.
        const auto deadline = srv_.sessions_.limits().hello_timeout;
        hello_timer_ = srv_.loop_.timers().start(deadline, [this, deadline] {
            hello_timer_ = 0;
            if (session_->greeted())
                return;
            srv_.sessions_.refusals().count(frontend::refusal::kHelloTimeout);
            logging::log_refused_client(
                this->who(), fmt::format("it said no hello within {} ms (config limits.hello_timeout_ms); closing it",
                                   deadline.count()));
            close();
        });
        return true;
    }

private:
    // What a message is: a monitor event may be dropped for a client that does not read
    // (counted and said later), a reply or a membership event may not.
    enum class Kind { reply, event, monitor };
    // While this much is owed to the client, its next requests wait in its socket: a client
    // that does not read its replies cannot make the daemon hold more for it.
    static constexpr std::size_t kStopReadingAt = 64u << 10;

    const ClientInfo &who() const { return session_->who().who; }
    uid_t uid() const { return who().uid; }

    void watch() {
        io_ = srv_.clients_io_.watch(fd_, wants_input() ? std::uint32_t{EPOLLIN} : 0u,
                                     [this](std::uint32_t ev) { on_io(ev); });
    }

    // Into the fd store under the session's name; again under the new one when a hello's
    // `resume` made the connection another session.
    void store() {
        if (!srv_.store_)
            return;
        const std::string name = connection_fd_name(session_->id());
        if (name == stored_as_)
            return;
        if (!stored_as_.empty())
            srv_.store_->remove(stored_as_);
        srv_.store_->store(fd_, name);
        stored_as_ = name;
    }

    // ---- frontend::SessionOutlet ----
    void membership_event(MembershipId id, const MembershipEvent &ev) override {
        if (ev.kind == MembershipEvent::Kind::restored)
            send(proto::encode_event(proto::RestoredEvent{id, ev.record, ev.changed}), Kind::event);
        else
            send(proto::encode_event(proto::LostEvent{
                     id, proto::Failure{ev.reason.value_or(Error{Errc::internal, "unknown", {}}), {}, {}}}),
                 Kind::event);
    }
    void monitor_event(const proto::MonitorEvent &ev) override {
        // Behind already: counted, not queued (not even encoded).
        if (!out_.empty() && out_bytes_ >= srv_.sessions_.limits().max_monitor_queued_bytes) {
            ++dropped_;
            return;
        }
        send(proto::encode_event(ev), Kind::monitor);
    }
    void disconnect(const std::string &why) override {
        spdlog::info("closing the connection of client pid {} uid {} ({}): {}", who().pid, uid(), who().comm, why);
        close();
    }

    // ---- sending ----
    void send(std::string msg, Kind kind) {
        if (closing_)
            return;
        if (out_.empty() && try_send(msg))
            return;
        if (closing_)
            return;
        const frontend::Limits &lim = srv_.sessions_.limits();
        std::optional<std::string> over = srv_.sessions_.accounts().may_queue(account(), msg.size());
        if (!over && out_bytes_ + msg.size() > lim.max_queued_bytes)
            over = fmt::format("{} bytes owed to it, its bound (config limits.max_queued_bytes: {})", out_bytes_,
                               lim.max_queued_bytes);
        if (kind == Kind::monitor && (over || out_bytes_ + msg.size() > lim.max_monitor_queued_bytes)) {
            ++dropped_;
            return;
        }
        if (over) {
            spdlog::warn("client pid {} uid {} ({}) does not read what it is sent: {}; disconnecting", who().pid,
                         uid(), who().comm, *over);
            close();
            return;
        }
        out_bytes_ += msg.size();
        srv_.sessions_.accounts().queued(account(), msg.size());
        out_.push_back(std::move(msg));
        update_events();
    }

    // Read while little is owed to the client (it reads its answers), the server is not paused
    // for a restart, and its account's passed descriptors are closing (kHoldAtWaitingCloses).
    bool wants_input() const {
        return !closing_ && !srv_.paused_ && out_bytes_ < kStopReadingAt && !srv_.held(account());
    }

public:
    // Write when something is owed; read while wants_input().
    void update_events() {
        if (closing_)
            return;
        std::uint32_t ev = out_.empty() ? 0u : std::uint32_t{EPOLLOUT};
        if (wants_input())
            ev |= EPOLLIN;
        io_.set_events(ev);
    }

private:
    // False: could not send now (queue it). On a fatal error the connection closes.
    bool try_send(const std::string &msg) {
        if (::send(fd_, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
            return true;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return false;
        if (errno != EPIPE && errno != ECONNRESET)
            spdlog::warn("client pid {} ({}): send: {}", who().pid, who().comm, std::strerror(errno));
        close();
        return false;
    }

    void answer(std::uint64_t id, frontend::Answer a) {
        if (auto *f = std::get_if<proto::Failure>(&a)) {
            send(proto::encode_error(id, *f), Kind::reply);
            return;
        }
        std::string msg = proto::encode_reply(id, std::get<proto::Result>(a));
        if (msg.size() > kCheckAbove) {
            int sndbuf = 0;
            socklen_t len = sizeof sndbuf;
            getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len);
            if (sndbuf > 0 && msg.size() + 64 > static_cast<std::size_t>(sndbuf)) {
                send(proto::encode_error(
                         id, proto::Failure::of(Errc::limit, "the reply would be " + std::to_string(msg.size()) +
                                                                 " bytes, more than one message can carry (" +
                                                                 std::to_string(sndbuf) + ")")),
                     Kind::reply);
                return;
            }
        }
        send(std::move(msg), Kind::reply);
    }

    void close() {
        if (closing_)
            return;
        closing_ = true;
        io_.reset();
        // Not from inside our own callback: the loop runs it next.
        SocketServer &srv = srv_;
        const int fd = fd_;
        srv.loop_.post([&srv, fd] { srv.close_connection(fd); });
    }

    // ---- receiving ----
    void on_io(std::uint32_t events) {
        if (events & EPOLLOUT) {
            std::size_t sent = 0;
            while (!out_.empty() && try_send(out_.front())) {
                sent += out_.front().size();
                out_bytes_ -= out_.front().size();
                out_.pop_front();
            }
            if (sent)
                srv_.sessions_.accounts().sent(account(), sent);
            if (closing_)
                return;
            if (out_.empty()) {
                if (session_->refused()) {
                    close();
                    return;
                }
                // Caught up: one marker says what it missed.
                if (dropped_)
                    send(proto::encode_event(proto::dropped_monitor_event(std::exchange(dropped_, 0))), Kind::event);
            }
            update_events();
        }
        // A turn's worth (kMessagesPerTurn). Handling a message never destroys the connection
        // (close() defers that to the loop), so it is still here for the next.
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
            for (unsigned i = 0; i < kMessagesPerTurn && read_message() && wants_input(); ++i) {
            }
    }

    // Reads and handles one message; false when there is none (or the connection closes).
    bool read_message() {
        if (closing_)
            return false;
        // One buffer for every connection (the loop reads one message at a time); a request
        // longer than the limit in force is truncated, and said so.
        std::string &buf = srv_.receive_buffer_;
        iovec iov{buf.data(), std::min(buf.size(), srv_.sessions_.limits().max_message_bytes)};
        alignas(cmsghdr) char control[PassedFds::kControlBytes];
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = control;
        mh.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(fd_, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return false;
            if (errno != ECONNRESET)
                spdlog::warn("client pid {} ({}): recv: {}", who().pid, who().comm, std::strerror(errno));
            close();
            return false;
        }
        bool closes_later = false;
        {
            PassedFds fds = PassedFds::from(mh, srv_.closer_, account()); // closed unless a join takes its socket
            closes_later = fds.closed_later() > 0;
            dispatch(static_cast<std::size_t>(n), mh, iov.iov_len, std::move(fds));
        }
        if (closes_later) // handed to the closer by now
            srv_.hold_if_closes_wait(account());
        return !closing_;
    }

    void dispatch(std::size_t n, const msghdr &mh, std::size_t room, PassedFds fds) {
        if (n == 0) { // the client went away
            close();
            return;
        }
        if (mh.msg_flags & MSG_TRUNC) {
            send(proto::encode_error(std::nullopt,
                                     proto::Failure::of(Errc::too_large, "the message is longer than the " +
                                                                             std::to_string(room) +
                                                                             " bytes this daemon accepts")),
                 Kind::reply);
            return;
        }
        handle(std::string_view(srv_.receive_buffer_.data(), n), std::move(fds));
    }

    void handle(std::string_view message, PassedFds fds) {
        if (session_->refused())
            return; // only the answer to its hello is still to go out
        auto decoded = proto::decode_request(message);
        if (auto *bad = std::get_if<proto::BadRequest>(&decoded)) {
            send(proto::encode_error(bad->id, bad->failure), Kind::reply);
            return;
        }
        auto &env = std::get<proto::RequestEnvelope>(decoded);
        if (auto refused = fds.hand_to(env.request)) {
            send(proto::encode_error(env.id, *refused), Kind::reply);
            return;
        }
        session_->handle(env.id, env.request, [this, id = env.id](frontend::Answer a) { answer(id, std::move(a)); });
        if (session_->refused() && out_.empty())
            close(); // otherwise on_io closes once the answer is out
        else if (!closing_ && session_->greeted())
            store();
    }

    SocketServer &srv_;
    int fd_;
    std::unique_ptr<frontend::ClientSession> session_;
    runtime::IoGroup::Watch io_;
    Timers::Id hello_timer_ = 0;
    bool closing_ = false;
    std::string stored_as_; // the name it has in the fd store, empty when it is not there
    std::deque<std::string> out_;
    std::size_t out_bytes_ = 0;
    std::uint64_t dropped_ = 0; // monitor events not sent since the queue last emptied
};

// ---- the server ----

SocketServer::SocketServer(runtime::EventLoop &loop, frontend::Sessions &sessions, int listen_fd,
                           std::shared_ptr<FdStore> store, runtime::FdCloser &closer)
    : loop_(loop), sessions_(sessions), listen_fd_(listen_fd), store_(std::move(store)),
      receive_buffer_(proto::kMaxMessageBytes, '\0'), closer_(closer), clients_io_(loop, "clients") {
    if (listen_fd_ >= 0)
        accept_source_ = loop_.watch_io(listen_fd_, EPOLLIN, [this](std::uint32_t) { on_accept(); }, "listener");
}

SocketServer::~SocketServer() {
    loop_.timers().cancel(std::exchange(held_check_, 0));
    disconnect_all();
    stop_accepting();
}

void SocketServer::stop_accepting() {
    loop_.timers().cancel(std::exchange(accept_rest_, 0));
    accept_source_.reset();
    if (listen_fd_ >= 0)
        ::close(listen_fd_);
    listen_fd_ = -1;
}

void SocketServer::disconnect_all() {
    while (!connections_.empty())
        close_connection(connections_.begin()->first);
}

void SocketServer::say_stopping(const std::string &message) {
    const std::string ev = proto::encode_event(proto::StoppingEvent{message});
    for (auto &[fd, conn] : connections_)
        if (conn->version() >= 2)
            conn->say(ev);
}

void SocketServer::pause() {
    paused_ = true;
    for (auto &[fd, conn] : connections_)
        conn->pause();
}

void SocketServer::hand_over() {
    handing_over_ = true;
    connections_.clear();
}

void SocketServer::on_accept() {
    for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM)
                rest_accepting(err);
            else if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR)
                spdlog::warn("accept: {}", std::strerror(err));
            return;
        }
        if (const std::uint64_t rests = std::exchange(accept_rests_, 0))
            spdlog::info("accepting clients again, after {} rest(s) of {} ms", rests,
                         std::chrono::duration_cast<std::chrono::milliseconds>(kAcceptRest).count());
        adopt(fd);
    }
}

// The listener stays readable while a connection waits (its watch is level-triggered), so
// retrying at once would spin the loop and fill the log; the connection waits in the backlog
// instead, and is taken once a descriptor may be free.
void SocketServer::rest_accepting(int err) {
    if (accept_rests_++ == 0)
        spdlog::warn("accept: {}; not accepting clients for {} ms at a time until it works again ({} connections "
                     "open)",
                     std::strerror(err), std::chrono::duration_cast<std::chrono::milliseconds>(kAcceptRest).count(),
                     connections_.size());
    runtime::sd_check(sd_event_source_set_enabled(accept_source_.get(), SD_EVENT_OFF),
                      "sd_event_source_set_enabled(listener, off)");
    accept_rest_ = loop_.timers().start(kAcceptRest, [this] {
        accept_rest_ = 0;
        runtime::sd_check(sd_event_source_set_enabled(accept_source_.get(), SD_EVENT_ON),
                          "sd_event_source_set_enabled(listener, on)");
    });
}

void SocketServer::adopt(int fd) {
    auto conn = std::make_unique<Connection>(*this, fd); // closes fd when dropped
    try {
        Peer peer = identify_peer(fd);
        if (!peer.unidentified.empty()) {
            // Never judged by another process's cgroup: told why, and closed.
            const std::string why = policy::unidentified(peer.unidentified);
            logging::log_refused_client(peer.who.who, why);
            sessions_.refusals().count(frontend::refusal::kIdentity);
            const std::string msg = proto::encode_error(std::nullopt, proto::Failure::of(Errc::denied, why));
            ::send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            return;
        }
        if (conn->start(std::move(peer.who)))
            connections_.emplace(fd, std::move(conn));
    } catch (const std::exception &e) {
        spdlog::warn("dropping a new connection: {}", e.what());
    }
}

void SocketServer::adopt(int fd, std::unique_ptr<frontend::ClientSession> session) {
    auto conn = std::make_unique<Connection>(*this, fd);
    conn->resume(std::move(session));
    if (paused_)
        conn->pause();
    connections_.emplace(fd, std::move(conn));
}

void SocketServer::hold_if_closes_wait(uid_t account) {
    if (held(account))
        return;
    const std::size_t waiting = closer_.waiting(account);
    if (waiting < kHoldAtWaitingCloses)
        return;
    held_.insert(account);
    spdlog::warn("uid {}: {} descriptors its clients passed wait to be closed (a FUSE or NFS file whose server "
                 "does not answer?); its connections are not read until every one is closed",
                 account, waiting);
    reconsider_reading(account);
    if (!held_check_)
        held_check_ = loop_.timers().start(kHeldCheck, [this] { check_held(); });
}

void SocketServer::check_held() {
    held_check_ = 0;
    for (auto it = held_.begin(); it != held_.end();) {
        const uid_t account = *it;
        if (closer_.waiting(account) != 0) {
            ++it;
            continue;
        }
        it = held_.erase(it);
        spdlog::info("uid {}: the descriptors its clients passed are closed; its connections are read again",
                     account);
        reconsider_reading(account);
    }
    if (!held_.empty())
        held_check_ = loop_.timers().start(kHeldCheck, [this] { check_held(); });
}

void SocketServer::reconsider_reading(uid_t account) {
    for (auto &[fd, conn] : connections_)
        if (conn->account() == account)
            conn->update_events();
}

void SocketServer::close_connection(int fd) {
    auto node = connections_.extract(fd);
    // `node` is destroyed here, outside connections_: notes emitted while its memberships are
    // released do not see it.
}

} // namespace mcastd::server

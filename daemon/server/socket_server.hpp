// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Unix-socket transport (proto/PROTOCOL.md): framing only. It accepts connections, reads
// one request per SOCK_SEQPACKET message, hands it decoded to the connection's client session
// (frontend/client_session.hpp), and sends answers and events back through a bounded send
// queue. A connection that closes for any reason ends its session, which releases its
// memberships.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "frontend/sessions.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/fd_closer.hpp"
#include "runtime/io_group.hpp"
#include "server/fd_store.hpp"

namespace mcastd::server {

class SocketServer {
public:
    // Takes ownership of `listen_fd` (bound and listening, from open_client_socket()), or -1
    // for a server that only serves connections handed to adopt(). With a `store`, every
    // connection is kept in it while it is open (fd_store.hpp); the daemon shares the store
    // with the RoCE ports' membership sockets.
    // Descriptors clients pass that are not sockets are closed by `closer` (tests give one whose
    // closes wait).
    SocketServer(runtime::EventLoop &loop, frontend::Sessions &sessions, int listen_fd,
                 std::shared_ptr<FdStore> store = nullptr,
                 runtime::FdCloser &closer = runtime::FdCloser::background());
    ~SocketServer();
    SocketServer(const SocketServer &) = delete;
    SocketServer &operator=(const SocketServer &) = delete;

    // Serves a connected SOCK_SEQPACKET socket and takes ownership of it: what accept()
    // returns, or one end of a socketpair. A client over max_clients is told `limit` and
    // closed.
    void adopt(int fd);
    // Serves a connection the previous instance of the daemon kept in the fd store, as the
    // session it was (Sessions::take_detached()). Its peer was checked by the caller.
    void adopt(int fd, std::unique_ptr<frontend::ClientSession> session);
    // Graceful stop, first step: no new clients.
    void stop_accepting();
    // Tells every version 2 client that the daemon stops for good (the `stopping` event).
    void say_stopping(const std::string &message);
    // Closes every connection, releasing its memberships.
    void disconnect_all();
    // A restart: reads no more requests (they wait in the socket for the next instance) and
    // still sends what is owed.
    void pause();
    // The end of a restart: drops every connection without closing it for its client (the
    // fd store keeps it) and without touching the store.
    void hand_over();
    std::size_t connections() const { return connections_.size(); }
    bool storing() const { return store_ != nullptr; }

    // Requests read from one connection per turn. A client that pipelines costs the loop one
    // wake-up per this many, not per request; then the other clients that were ready have
    // their turn (the watches are level-triggered: runtime/io_group.hpp).
    static constexpr unsigned kMessagesPerTurn = 16;

    // How long the listener rests after accept() found no descriptor or memory for a new
    // connection (EMFILE, ENFILE, ENOBUFS, ENOMEM). Waiting clients stay in the backlog.
    static constexpr Duration kAcceptRest = std::chrono::milliseconds(100);

    // An account (the uid a client is charged to) with this many passed descriptors waiting
    // to be closed has none of its connections read until every one of them is closed: a
    // close that never ends (a FUSE or NFS file whose server does not answer) then costs the
    // daemon at most this many descriptors plus one message's (PassedFds::kRoom) per account,
    // and the account's own requests wait, nobody else's.
    static constexpr std::size_t kHoldAtWaitingCloses = 16;
    // How often a held account's closes are looked at again.
    static constexpr Duration kHeldCheck = std::chrono::milliseconds(100);

private:
    class Connection;

    // After a message whose descriptors went to the closer: holds `account` if too many wait.
    void hold_if_closes_wait(uid_t account);
    // Lets go of the held accounts whose descriptors are all closed.
    void check_held();
    bool held(uid_t account) const { return !held_.empty() && held_.contains(account); }
    void reconsider_reading(uid_t account); // each of its connections, after a hold or a release

    void on_accept();
    void rest_accepting(int err);
    void close_connection(int fd);

    runtime::EventLoop &loop_;
    frontend::Sessions &sessions_;
    int listen_fd_ = -1;
    std::shared_ptr<FdStore> store_;
    bool paused_ = false;
    bool handing_over_ = false;
    std::string receive_buffer_; // every connection's: the loop reads one message at a time
    runtime::EventSource accept_source_;
    Timers::Id accept_rest_ = 0;   // while the listener rests
    std::uint64_t accept_rests_ = 0; // since accept() last worked: the log says the first
    runtime::FdCloser &closer_;
    std::set<uid_t> held_;     // accounts whose connections are not read (kHoldAtWaitingCloses)
    Timers::Id held_check_ = 0; // while any is held
    runtime::IoGroup clients_io_; // before connections_: their watches go first
    std::map<int, std::unique_ptr<Connection>> connections_; // by fd
};

} // namespace mcastd::server

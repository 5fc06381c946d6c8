// The Unix-socket transport (proto/PROTOCOL.md): framing only. It accepts connections, reads
// one request per SOCK_SEQPACKET message, hands it decoded to the connection's client session
// (frontend/client_session.hpp), and sends answers and events back through a bounded send
// queue. A connection that closes for any reason ends its session, which releases its
// memberships.
#pragma once

#include <map>
#include <memory>

#include "frontend/sessions.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/io_group.hpp"

namespace mcastd::server {

class SocketServer {
public:
    // Takes ownership of `listen_fd` (bound and listening, from open_client_socket()), or -1
    // for a server that only serves connections handed to adopt().
    SocketServer(runtime::EventLoop &loop, frontend::Sessions &sessions, int listen_fd);
    ~SocketServer();
    SocketServer(const SocketServer &) = delete;
    SocketServer &operator=(const SocketServer &) = delete;

    // Serves a connected SOCK_SEQPACKET socket and takes ownership of it: what accept()
    // returns, or one end of a socketpair. A client over max_clients is told `limit` and
    // closed.
    void adopt(int fd);
    // Graceful stop, first step: no new clients.
    void stop_accepting();
    // Closes every connection, releasing its memberships.
    void disconnect_all();
    std::size_t connections() const { return connections_.size(); }

private:
    class Connection;

    void on_accept();
    void close_connection(int fd);

    runtime::EventLoop &loop_;
    frontend::Sessions &sessions_;
    int listen_fd_ = -1;
    runtime::EventSource accept_source_;
    runtime::IoGroup clients_io_; // before connections_: their watches go first
    std::map<int, std::unique_ptr<Connection>> connections_; // by fd
};

} // namespace mcastd::server

// The Unix-socket transport (PROTOCOL.md): accepts clients, decodes their requests, calls the
// core through Service, and sends replies and events back. One Session per connection; a
// connection that closes for any reason releases its memberships.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "runtime/event_loop.hpp"
#include "runtime/io_group.hpp"
#include "server/peer.hpp"
#include "service.hpp"

namespace mcastd::server {

struct Limits {
    std::size_t max_message_bytes = 65536;
    std::size_t max_requests_in_flight = 64;     // joins waiting for the SA, per client
    std::size_t max_memberships_per_client = 4096;
    std::size_t max_clients = 1024;
    std::size_t max_queued_bytes = 4u << 20;     // replies and events a slow reader may owe
    bool operator==(const Limits &) const = default;
};

class SocketServer final : private MembershipEventSink {
public:
    // Takes ownership of `listen_fd` (bound and listening, from listen_seqpacket() or systemd).
    SocketServer(runtime::EventLoop &loop, Service &service, int listen_fd, Limits limits,
                 AccessPolicy access, std::string daemon_name);
    ~SocketServer() override;
    SocketServer(const SocketServer &) = delete;
    SocketServer &operator=(const SocketServer &) = delete;

    // Graceful stop, first step: no new clients.
    void stop_accepting();
    // Closes every connection, releasing its memberships.
    void disconnect_all();
    std::size_t clients() const { return sessions_.size(); }

    // A configuration reload (SIGHUP). Limits apply to the next request, and
    // max_message_bytes to connections made from now on (a connection's buffer is sized once).
    // The access policy applies to the next hello: connected clients keep what they hold.
    void set_limits(const Limits &limits) { limits_ = limits; }
    void set_access(AccessPolicy access) { access_ = std::move(access); }

private:
    class Session;

    void on_accept();
    void close_session(int fd);
    void on_note(const EngineNote &note);
    void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) override;

    runtime::EventLoop &loop_;
    Service &service_;
    int listen_fd_ = -1;
    runtime::EventSource accept_source_;
    Limits limits_;
    AccessPolicy access_;
    std::string daemon_name_;
    std::chrono::steady_clock::time_point started_;
    runtime::IoGroup clients_io_; // before sessions_: their watches go first
    std::map<int, std::unique_ptr<Session>> sessions_;     // by fd
    std::map<ClientId, Session *> by_client_;
    int monitors_ = 0; // sessions that asked for monitor events
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // for the observer we register
};

} // namespace mcastd::server

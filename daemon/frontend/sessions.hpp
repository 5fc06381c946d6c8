// Sessions: the daemon's front door, shared by every transport. It admits clients (the
// `max_clients` limit counts the socket's and D-Bus's clients together), holds the rules
// sessions apply (limits, access policy; a reload changes them for the next request), and
// brings the daemon's activity to the clients that monitor it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_set>
#include <variant>

#include "frontend/client_session.hpp"

namespace mcastd::frontend {

struct Limits {
    std::size_t max_message_bytes = 65536;        // the socket's longest request
    std::size_t max_requests_in_flight = 64;      // joins waiting for the SA, per client
    std::size_t max_memberships_per_client = 4096;
    std::size_t max_clients = 1024;               // socket and D-Bus clients together
    std::size_t max_queued_bytes = 4u << 20;      // replies and events a slow socket reader may owe
    bool operator==(const Limits &) const = default;
};

class Sessions {
public:
    // `daemon_name` is what hello and status say ("rdma-mcastd 0.1.0").
    Sessions(Service &service, std::string daemon_name, Limits limits, AccessPolicy access);
    ~Sessions();
    Sessions(const Sessions &) = delete;
    Sessions &operator=(const Sessions &) = delete;

    // A new client. Refused with `limit` when the daemon already serves max_clients clients
    // (the daemon's own door is never refused).
    std::variant<std::unique_ptr<ClientSession>, proto::Failure> open(Door door, Credentials who,
                                                                      SessionOutlet &outlet);

    // A reload (SIGHUP): limits apply to the next request (max_message_bytes to connections
    // made from now on), the access policy to the next hello.
    void set_limits(const Limits &limits) { limits_ = limits; }
    void set_access(AccessPolicy access) { access_ = std::move(access); }
    const Limits &limits() const { return limits_; }
    const AccessPolicy &access() const { return access_; }

    // Clients of the socket and D-Bus (not the daemon's own).
    std::size_t clients() const { return clients_; }
    Service &service() const { return service_; }
    const std::string &daemon_name() const { return daemon_name_; }
    std::chrono::steady_clock::time_point started() const { return started_; }

private:
    friend class ClientSession;
    void opened(ClientSession &s);
    void closed(ClientSession &s);
    void monitor(ClientSession &s, bool on);
    void on_note(const EngineNote &note);

    Service &service_;
    std::string daemon_name_;
    Limits limits_;
    AccessPolicy access_;
    std::chrono::steady_clock::time_point started_;
    std::size_t clients_ = 0;
    std::unordered_set<ClientSession *> monitors_; // a join costs nothing extra while empty
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // for the observer it registers
};

} // namespace mcastd::frontend

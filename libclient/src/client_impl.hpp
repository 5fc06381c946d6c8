// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The client handle behind the opaque struct rdmamcast_client: one connection (made again when
// a version 2 daemon restarts), synchronous request/reply, joins in flight (asynchronous ones
// and the blocking one alike), and the queue of events that arrived while a call waited.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>

#include "convert.hpp"
#include "error_state.hpp"
#include "protocol.hpp"
#include "socket_io.hpp"

struct rdmamcast_client {
    using Fd = rdmamcast::detail::Fd;
    using Clock = std::chrono::steady_clock;

    // Connects and says hello. Returns 0 with `out` set, or a negative code with `error` set.
    static int open(const char *path, std::unique_ptr<rdmamcast_client> &out,
                    rdmamcast::detail::ErrorState &error);

    // Sends one request and waits for its reply, queueing events that come first. A broken
    // connection is made again first when it may be (see rdmamcast_set_reconnect()).
    // Returns the result object (for a decode_*_result()), or a negative code with `error` set.
    std::variant<mcastd::json_check::OwnedValue, int> call(const mcastd::proto::Request &request);

    // 0 with `ev` filled, -EAGAIN, or an error.
    int next_event(rdmamcast_event &ev);

    // A whole `list` (`own`: this connection's memberships only): every page the daemon
    // returns, put together (a daemon older than pages answers in one). 0 with `out` filled, or
    // a negative code with `error` set.
    int list(bool own, mcastd::proto::ListResult &out);

    // ---- joins ----
    // Every join goes through here: queued locally, sent while fewer than RDMAMCAST_JOIN_WINDOW
    // are in flight, completed when its reply comes (or the connection breaks). An asynchronous
    // one completes as a JoinCompletion event; the blocking one (`sync`) into `sync_done`, which
    // wait_join() takes. Returns the join id, or a negative code when the handle is dead.
    std::int64_t start_join(const mcastd::proto::Join &request, void *context, bool sync);
    // rdmamcast_join()'s wait: until `join_id` completes. 0 with `result`, or the negative code
    // with `error` set as the completion says.
    int wait_join(std::uint64_t join_id, mcastd::proto::JoinResult &result);
    int cancel_join(std::uint64_t join_id);

    void set_reconnect(bool enable, unsigned timeout_ms);

    // Bookkeeping of the memberships this handle holds, so that a reconnect can tell which
    // came back. `leaving` is the membership of a leave in flight: if the connection breaks
    // before its reply, it is not reported lost when it does not come back.
    void joined(std::uint64_t membership, const mcastd::McRecord &record);
    void left(std::uint64_t membership) {
        held.erase(membership);
        netdevs.erase(membership);
    }
    // rdmamcast_membership_netdev(): the netdev of a RoCE membership this handle holds, or
    // -ENOENT (none such) or -ENODATA (an InfiniBand one), with `error` set.
    int netdev_of(std::uint64_t membership, std::string &out);
    std::optional<std::uint64_t> leaving;
    // The monitor subscription the daemon last confirmed, renewed on a new session.
    bool monitoring = false;

    // Decodes a result with one of proto's decode_*_result functions. A result that does not
    // decode is a protocol error; the connection stays usable (replies are matched by id).
    template <class T, class Decode>
    int decode_result(const std::variant<mcastd::json_check::OwnedValue, int> &reply, Decode decode, T &out);

    Fd sock;
    Fd wake;  // eventfd: readable while `queue` is not empty (or a reconnect is due)
    Fd epoll; // what rdmamcast_event_fd() hands out: `sock` + `wake`
    std::string path;
    std::string daemon;
    unsigned version = 0;
    std::uint64_t next_id = 1;
    std::deque<rdmamcast::detail::QueuedEvent> queue;
    rdmamcast::detail::ErrorState error;
    rdmamcast::detail::Arena event_strings; // the strings of the last event handed out

    // Once the connection cannot be trusted (closed for good, or a message we could not
    // decode, which may have been the reply we wait for), every call fails with the same error.
    int dead = 0;
    rdmamcast_errc dead_code = RDMAMCAST_E_NONE;
    std::string dead_message;

private:
    struct PendingJoin {
        mcastd::proto::Join request;
        void *context = nullptr;
        bool sync = false;
        std::uint64_t wire_id = 0; // the request id it went out with; 0 while queued locally
    };
    std::map<std::uint64_t, PendingJoin> joins;              // by join id: not completed yet
    std::unordered_map<std::uint64_t, std::uint64_t> in_flight; // wire id -> join id
    std::deque<std::uint64_t> unsent;                         // join ids, in start order
    std::uint64_t next_join_id = 1;
    std::optional<rdmamcast::detail::JoinCompletion> sync_done;

    // Sends queued joins while the window has room and the connection is up.
    void send_joins();
    // The UDP socket a join carries for the daemon to hold the host's IGMP/MLD membership on
    // (PROTOCOL.md, "RoCE ports"), of the group's family, into `out`: none when the join needs
    // none (a send-only join, a port that answered as InfiniBand). 0, or -errno when socket()
    // failed on a port that answered as Ethernet, where the daemon cannot do without it; on a
    // port not known yet the join goes without (an InfiniBand port needs none; an Ethernet
    // port's daemon refuses the join, and says why).
    int membership_socket(const mcastd::proto::Join &join, Fd &out) const;
    // The link layer of each (device, port) the daemon answered a join on: a port that answered
    // as InfiniBand gets no socket with its joins.
    std::map<std::pair<std::string, std::uint8_t>, mcastd::LinkLayer> link_layers;
    // The netdev of each RoCE membership held, from its latest record.
    std::unordered_map<std::uint64_t, std::string> netdevs;
    // A reply to a join in flight: completes it and returns true; false for any other reply.
    bool route_reply(mcastd::proto::Reply &reply);
    // Hands a completion to its waiter (the queue, or sync_done), then refills the window.
    void complete(std::uint64_t join_id, rdmamcast::detail::JoinCompletion done);
    // Completes a join with an error of the library's own.
    void fail_join(std::uint64_t join_id, rdmamcast_errc code, int err, const std::string &message);
    // The connection broke: joins sent on it fail (dead: all of them, queued ones too).
    void fail_joins(bool also_unsent, rdmamcast_errc code, int err, const std::string &message);

    // Sends `request` and waits for its reply on the current connection, with no reconnect.
    // `sent` tells whether the request left (a broken connection fails the send otherwise).
    std::variant<mcastd::json_check::OwnedValue, int> exchange(const mcastd::proto::Request &request,
                                                               bool &sent);
    int setup_event_fd();
    // Hello, resuming `resume` if set; takes the negotiated version and the session.
    int hello(const std::optional<mcastd::proto::SessionTicket> &resume,
              mcastd::proto::HelloResult &result);
    // Receives and classifies one message: 1 = a reply (in `reply`), 0 = an event (queued),
    // or a negative code (a broken connection with `broken` set, or the connection dead).
    int receive(bool dontwait, mcastd::proto::Reply &reply);
    int fail_dead();
    int mark_dead(rdmamcast_errc code, int err, std::string message);
    void push_event(rdmamcast::detail::QueuedEvent event);
    // Makes `wake` readable or not; a system call only when that changes.
    void set_wake(bool readable);
    bool wake_readable = false;
    // Inside next_event(): what it queues and hands out at once never touches `wake`.
    bool in_next_event = false;

    // ---- reconnecting ----
    // The connection broke (EOF, ECONNRESET, EPIPE): marks it `broken` when it may be made
    // again, else dead. Returns the negative code, with `message` as the error's.
    int connection_lost(int err, std::string message);
    bool may_reconnect() const { return reconnect_enabled && ticket && !dead; }
    // Makes the connection again, with backoff, until reconnect_timeout after the break.
    // 0 with the RECONNECTED event queued, or the connection dead.
    int reconnect();
    // One attempt: connect, swap the socket into the epoll set, hello with resume. 0, 1 to try
    // again (`why` says what failed), or a negative code when the handle is dead.
    int reconnect_once(bool &resume, std::string &why);
    // Replaces the socket, in the epoll set too, so rdmamcast_event_fd() stays the same. 0 or
    // -errno.
    int swap_socket(Fd fresh);
    // After the hello of a new connection: compares what came back with `held`, queues the
    // RECONNECTED event, leaves memberships this handle never knew, renews the monitor.
    void take_session(const mcastd::proto::HelloResult &result, bool asked_to_resume);

    std::optional<mcastd::proto::SessionTicket> ticket; // version 2: the session to resume
    std::set<std::uint64_t> held;
    bool reconnect_enabled = true;
    std::chrono::milliseconds reconnect_timeout{RDMAMCAST_RECONNECT_TIMEOUT_MS};
    bool broken = false;
    Clock::time_point broken_since{};
};

template <class T, class Decode>
int rdmamcast_client::decode_result(const std::variant<mcastd::json_check::OwnedValue, int> &reply,
                                    Decode decode,
                                    T &out) {
    if (const int *rc = std::get_if<int>(&reply))
        return *rc;
    auto decoded = decode(std::get<mcastd::json_check::OwnedValue>(reply).get());
    if (auto *e = std::get_if<mcastd::Error>(&decoded))
        return error.set(RDMAMCAST_E_PROTOCOL, -EPROTO, e->message); // names the daemon
    out = std::move(std::get<T>(decoded));
    return 0;
}

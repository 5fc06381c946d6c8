// The client handle behind the opaque struct rdmamcast_client: one connection, synchronous
// request/reply, and the queue of events that arrived while a call waited.
#pragma once

#include <cerrno>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <variant>

#include "convert.hpp"
#include "error_state.hpp"
#include "protocol.hpp"
#include "socket_io.hpp"

struct rdmamcast_client {
    using Fd = rdmamcast::detail::Fd;

    // Connects and says hello. Returns 0 with `out` set, or a negative code with `error` set.
    static int open(const char *path, std::unique_ptr<rdmamcast_client> &out,
                    rdmamcast::detail::ErrorState &error);

    // Sends one request and waits for its reply, queueing events that come first.
    // Returns the result object's JSON text, or a negative code with `error` set.
    std::variant<std::string, int> call(const mcastd::proto::Request &request);

    // 0 with `ev` filled, -EAGAIN, or an error.
    int next_event(rdmamcast_event &ev);

    // Decodes a result with one of proto's decode_*_result functions. A result that does not
    // decode is a protocol error; the connection stays usable (replies are matched by id).
    template <class T, class Decode>
    int decode_result(const std::variant<std::string, int> &reply, Decode decode, T &out);

    Fd sock;
    Fd wake;  // eventfd: readable exactly while `queue` is not empty
    Fd epoll; // what rdmamcast_event_fd() hands out: `sock` + `wake`
    std::string path;
    std::string daemon;
    unsigned version = 0;
    std::uint64_t next_id = 1;
    std::deque<mcastd::proto::Event> queue;
    rdmamcast::detail::ErrorState error;
    rdmamcast::detail::Arena event_strings; // the strings of the last event handed out

    // Once the connection cannot be trusted (closed, or a message we could not decode, which
    // may have been the reply we wait for), every call fails with the same error.
    int dead = 0;
    rdmamcast_errc dead_code = RDMAMCAST_E_NONE;
    std::string dead_message;

private:
    int setup_event_fd();
    int hello();
    // Receives and classifies one message: 1 = a reply (in `reply`), 0 = an event (queued),
    // or a negative code with the connection marked dead.
    int receive(bool dontwait, mcastd::proto::Reply &reply);
    int fail_dead();
    int mark_dead(rdmamcast_errc code, int err, std::string message);
    void push_event(mcastd::proto::Event event);
};

template <class T, class Decode>
int rdmamcast_client::decode_result(const std::variant<std::string, int> &reply, Decode decode,
                                    T &out) {
    if (const int *rc = std::get_if<int>(&reply))
        return *rc;
    auto decoded = decode(std::get<std::string>(reply));
    if (auto *e = std::get_if<mcastd::Error>(&decoded))
        return error.set(RDMAMCAST_E_PROTOCOL, -EPROTO, e->message); // names the daemon
    out = std::move(std::get<T>(decoded));
    return 0;
}

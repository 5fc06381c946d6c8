// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A scripted stand-in for rdma-mcastd: a SOCK_SEQPACKET server on its own thread that speaks
// the protocol through proto's codec. Each test gives it a handler for the requests it cares
// about; everything else gets the daemon's ordinary answer (hello -> version 1, leave and
// monitor -> {}, list and status -> empty results, evict -> none released, join -> "internal:
// unscripted"). Descriptors sent with a request (SCM_RIGHTS) are looked at, logged with it and
// closed.
// version2() is a handler for a daemon that speaks version 2 (sessions and resume). A "restart"
// is close_all(): the daemon keeps listening and takes the client's next connection.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol.hpp"

namespace fake {

namespace proto = mcastd::proto;

class FakeDaemon;

// One client connection, as the handler sees it. Only used on the daemon's thread.
class Session {
public:
    void reply(std::uint64_t id, const proto::Result &result);
    void fail(std::optional<std::uint64_t> id, mcastd::Errc code, std::string message,
              std::optional<std::uint16_t> sa_status = std::nullopt, std::string field = {},
              std::vector<unsigned> versions = {});
    void fail(std::optional<std::uint64_t> id, const proto::Failure &failure);
    void event(const proto::Event &event);
    void raw(const std::string &message);
    void close();

    int fd() const { return fd_; }
    bool closed() const { return fd_ < 0; }

private:
    friend class FakeDaemon;
    explicit Session(int fd) : fd_(fd) {}
    int fd_;
};

// A descriptor that came with a request (SCM_RIGHTS), as the daemon saw it: what kind of
// socket it is (0s when it is not a socket). The daemon closes it once it has looked.
struct PassedFd {
    int domain = 0;   // SO_DOMAIN: AF_INET, AF_INET6, ...
    int type = 0;     // SO_TYPE: SOCK_DGRAM, ...
    int protocol = 0; // SO_PROTOCOL: IPPROTO_UDP, ...
};

// A request as the daemon received it.
struct Received {
    std::size_t session = 0; // index in accept order
    proto::RequestEnvelope envelope;
    std::vector<PassedFd> fds{}; // the descriptors on the same message
};

class FakeDaemon {
public:
    // Return true when the request was handled; false falls back to the default answer.
    using Handler = std::function<bool(Session &, const proto::RequestEnvelope &)>;

    explicit FakeDaemon(Handler handler = {});
    ~FakeDaemon();
    FakeDaemon(const FakeDaemon &) = delete;
    FakeDaemon &operator=(const FakeDaemon &) = delete;

    const std::string &path() const { return path_; }

    // Runs `fn` on the daemon's thread with every open session, and waits until it has run.
    void with_sessions(const std::function<void(std::vector<Session *> &)> &fn);
    void broadcast(const proto::Event &event);
    void close_all();
    // Closes the listening socket and removes its path: connecting fails from now on.
    void stop_listening();

    // Everything received so far (decoded requests; undecodable ones are answered and not
    // logged).
    std::vector<Received> requests();
    // Waits until `pred(requests())` holds; false after `timeout` (a safety net for a broken
    // client, not a synchronisation delay: the condition is signalled on every request).
    bool wait_for(const std::function<bool(const std::vector<Received> &)> &pred,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10));
    // Waits until `n` sessions have been closed by their clients (or by close()).
    bool wait_closed(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10));

    // Requests of one alternative, in order.
    template <class T> std::vector<T> requests_of() {
        std::vector<T> out;
        for (const auto &r : requests())
            if (const auto *t = std::get_if<T>(&r.envelope.request))
                out.push_back(*t);
        return out;
    }

private:
    void run();
    void handle(std::size_t index, const std::string &message, std::vector<PassedFd> fds);
    void default_answer(Session &s, const proto::RequestEnvelope &env);

    Handler handler_;
    std::string dir_, path_;
    int listen_fd_ = -1;
    int wake_fd_ = -1;
    std::vector<Session> sessions_; // daemon thread only
    std::size_t closed_ = 0;

    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Received> log_;
    std::vector<std::function<void()>> posted_;
    bool stop_ = false;
    std::thread thread_;
};

// Receives one message of at most `msg.size()` bytes into `msg` (resized to what came), with
// the descriptors on it (SCM_RIGHTS, received close-on-exec) appended to `fds`, which the
// caller then owns. Returns what recvmsg does.
ssize_t receive_with_fds(int sock, std::string &msg, std::vector<int> &fds, int flags = 0);

// Ready-made values.
mcastd::McRecord sample_record();
// A RoCE port's record: 239.1.2.3 on RoCE v2 (MGID ::ffff:239.1.2.3, MLID 0), GID index 3 of
// netdev "eth7".
mcastd::McRecord sample_roce_record();
// A handler under which joins succeed with sample_record(), membership ids counting up from
// `first`.
FakeDaemon::Handler joins_from(std::uint64_t first);
proto::HelloResult hello_result();
// Session `id`'s ticket, with a token made from the id.
proto::SessionTicket ticket(std::uint64_t id);

// What a version 2 daemon does with a hello that resumes `asked`: the session's memberships
// when it hands the session back, nullopt when it does not (a new session then).
using ResumeAnswer =
    std::function<std::optional<std::vector<std::uint64_t>>(const proto::SessionTicket &asked)>;
// A handler that speaks version 2: a plain hello opens a new session (1, 2, ... in order),
// a hello with resume is answered as `answer` says. Requests other than hello go to `more`.
FakeDaemon::Handler version2(ResumeAnswer answer, FakeDaemon::Handler more = {});
// The daemon hands every session back with these memberships, or refuses every resume.
ResumeAnswer resume_gives(std::vector<std::uint64_t> memberships);
ResumeAnswer resume_refused();
// An error of the access policy: `ref` names the rule that denied, or the quota reached.
proto::Failure policy_failure(mcastd::Errc code, std::string message, mcastd::PolicyRef ref);
// A daemon that answers `list` in these pages, as a version 2 daemon pages a long one: the
// first to a list without `after`, then the page after the one whose `next` the request's
// `after` is; a cursor it never gave is invalid-argument (/after). Other requests go to `more`.
FakeDaemon::Handler list_pages(std::vector<proto::ListResult> pages, FakeDaemon::Handler more = {});
// Three pages: mlx5_0/1's ff15::1 (members 1 to 3, cut after 2) and ff15::2 (member 4), then
// mlx5_1/1's ff15::3 (member 5, comm "last-page") on the last; cursors "p1", "p2".
std::vector<proto::ListResult> sample_pages();
// A "joined" activity entry of pid 4242 (my-app, uid 1000) for ff15::1:2 on mlx5_0/1.
proto::MonitorEvent sample_monitor_event();

} // namespace fake

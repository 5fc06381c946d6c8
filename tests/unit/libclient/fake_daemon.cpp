// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "fake_daemon.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "scm_rights.hpp"

namespace fake {

// ---- Session ----

void Session::reply(std::uint64_t id, const proto::Result &result) {
    raw(proto::encode_reply(id, result));
}

void Session::fail(std::optional<std::uint64_t> id, mcastd::Errc code, std::string message,
                   std::optional<std::uint16_t> sa_status, std::string field,
                   std::vector<unsigned> versions) {
    proto::Failure f{mcastd::Error{code, std::move(message), sa_status}, std::move(field),
                     std::move(versions)};
    fail(id, f);
}

void Session::fail(std::optional<std::uint64_t> id, const proto::Failure &failure) {
    raw(proto::encode_error(id, failure));
}

void Session::event(const proto::Event &event) { raw(proto::encode_event(event)); }

void Session::raw(const std::string &message) {
    if (fd_ >= 0)
        (void)::send(fd_, message.data(), message.size(), MSG_NOSIGNAL);
}

void Session::close() {
    if (fd_ >= 0)
        ::close(fd_);
    fd_ = -1;
}

// ---- FakeDaemon ----

namespace {

int socket_option(int fd, int option) {
    int v = 0;
    socklen_t len = sizeof v;
    return ::getsockopt(fd, SOL_SOCKET, option, &v, &len) == 0 ? v : 0;
}

// The kind of socket a received descriptor is (0s when it is none).
PassedFd describe(int fd) {
    return PassedFd{socket_option(fd, SO_DOMAIN), socket_option(fd, SO_TYPE), socket_option(fd, SO_PROTOCOL)};
}

} // namespace

FakeDaemon::FakeDaemon(Handler handler) : handler_(std::move(handler)) {
    char tmpl[] = "/tmp/rdmamcast-test-XXXXXX";
    if (!mkdtemp(tmpl))
        throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    path_ = dir_ + "/mcastd.sock";

    listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) < 0 ||
        ::listen(listen_fd_, 16) < 0)
        throw std::runtime_error(std::string("fake daemon socket: ") + std::strerror(errno));
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    thread_ = std::thread([this] { run(); });
}

FakeDaemon::~FakeDaemon() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    const std::uint64_t one = 1;
    (void)::write(wake_fd_, &one, sizeof one);
    thread_.join();
    for (auto &s : sessions_)
        s.close();
    if (listen_fd_ >= 0)
        ::close(listen_fd_);
    ::close(wake_fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
}

void FakeDaemon::with_sessions(const std::function<void(std::vector<Session *> &)> &fn) {
    bool done = false;
    {
        std::lock_guard lock(mu_);
        posted_.push_back([&] {
            std::vector<Session *> open;
            for (auto &s : sessions_)
                if (!s.closed())
                    open.push_back(&s);
            fn(open);
            std::lock_guard inner(mu_);
            done = true;
            cv_.notify_all();
        });
    }
    const std::uint64_t one = 1;
    (void)::write(wake_fd_, &one, sizeof one);
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done; });
}

void FakeDaemon::broadcast(const proto::Event &event) {
    with_sessions([&](std::vector<Session *> &ss) {
        for (auto *s : ss)
            s->event(event);
    });
}

void FakeDaemon::close_all() {
    with_sessions([&](std::vector<Session *> &ss) {
        for (auto *s : ss) {
            s->close();
            std::lock_guard lock(mu_);
            ++closed_;
            cv_.notify_all();
        }
    });
}

void FakeDaemon::stop_listening() {
    with_sessions([&](std::vector<Session *> &) {
        ::close(listen_fd_);
        listen_fd_ = -1; // poll() skips it
        ::unlink(path_.c_str());
    });
}

std::vector<Received> FakeDaemon::requests() {
    std::lock_guard lock(mu_);
    return log_;
}

bool FakeDaemon::wait_for(const std::function<bool(const std::vector<Received> &)> &pred,
                          std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(log_); });
}

bool FakeDaemon::wait_closed(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return closed_ >= n; });
}

void FakeDaemon::run() {
    for (;;) {
        std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        std::vector<std::size_t> index;
        for (std::size_t i = 0; i < sessions_.size(); ++i)
            if (!sessions_[i].closed()) {
                fds.push_back({sessions_[i].fd(), POLLIN, 0});
                index.push_back(i);
            }
        if (::poll(fds.data(), fds.size(), -1) < 0)
            continue;
        if (fds[0].revents & POLLIN) {
            std::uint64_t n;
            (void)::read(wake_fd_, &n, sizeof n);
            std::vector<std::function<void()>> work;
            {
                std::lock_guard lock(mu_);
                if (stop_)
                    return;
                work.swap(posted_);
            }
            for (auto &w : work)
                w();
        }
        if (fds[1].revents & POLLIN) {
            int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0)
                sessions_.push_back(Session(fd));
        }
        for (std::size_t k = 0; k < index.size(); ++k) {
            if (!fds[k + 2].revents)
                continue;
            Session &s = sessions_[index[k]];
            if (s.closed())
                continue; // closed by a posted function above
            ssize_t len = ::recv(s.fd(), nullptr, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
            std::string msg(len > 0 ? static_cast<std::size_t>(len) : 0, '\0');
            std::vector<PassedFd> passed;
            if (len > 0) {
                std::vector<int> received;
                len = receive_with_fds(s.fd(), msg, received, MSG_DONTWAIT);
                for (int fd : received) { // looked at, then closed: the test only asks what came
                    passed.push_back(describe(fd));
                    ::close(fd);
                }
            }
            if (len <= 0) {
                s.close();
                std::lock_guard lock(mu_);
                ++closed_;
                cv_.notify_all();
                continue;
            }
            handle(index[k], msg, std::move(passed));
        }
    }
}

void FakeDaemon::handle(std::size_t index, const std::string &message, std::vector<PassedFd> fds) {
    auto decoded = proto::decode_request(message);
    Session &s = sessions_[index];
    if (auto *bad = std::get_if<proto::BadRequest>(&decoded)) {
        s.raw(proto::encode_error(bad->id, bad->failure));
        return;
    }
    auto &env = std::get<proto::RequestEnvelope>(decoded);
    {
        std::lock_guard lock(mu_);
        log_.push_back(Received{index, env, std::move(fds)});
        cv_.notify_all();
    }
    if (!handler_ || !handler_(s, env))
        default_answer(s, env);
}

void FakeDaemon::default_answer(Session &s, const proto::RequestEnvelope &env) {
    std::visit(
        [&](const auto &r) {
            using T = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<T, proto::Hello>) {
                s.reply(env.id, hello_result());
            } else if constexpr (std::is_same_v<T, proto::Join>) {
                s.fail(env.id, mcastd::Errc::internal, "the fake daemon has no script for join");
            } else if constexpr (std::is_same_v<T, proto::List>) {
                s.reply(env.id, proto::ListResult{});
            } else if constexpr (std::is_same_v<T, proto::Status>) {
                proto::StatusResult st;
                st.daemon = "rdma-mcastd 0.1.0-fake";
                s.reply(env.id, st);
            } else if constexpr (std::is_same_v<T, proto::Evict>) {
                s.reply(env.id, proto::EvictResult{0});
            } else {
                s.reply(env.id, proto::Empty{}); // leave, monitor
            }
        },
        env.request);
}

ssize_t receive_with_fds(int sock, std::string &msg, std::vector<int> &fds, int flags) {
    mcastd::test::ScmRightsMessage<8> m(msg.data(), msg.size());
    const ssize_t len = ::recvmsg(sock, &m.msg, flags | MSG_CMSG_CLOEXEC);
    if (len < 0)
        return len;
    msg.resize(static_cast<std::size_t>(len));
    const std::vector<int> got = m.fds();
    fds.insert(fds.end(), got.begin(), got.end());
    return len;
}

proto::Failure policy_failure(mcastd::Errc code, std::string message, mcastd::PolicyRef ref) {
    return proto::Failure{mcastd::Error{code, std::move(message), std::nullopt, std::move(ref)},
                          "", {}};
}

mcastd::McRecord sample_record() {
    mcastd::McRecord r;
    r.mgid = *mcastd::parse_gid("ff15::1:2");
    r.port_gid = *mcastd::parse_gid("fe80::2:c903:0:1");
    r.qkey = 0x12345678;
    r.mlid = 0xc001;
    r.mtu_selector = mcastd::Selector::exactly;
    r.mtu = 4; // 2048
    r.tclass = 0x20;
    r.pkey = 0xffff;
    r.rate_selector = mcastd::Selector::exactly;
    r.rate = 3; // 10 Gb/s
    r.sl = 3;
    r.flow_label = 0xabcde;
    r.hop_limit = 7;
    r.scope = 5;
    r.join_state = mcastd::join::full;
    return r;
}

mcastd::McRecord sample_roce_record() {
    mcastd::McRecord r = sample_record();
    r.mgid = *mcastd::parse_gid("::ffff:239.1.2.3");
    r.port_gid = *mcastd::parse_gid("::ffff:192.168.7.1");
    r.mlid = 0;
    r.qkey = mcastd::kRoceDefaultQkey;
    r.pkey = mcastd::kRocePkey;
    r.rate = 0;
    r.hop_limit = 64;
    r.scope = 0;
    r.link_layer = mcastd::LinkLayer::ethernet;
    r.gid_type = mcastd::GidType::roce_v2;
    r.sgid_index = 3;
    r.netdev = "eth7";
    return r;
}

FakeDaemon::Handler joins_from(std::uint64_t first) {
    return [next = first](Session &s, const proto::RequestEnvelope &env) mutable {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.reply(env.id, proto::JoinResult{next++, sample_record()});
        return true;
    };
}

FakeDaemon::Handler list_pages(std::vector<proto::ListResult> pages, FakeDaemon::Handler more) {
    return [pages = std::move(pages), more](Session &s, const proto::RequestEnvelope &env) {
        const auto *l = std::get_if<proto::List>(&env.request);
        if (!l)
            return more && more(s, env);
        for (std::size_t i = 0; i < pages.size(); ++i)
            if (l->after == (i ? pages[i - 1].next : std::nullopt)) {
                s.reply(env.id, pages[i]);
                return true;
            }
        s.fail(env.id, mcastd::Errc::invalid_argument, "not a cursor of this daemon's list", std::nullopt, "/after");
        return true;
    };
}

std::vector<proto::ListResult> sample_pages() {
    const auto member = [](std::uint64_t id, const char *comm) {
        return proto::MemberInfo{id, mcastd::join::full, "active", static_cast<pid_t>(4238 + id), 1000, comm, "any"};
    };
    const auto group = [](const char *mgid, std::vector<proto::MemberInfo> members) {
        proto::GroupInfo g;
        g.mgid = *mcastd::parse_gid(mgid);
        g.mlid = 0xc001;
        g.held = mcastd::join::full;
        g.counts = {static_cast<std::uint32_t>(members.size()), 0, 0, 0};
        g.members = std::move(members);
        return g;
    };
    const auto ports = [](std::vector<proto::GroupInfo> first, std::vector<proto::GroupInfo> second) {
        return std::vector<proto::PortGroups>{{"mlx5_0", 1, *mcastd::parse_gid("fe80::10:3"), std::move(first)},
                                              {"mlx5_1", 1, *mcastd::parse_gid("fe80::10:4"), std::move(second)}};
    };
    proto::GroupInfo cut = group("ff15::1", {member(1, "a"), member(2, "b"), member(3, "c")});
    proto::GroupInfo rest = cut;
    cut.members.resize(2);
    rest.members.erase(rest.members.begin(), rest.members.begin() + 2);
    return {
        proto::ListResult{ports({cut}, {}), "p1"},
        proto::ListResult{ports({rest, group("ff15::2", {member(4, "d")})}, {}), "p2"},
        proto::ListResult{ports({}, {group("ff15::3", {member(5, "last-page")})}), std::nullopt},
    };
}

proto::MonitorEvent sample_monitor_event() {
    proto::MonitorEvent m;
    m.kind = "joined";
    m.device = "mlx5_0";
    m.port = 1;
    m.mgid = *mcastd::parse_gid("ff15::1:2");
    m.mlid = 0xc001;
    m.join_state = mcastd::join::full;
    m.pid = 4242;
    m.uid = 1000;
    m.comm = "my-app";
    m.message = "joined ff15::1:2";
    return m;
}

proto::HelloResult hello_result() {
    proto::HelloResult h;
    h.version = 1;
    h.daemon = "rdma-mcastd 0.1.0-fake";
    return h;
}

proto::SessionTicket ticket(std::uint64_t id) {
    char token[proto::kTokenChars + 1];
    std::snprintf(token, sizeof token, "%032llx", static_cast<unsigned long long>(id * 0x1111));
    return proto::SessionTicket{id, token};
}

FakeDaemon::Handler version2(ResumeAnswer answer, FakeDaemon::Handler more) {
    auto next_session = std::make_shared<std::uint64_t>(1);
    return [=](Session &s, const proto::RequestEnvelope &env) {
        const auto *hello = std::get_if<proto::Hello>(&env.request);
        if (!hello)
            return more && more(s, env);
        proto::HelloResult r = hello_result();
        r.version = 2;
        std::optional<std::vector<std::uint64_t>> back;
        if (hello->resume) {
            back = answer(*hello->resume);
            r.resumed = back.has_value();
            r.memberships = back.value_or(std::vector<std::uint64_t>{});
        }
        r.session = back ? *hello->resume : ticket((*next_session)++);
        s.reply(env.id, r);
        return true;
    };
}

ResumeAnswer resume_gives(std::vector<std::uint64_t> memberships) {
    return [memberships](const proto::SessionTicket &) {
        return std::optional<std::vector<std::uint64_t>>(memberships);
    };
}

ResumeAnswer resume_refused() {
    return [](const proto::SessionTicket &) { return std::optional<std::vector<std::uint64_t>>(); };
}

} // namespace fake

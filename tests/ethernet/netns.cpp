// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/netns.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 // Linux 5.14, <asm-generic/socket.h>
#endif

namespace mcastd::eth {

namespace {

[[noreturn]] void throw_errno(const std::string &what, int err = errno) {
    throw std::system_error(err, std::generic_category(), what);
}

} // namespace

UniqueFd &UniqueFd::operator=(UniqueFd &&o) noexcept {
    if (this != &o) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = o.release();
    }
    return *this;
}

UniqueFd::~UniqueFd() {
    if (fd_ >= 0)
        ::close(fd_);
}

int UniqueFd::release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
}

void in_netns(const std::string &ns, const std::function<void()> &work) { in_netns_at("/run/netns/" + ns, work); }

void in_netns_at(const std::string &path, const std::function<void()> &work) {
    std::exception_ptr failure;
    std::thread worker([&] {
        try {
            UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
            if (!fd)
                throw_errno("open " + path);
            if (::setns(fd.get(), CLONE_NEWNET) < 0)
                throw_errno("setns(" + path + ", CLONE_NEWNET)");
            work();
        } catch (...) {
            failure = std::current_exception();
        }
    });
    worker.join();
    if (failure)
        std::rethrow_exception(failure);
}

UniqueFd socket_in(const std::string &ns, int domain, int type, int protocol) {
    UniqueFd fd;
    in_netns(ns, [&] {
        fd = UniqueFd(::socket(domain, type | SOCK_CLOEXEC, protocol));
        if (!fd)
            throw_errno("socket(" + std::to_string(domain) + ", " + std::to_string(type) + ") in " + ns);
    });
    return fd;
}

std::string read_proc_net(const std::string &ns, const std::string &file) {
    std::string text;
    in_netns(ns, [&] {
        // thread-self, not self: /proc/self/net is the namespace of the process's main thread.
        const std::string path = "/proc/thread-self/net/" + file;
        std::ifstream in(path);
        std::ostringstream all;
        if (!in || !(all << in.rdbuf()))
            throw_errno("read " + path + " in " + ns);
        text = all.str();
    });
    return text;
}

void write_sysctl(const std::string &ns, const std::string &key, const std::string &value) {
    in_netns(ns, [&] {
        // /proc/sys/net resolves to the namespace of the thread that opens it.
        const std::string path = "/proc/sys/" + key;
        std::ofstream out(path);
        if (!out || !(out << value << '\n') || !out.flush())
            throw_errno("write " + value + " to " + path + " in " + ns);
    });
}

unsigned ifindex_in(const std::string &ns, const std::string &ifname) {
    unsigned index = 0;
    in_netns(ns, [&] {
        index = ::if_nametoindex(ifname.c_str());
        if (index == 0)
            throw_errno("if_nametoindex(" + ifname + ") in " + ns);
    });
    return index;
}

std::uint64_t netns_cookie(int socket_fd) {
    std::uint64_t cookie = 0;
    socklen_t len = sizeof cookie;
    if (::getsockopt(socket_fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) < 0)
        throw_errno("getsockopt(SO_NETNS_COOKIE)");
    return cookie;
}

} // namespace mcastd::eth

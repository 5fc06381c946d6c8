// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Work inside a named network namespace (/run/netns/NAME, made by `ip netns add`) from the
// test process itself, without a helper process: a fresh thread joins the namespace
// (setns(CLONE_NEWNET) changes only the calling thread's), runs the work and ends. A socket
// made there stays in that namespace for good, whichever thread uses it later; a file under
// /proc/thread-self/net read there shows that namespace's tables.
//
// The work must not start processes: a child's PR_SET_PDEATHSIG (Process, tests/sim/fabric.hpp)
// follows the thread that forked it, and this one ends as soon as the work is done.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace mcastd::eth {

// A file descriptor that closes itself.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd &&o) noexcept : fd_(o.release()) {}
    UniqueFd &operator=(UniqueFd &&o) noexcept;
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;
    ~UniqueFd();

    int get() const { return fd_; }
    int release();
    explicit operator bool() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// Runs `work` on a thread that has joined the network namespace `ns`, and waits for it. An
// exception thrown by `work` is rethrown here; failing to enter the namespace throws
// std::system_error.
void in_netns(const std::string &ns, const std::function<void()> &work);
// The same for any handle of a network namespace: /proc/PID/ns/net, an open nsfs fd under
// /proc/PID/fd, a bind mount.
void in_netns_at(const std::string &path, const std::function<void()> &work);

// socket(2) inside `ns`; throws std::system_error with the namespace and errno.
UniqueFd socket_in(const std::string &ns, int domain, int type, int protocol);

// A file of /proc/net as `ns` shows it ("igmp", "igmp6"); throws when it cannot be read.
std::string read_proc_net(const std::string &ns, const std::string &file);

// Writes a sysctl of `ns` ("net/ipv6/conf/default/accept_dad") under /proc/sys.
void write_sysctl(const std::string &ns, const std::string &key, const std::string &value);

// The interface index of `ifname` in `ns`; throws when there is no such interface.
unsigned ifindex_in(const std::string &ns, const std::string &ifname);

// SO_NETNS_COOKIE: the namespace a socket belongs to, as a number unique for the boot.
std::uint64_t netns_cookie(int socket_fd);

} // namespace mcastd::eth

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Many fds behind one sd-event source, dispatched in batches.
//
// sd-event dispatches one source per iteration and calls epoll_wait once per iteration, so with
// many busy clients each watched on its own, every message costs an epoll_wait of its own (and,
// edge-triggered, a read that ends in EAGAIN). An IoGroup is an epoll fd of its own that the
// loop watches: one dispatch collects up to kBatch ready fds with one epoll_wait and calls each
// one's callback.
//
// Watches are level-triggered, so a callback may do one unit of work (read one message) and
// return: a fd with more to do is reported again in the next batch, behind the others that
// were ready, which keeps a client that pipelines from starving the rest.
//
// Loop thread only. A callback may drop any watch, its own included; an exception escaping a
// callback stops the loop like any other (EventLoop::fail).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/event_source.hpp"

namespace mcastd::runtime {

class EventLoop;

class IoGroup {
public:
    using Callback = std::function<void(std::uint32_t revents)>;
    static constexpr int kBatch = 256;

    // One fd's watch; dropping it (or reset()) stops the callbacks. The fd stays the caller's.
    class Watch {
    public:
        Watch() noexcept = default;
        ~Watch() { reset(); }
        Watch(Watch &&o) noexcept;
        Watch &operator=(Watch &&o) noexcept;
        Watch(const Watch &) = delete;
        Watch &operator=(const Watch &) = delete;

        // Replaces the events watched (EPOLLIN, EPOLLOUT, ...). Throws std::system_error.
        void set_events(std::uint32_t events);
        void reset() noexcept;
        explicit operator bool() const noexcept { return group_ != nullptr; }

    private:
        friend class IoGroup;
        Watch(IoGroup *g, std::uint64_t key) noexcept : group_(g), key_(key) {}
        IoGroup *group_ = nullptr;
        std::uint64_t key_ = 0;
    };

    // Throws std::system_error if the epoll fd or its watch cannot be set up. `name` shows in
    // error messages. Every Watch must be dropped before the group.
    IoGroup(EventLoop &loop, std::string name);
    ~IoGroup();
    IoGroup(const IoGroup &) = delete;
    IoGroup &operator=(const IoGroup &) = delete;

    // Calls `fn(revents)` while `fd` has any of `events`. Throws std::system_error.
    [[nodiscard]] Watch watch(int fd, std::uint32_t events, Callback fn);

private:
    struct Entry {
        int fd;
        Callback fn;
    };

    static int on_ready(sd_event_source *s, int fd, std::uint32_t revents, void *userdata);
    void dispatch();
    void remove(std::uint64_t key) noexcept;

    EventLoop &loop_;
    std::string name_;
    int epfd_ = -1;
    EventSource source_;
    // Keys are never reused, so an event for a watch dropped earlier in the same batch finds
    // nothing instead of a newer watch on a reused fd.
    std::uint64_t next_key_ = 1;
    std::unordered_map<std::uint64_t, std::unique_ptr<Entry>> entries_;
    // Entries dropped during a dispatch live until it ends: the callback running may be theirs.
    std::vector<std::unique_ptr<Entry>> retired_;
    bool dispatching_ = false;
};

} // namespace mcastd::runtime

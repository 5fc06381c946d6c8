// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Hand-off from worker threads (the umad receive threads) to the loop thread.
//
// A mutex-protected FIFO plus an eventfd that the loop watches. post() may be called from any
// thread; the closures run on the loop thread in post() order (so per posting thread in that
// thread's order). The eventfd is written only when the queue goes from empty to non-empty:
// the drain reads (resets) the eventfd *before* it takes the queue, so a post that finds the
// queue non-empty is always picked up by a drain that has not taken the queue yet.
//
// Each wakeup runs the batch that was queued when it started; closures posted meanwhile
// (also by the batch itself) run in the next iteration, so a busy producer cannot starve the
// loop's other sources.
#pragma once

#include <deque>
#include <functional>
#include <mutex>

#include "runtime/event_source.hpp"

namespace mcastd::runtime {

class EventLoop;

class PostQueue {
public:
    // Throws std::system_error if the eventfd or its watch cannot be set up.
    explicit PostQueue(EventLoop &loop);
    ~PostQueue();
    PostQueue(const PostQueue &) = delete;
    PostQueue &operator=(const PostQueue &) = delete;

    // Thread-safe; never blocks on the loop. Throws only std::bad_alloc.
    void post(std::function<void()> fn);

private:
    static int on_wakeup(sd_event_source *s, int fd, std::uint32_t revents, void *userdata);
    void drain();
    void wake() noexcept;

    EventLoop &loop_;
    int efd_ = -1;
    EventSource source_;
    std::mutex mu_;
    std::deque<std::function<void()>> queue_; // guarded by mu_
    std::deque<std::function<void()>> batch_; // loop thread only: the batch being run
};

} // namespace mcastd::runtime

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/post_queue.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <system_error>

#include "runtime/event_loop.hpp"
#include "runtime/sd_error.hpp"

namespace mcastd::runtime {

PostQueue::PostQueue(EventLoop &loop) : loop_(loop) {
    efd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd_ < 0)
        throw std::system_error(errno, std::generic_category(), "eventfd(post queue)");
    sd_event_source *s = nullptr;
    if (int r = sd_event_add_io(loop.get(), &s, efd_, EPOLLIN, &PostQueue::on_wakeup, this); r < 0) {
        ::close(efd_);
        sd_check(r, "sd_event_add_io(post queue eventfd)");
    }
    source_ = EventSource(s);
    (void)sd_event_source_set_description(s, "post-queue");
}

PostQueue::~PostQueue() {
    source_.reset(); // stop watching before the fd goes away
    ::close(efd_);
}

void PostQueue::post(std::function<void()> fn) {
    bool was_empty = false;
    {
        std::lock_guard lock(mu_);
        was_empty = queue_.empty();
        queue_.push_back(std::move(fn));
    }
    if (was_empty)
        wake();
}

void PostQueue::wake() noexcept {
    const std::uint64_t one = 1;
    for (;;) {
        if (::write(efd_, &one, sizeof one) == static_cast<ssize_t>(sizeof one))
            return;
        if (errno == EINTR)
            continue;
        // EAGAIN: the counter is already huge, so the loop is already woken.
        if (errno == EAGAIN)
            return;
        // EBADF and the like mean the queue is used after destruction: a bug no caller can
        // handle, and a lost wakeup would hang the daemon silently.
        std::fprintf(stderr, "rdma-mcastd: post queue eventfd write failed: %s\n",
                     std::strerror(errno));
        std::abort();
    }
}

int PostQueue::on_wakeup(sd_event_source *, int, std::uint32_t, void *userdata) {
    auto *self = static_cast<PostQueue *>(userdata);
    try {
        self->drain();
    } catch (...) {
        self->loop_.fail("posted closure", std::current_exception());
    }
    return 0;
}

void PostQueue::drain() {
    // Reset the eventfd first, then take the queue (see the header for why this order).
    std::uint64_t count = 0;
    if (::read(efd_, &count, sizeof count) < 0 && errno != EAGAIN && errno != EINTR)
        throw std::system_error(errno, std::generic_category(), "read(post queue eventfd)");

    // batch_ is empty here; swapping hands its storage to queue_, so neither allocates in
    // steady state (a std::deque allocates as it is constructed).
    std::deque<std::function<void()>> &batch = batch_;
    {
        std::lock_guard lock(mu_);
        batch.swap(queue_);
    }
    std::exception_ptr failure;
    while (!batch.empty() && !loop_.exit_requested()) {
        std::function<void()> fn = std::move(batch.front());
        batch.pop_front();
        try {
            fn();
        } catch (...) {
            failure = std::current_exception();
            break;
        }
    }
    if (!batch.empty()) {
        // Stopped early (exit or a throwing closure): keep the rest, in order, ahead of
        // anything posted since. They run if the loop ever dispatches again, and are
        // destroyed with the queue otherwise.
        {
            std::lock_guard lock(mu_);
            queue_.insert(queue_.begin(), std::make_move_iterator(batch.begin()),
                          std::make_move_iterator(batch.end()));
        }
        batch.clear();
        wake();
    }
    if (failure)
        std::rethrow_exception(failure);
}

} // namespace mcastd::runtime

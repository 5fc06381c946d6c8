// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/io_group.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "runtime/event_loop.hpp"
#include "runtime/sd_error.hpp"

namespace mcastd::runtime {

IoGroup::Watch::Watch(Watch &&o) noexcept
    : group_(std::exchange(o.group_, nullptr)), key_(std::exchange(o.key_, 0)) {}

IoGroup::Watch &IoGroup::Watch::operator=(Watch &&o) noexcept {
    if (this != &o) {
        reset();
        group_ = std::exchange(o.group_, nullptr);
        key_ = std::exchange(o.key_, 0);
    }
    return *this;
}

void IoGroup::Watch::set_events(std::uint32_t events) {
    const auto &entry = *group_->entries_.at(key_);
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key_;
    if (epoll_ctl(group_->epfd_, EPOLL_CTL_MOD, entry.fd, &ev) < 0)
        throw std::system_error(errno, std::generic_category(),
                                "epoll_ctl(MOD, fd " + std::to_string(entry.fd) + ") in " + group_->name_);
}

void IoGroup::Watch::reset() noexcept {
    if (group_)
        std::exchange(group_, nullptr)->remove(key_);
}

IoGroup::IoGroup(EventLoop &loop, std::string name) : loop_(loop), name_(std::move(name)) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0)
        throw std::system_error(errno, std::generic_category(), "epoll_create1(" + name_ + ")");
    sd_event_source *s = nullptr;
    if (int r = sd_event_add_io(loop.get(), &s, epfd_, EPOLLIN, &IoGroup::on_ready, this); r < 0) {
        ::close(epfd_);
        sd_check(r, "sd_event_add_io(" + name_ + ")");
    }
    source_ = EventSource(s);
    (void)sd_event_source_set_description(s, name_.c_str());
}

IoGroup::~IoGroup() {
    source_.reset();
    ::close(epfd_);
}

IoGroup::Watch IoGroup::watch(int fd, std::uint32_t events, Callback fn) {
    const std::uint64_t key = next_key_++;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) < 0)
        throw std::system_error(errno, std::generic_category(),
                                "epoll_ctl(ADD, fd " + std::to_string(fd) + ") in " + name_);
    entries_.emplace(key, std::make_unique<Entry>(Entry{fd, std::move(fn)}));
    return Watch(this, key);
}

void IoGroup::remove(std::uint64_t key) noexcept {
    auto node = entries_.extract(key);
    if (node.empty())
        return;
    // Before the caller closes the fd: a dup of it elsewhere would keep the registration alive.
    (void)epoll_ctl(epfd_, EPOLL_CTL_DEL, node.mapped()->fd, nullptr);
    if (dispatching_)
        retired_.push_back(std::move(node.mapped()));
}

int IoGroup::on_ready(sd_event_source *, int, std::uint32_t, void *userdata) {
    auto *self = static_cast<IoGroup *>(userdata);
    try {
        self->dispatch();
    } catch (...) {
        self->dispatching_ = false;
        self->retired_.clear();
        self->loop_.fail(self->name_.c_str(), std::current_exception());
    }
    return 0;
}

void IoGroup::dispatch() {
    epoll_event events[kBatch];
    const int n = epoll_wait(epfd_, events, kBatch, 0);
    if (n < 0) {
        if (errno == EINTR)
            return;
        throw std::system_error(errno, std::generic_category(), "epoll_wait(" + name_ + ")");
    }
    dispatching_ = true;
    for (int i = 0; i < n; ++i) {
        auto it = entries_.find(events[i].data.u64);
        if (it != entries_.end())
            it->second->fn(events[i].events);
    }
    dispatching_ = false;
    retired_.clear();
}

} // namespace mcastd::runtime

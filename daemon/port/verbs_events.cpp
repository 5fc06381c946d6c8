// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/verbs_events.hpp"

#include <fcntl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/port_name.hpp"

namespace mcastd::port {

namespace {

// Plain functions rather than the libibverbs symbols themselves: ibv_get_device_list may be a
// macro (static provider builds), and these keep the table's types exact.
ibv_device **real_get_device_list(int *n) { return ibv_get_device_list(n); }
void real_free_device_list(ibv_device **l) { ibv_free_device_list(l); }
const char *real_get_device_name(ibv_device *d) { return ibv_get_device_name(d); }
ibv_context *real_open_device(ibv_device *d) { return ibv_open_device(d); }
int real_close_device(ibv_context *c) { return ibv_close_device(c); }
int real_get_async_event(ibv_context *c, ibv_async_event *e) { return ibv_get_async_event(c, e); }
void real_ack_async_event(ibv_async_event *e) { ibv_ack_async_event(e); }

const VerbsApi kLibibverbs{
    .get_device_list = real_get_device_list,
    .free_device_list = real_free_device_list,
    .get_device_name = real_get_device_name,
    .open_device = real_open_device,
    .close_device = real_close_device,
    .get_async_event = real_get_async_event,
    .ack_async_event = real_ack_async_event,
};

// Events handled per wakeup before the loop gets a turn; the fd stays readable (sd-event
// watches are level-triggered), so the rest follow in the next iteration.
constexpr int kMaxEventsPerWakeup = 64;

std::string event_name(ibv_event_type t) {
    const char *s = ibv_event_type_str(t);
    return s ? s : "event " + std::to_string(static_cast<int>(t));
}

} // namespace

const VerbsApi &libibverbs_api() { return kLibibverbs; }

std::optional<VerbsEvent> port_event_of(ibv_event_type type) {
    switch (type) {
    case IBV_EVENT_CLIENT_REREGISTER:
        return VerbsEvent::client_reregister;
    case IBV_EVENT_LID_CHANGE:
        return VerbsEvent::lid_change;
    case IBV_EVENT_PKEY_CHANGE:
        return VerbsEvent::pkey_change;
    case IBV_EVENT_SM_CHANGE:
        return VerbsEvent::sm_change;
    case IBV_EVENT_PORT_ERR:
        return VerbsEvent::port_err;
    case IBV_EVENT_PORT_ACTIVE:
        return VerbsEvent::port_active;
    default:
        return std::nullopt;
    }
}

VerbsEvents::VerbsEvents(runtime::EventLoop &loop, Hooks hooks, const VerbsApi &api)
    : loop_(loop), hooks_(std::move(hooks)), api_(api) {}

VerbsEvents::~VerbsEvents() { close_all(); }

void VerbsEvents::note(Note::Level level, std::string text) const {
    if (hooks_.note)
        hooks_.note(Note{level, std::move(text)});
}

std::size_t VerbsEvents::open() {
    int n = 0;
    errno = 0;
    ibv_device **list = api_.get_device_list(&n);
    if (!list) {
        // No verbs support at all (no kernel module, no provider): nothing to watch.
        note(Note::Level::debug, std::string("no verbs devices: ") +
                                     (errno ? std::strerror(errno) : "the device list is empty"));
        return devices_.size();
    }
    if (n == 0)
        note(Note::Level::debug, "no verbs devices: async events will not be watched");
    for (int i = 0; i < n; ++i) {
        const char *raw = api_.get_device_name(list[i]);
        const std::string name = raw ? raw : "?";
        if (hooks_.wanted && !hooks_.wanted(name))
            continue;
        if (std::any_of(devices_.begin(), devices_.end(),
                        [&](const auto &d) { return d->name == name; }))
            continue;
        errno = 0;
        ibv_context *ctx = api_.open_device(list[i]);
        if (!ctx) {
            note(Note::Level::warning,
                 name + ": cannot open the verbs device to watch its async events: " +
                     (errno ? std::strerror(errno) : "unknown error"));
            continue;
        }
        const int fd = ctx->async_fd;
        const int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
            note(Note::Level::warning, name + ": cannot make the async event fd non-blocking: " +
                                           std::strerror(errno));
            api_.close_device(ctx);
            continue;
        }
        auto dev = std::make_unique<Device>();
        dev->name = name;
        dev->context = ctx;
        Device *raw_dev = dev.get();
        try {
            dev->watch = loop_.watch_io(
                fd, EPOLLIN, [this, raw_dev](std::uint32_t revents) { on_readable(raw_dev, revents); },
                "verbs async events");
        } catch (...) {
            api_.close_device(ctx);
            api_.free_device_list(list);
            throw;
        }
        note(Note::Level::info, name + ": watching verbs async events");
        devices_.push_back(std::move(dev));
    }
    api_.free_device_list(list);
    return devices_.size();
}

std::vector<std::string> VerbsEvents::devices() const {
    std::vector<std::string> out;
    for (const auto &d : devices_)
        out.push_back(d->name);
    return out;
}

void VerbsEvents::close_all() {
    while (!devices_.empty())
        close(devices_.back().get());
}

void VerbsEvents::close(Device *dev) {
    dev->watch.reset(); // safe from inside the watch's own callback (event_source.hpp)
    api_.close_device(dev->context);
    std::erase_if(devices_, [dev](const auto &d) { return d.get() == dev; });
}

void VerbsEvents::on_readable(Device *dev, std::uint32_t revents) {
    for (int i = 0; i < kMaxEventsPerWakeup; ++i) {
        ibv_async_event ev{};
        errno = 0;
        if (api_.get_async_event(dev->context, &ev) != 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (revents & (EPOLLERR | EPOLLHUP)) {
                    note(Note::Level::warning, dev->name + ": the async event fd failed; no longer "
                                                          "watching the device's events");
                    close(dev);
                }
                return;
            }
            // Without this the level-triggered watch would spin on an fd that only fails.
            note(Note::Level::warning, dev->name + ": reading async events failed: " +
                                           std::strerror(errno) +
                                           "; no longer watching the device's events");
            close(dev);
            return;
        }
        // Copy, then acknowledge before anything can throw.
        const ibv_event_type type = ev.event_type;
        const int port_num = ev.element.port_num;
        api_.ack_async_event(&ev);
        if (type == IBV_EVENT_DEVICE_FATAL) {
            const std::string name = dev->name;
            note(Note::Level::error,
                 name + ": IBV_EVENT_DEVICE_FATAL: the device failed; its ports stay unusable "
                        "until it is reset and the daemon restarted");
            close(dev);
            if (hooks_.on_fatal)
                hooks_.on_fatal(name);
            return;
        }
        dispatch(*dev, type, port_num);
    }
}

void VerbsEvents::dispatch(Device &dev, ibv_event_type type, int port_num) {
    const auto event = port_event_of(type);
    if (!event) {
        ++ignored_;
        note(Note::Level::debug, dev.name + ": ignored " + event_name(type));
        return;
    }
    std::optional<PortIndex> port;
    if (port_num > 0 && port_num < 256 && hooks_.lookup)
        port = hooks_.lookup(dev.name, static_cast<std::uint8_t>(port_num));
    if (!port) {
        ++ignored_;
        note(Note::Level::debug, port_name(dev.name, port_num) + ": ignored " +
                                     event_name(type) + " (not a port the daemon serves)");
        return;
    }
    ++dispatched_;
    note(Note::Level::info, port_name(dev.name, port_num) + ": " + event_name(type));
    if (hooks_.on_event)
        hooks_.on_event(*port, *event);
}

} // namespace mcastd::port

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Verbs async events (IBV_EVENT_*) as event-loop sources: the fastest of the daemon's event
// sources, and the only one that sees CLIENT_REREGISTER (doc/architecture.md §6;
// doc/testbed.md §8).
//
// open() opens every verbs device (ibv_get_device_list, ibv_open_device), makes its async fd
// non-blocking and watches it on the EventLoop. When it is readable, every pending event is
// read (ibv_get_async_event), copied, acknowledged (ibv_ack_async_event, at once, so that a
// throwing handler cannot leave one unacknowledged) and then dispatched: port events of
// ports the daemon serves go to Hooks::on_event as a VerbsEvent; DEVICE_FATAL is logged as
// an error, reported to Hooks::on_fatal and the device is closed (srp_daemon reopens in
// process; this daemon leaves that to a restart for now). Everything else (QP, CQ and SRQ
// events: the daemon owns none; GID_CHANGE, which the kernel ignores for multicast too) is
// acknowledged and ignored.
//
// Only real hardware has verbs devices. Under umad2sim there are none and on this kind of
// test host ibv_get_device_list() finds nothing: open() then watches nothing and says so at
// debug level only. The verbs calls go through a table of function pointers (VerbsApi) so
// that unit tests inject devices and events without hardware.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <infiniband/verbs.h>

#include "core/sa_service.hpp" // PortIndex
#include "port/port_rules.hpp" // VerbsEvent, Note
#include "runtime/event_loop.hpp"

namespace mcastd::port {

// The libibverbs calls VerbsEvents makes.
struct VerbsApi {
    ibv_device **(*get_device_list)(int *num_devices);
    void (*free_device_list)(ibv_device **list);
    const char *(*get_device_name)(ibv_device *device);
    ibv_context *(*open_device)(ibv_device *device);
    int (*close_device)(ibv_context *context);
    int (*get_async_event)(ibv_context *context, ibv_async_event *event);
    void (*ack_async_event)(ibv_async_event *event);
};

// The real libibverbs.
const VerbsApi &libibverbs_api();

// The port event an IBV_EVENT_* is, or nullopt for events the port rules do not act on.
std::optional<VerbsEvent> port_event_of(ibv_event_type type);

class VerbsEvents {
public:
    struct Hooks {
        // Which devices to open; unset: every device.
        std::function<bool(std::string_view device)> wanted;
        // (device, port number) -> the daemon's port; nullopt: not served, event ignored.
        std::function<std::optional<PortIndex>(std::string_view device, std::uint8_t port_num)>
            lookup;
        // A port event of a served port (PortPoller::on_verbs_event).
        std::function<void(PortIndex, VerbsEvent)> on_event;
        // IBV_EVENT_DEVICE_FATAL: the device and all its ports are unusable until it is reset.
        std::function<void(const std::string &device)> on_fatal;
        // Lines for the log; `text` names the device.
        std::function<void(const Note &)> note;
    };

    // `loop` and the table must outlive this object. Opens nothing yet.
    VerbsEvents(runtime::EventLoop &loop, Hooks hooks, const VerbsApi &api = libibverbs_api());
    ~VerbsEvents(); // closes every device it opened
    VerbsEvents(const VerbsEvents &) = delete;
    VerbsEvents &operator=(const VerbsEvents &) = delete;

    // Opens and watches every wanted device not yet open; returns how many are watched now.
    // A device that cannot be opened is noted (warning) and skipped. Throws only what the
    // event loop throws when it cannot add a watch (std::system_error).
    std::size_t open();
    // Names of the devices being watched.
    std::vector<std::string> devices() const;
    void close_all();

    // Events dispatched, and events ignored (unknown port, not a port event), since open().
    std::uint64_t dispatched() const { return dispatched_; }
    std::uint64_t ignored() const { return ignored_; }

private:
    struct Device {
        std::string name;
        ibv_context *context = nullptr;
        runtime::EventSource watch;
    };

    void on_readable(Device *dev, std::uint32_t revents);
    void dispatch(Device &dev, ibv_event_type type, int port_num);
    void close(Device *dev);
    void note(Note::Level level, std::string text) const;

    runtime::EventLoop &loop_;
    Hooks hooks_;
    const VerbsApi &api_;
    std::vector<std::unique_ptr<Device>> devices_;
    std::uint64_t dispatched_ = 0;
    std::uint64_t ignored_ = 0;
};

} // namespace mcastd::port

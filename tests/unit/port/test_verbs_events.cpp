// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// VerbsEvents with an injected verbs table: devices opened and watched on a real EventLoop,
// every event acknowledged, port events mapped to the daemon's ports, DEVICE_FATAL and read
// errors handled, and nothing at all (quietly) when there are no verbs devices.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "port/verbs_events.hpp"
#include "runtime/event_loop.hpp"

namespace mcastd::port {
namespace {

using namespace std::chrono_literals;

// The fake verbs library: devices with a pipe as their async fd. A test queues an event and
// writes one byte; get_async_event() consumes one byte per event, so the fd is readable
// exactly while events are pending, as the kernel's is.
struct FakeVerbs {
    struct Dev {
        std::string name;
        ibv_device device{};
        ibv_context context{};
        int fds[2] = {-1, -1};
        std::deque<ibv_async_event> events;
        bool open_fails = false;
        int read_errno = 0; // get_async_event fails with this once the fd is readable
        bool opened = false, closed = false;
    };

    std::vector<std::unique_ptr<Dev>> devs;
    std::vector<ibv_device *> list;
    bool list_fails = false;
    int lists_freed = 0;
    int acks = 0;

    Dev &add(std::string name) {
        devs.push_back(std::make_unique<Dev>());
        devs.back()->name = std::move(name);
        return *devs.back();
    }
    Dev &by_device(ibv_device *d) {
        for (auto &x : devs)
            if (&x->device == d)
                return *x;
        throw std::logic_error("FakeVerbs: unknown device");
    }
    Dev &by_context(ibv_context *c) {
        for (auto &x : devs)
            if (&x->context == c)
                return *x;
        throw std::logic_error("FakeVerbs: unknown context");
    }
    void push(Dev &d, ibv_event_type type, int port_num) {
        ibv_async_event ev{};
        ev.event_type = type;
        ev.element.port_num = port_num;
        d.events.push_back(ev);
        const char byte = 1;
        ASSERT_EQ(write(d.fds[1], &byte, 1), 1);
    }
    ~FakeVerbs() {
        for (auto &d : devs)
            for (int fd : d->fds)
                if (fd >= 0)
                    ::close(fd);
    }
};

FakeVerbs *fake = nullptr;

const VerbsApi kFakeApi{
    .get_device_list = [](int *n) -> ibv_device ** {
        if (fake->list_fails) {
            errno = ENOSYS;
            return nullptr;
        }
        fake->list.clear();
        for (auto &d : fake->devs)
            fake->list.push_back(&d->device);
        *n = static_cast<int>(fake->list.size());
        fake->list.push_back(nullptr);
        return fake->list.data();
    },
    .free_device_list = [](ibv_device **) { ++fake->lists_freed; },
    .get_device_name = [](ibv_device *d) -> const char * { return fake->by_device(d).name.c_str(); },
    .open_device = [](ibv_device *d) -> ibv_context * {
        FakeVerbs::Dev *dev = &fake->by_device(d);
        if (dev->open_fails) {
            errno = EACCES;
            return nullptr;
        }
        if (pipe2(dev->fds, O_CLOEXEC) != 0)
            return nullptr;
        dev->context.async_fd = dev->fds[0];
        dev->opened = true;
        return &dev->context;
    },
    .close_device = [](ibv_context *c) -> int {
        fake->by_context(c).closed = true;
        return 0;
    },
    .get_async_event = [](ibv_context *c, ibv_async_event *ev) -> int {
        FakeVerbs::Dev *dev = &fake->by_context(c);
        char byte;
        if (read(dev->fds[0], &byte, 1) != 1)
            return -1; // errno is EAGAIN: the fd is non-blocking
        if (dev->read_errno) {
            errno = dev->read_errno;
            return -1;
        }
        *ev = dev->events.front();
        dev->events.pop_front();
        return 0;
    },
    .ack_async_event = [](ibv_async_event *) { ++fake->acks; },
};

class Verbs : public ::testing::Test {
protected:
    Verbs() { fake = &verbs; }
    ~Verbs() override { fake = nullptr; }

    VerbsEvents::Hooks hooks() {
        VerbsEvents::Hooks h;
        h.lookup = [](std::string_view device, std::uint8_t port) -> std::optional<PortIndex> {
            if (device == "mlx5_0" && port == 1)
                return 4;
            if (device == "mlx5_1" && port == 1)
                return 5;
            return std::nullopt;
        };
        h.on_event = [this](PortIndex port, VerbsEvent e) {
            got.emplace_back(port, e);
            if (got.size() == want)
                loop.exit(0);
        };
        h.note = [this](const Note &n) { notes.push_back(n); };
        return h;
    }

    // Runs the loop until a hook exits it; a deadline (not a sleep) turns a hang into a failure.
    int run() {
        auto guard = loop.timers().start(5s, [this] { loop.exit(99); });
        const int rc = loop.run();
        loop.timers().cancel(guard);
        return rc;
    }

    std::vector<Note> notes_at_least(Note::Level level) const {
        std::vector<Note> out;
        for (const auto &n : notes)
            if (n.level >= level)
                out.push_back(n);
        return out;
    }

    FakeVerbs verbs;
    runtime::EventLoop loop;
    std::vector<std::pair<PortIndex, VerbsEvent>> got;
    std::size_t want = 0;
    std::vector<Note> notes;
};

TEST(VerbsEventMapping, PortEventsAndTheRest) {
    EXPECT_EQ(port_event_of(IBV_EVENT_CLIENT_REREGISTER), VerbsEvent::client_reregister);
    EXPECT_EQ(port_event_of(IBV_EVENT_LID_CHANGE), VerbsEvent::lid_change);
    EXPECT_EQ(port_event_of(IBV_EVENT_PKEY_CHANGE), VerbsEvent::pkey_change);
    EXPECT_EQ(port_event_of(IBV_EVENT_SM_CHANGE), VerbsEvent::sm_change);
    EXPECT_EQ(port_event_of(IBV_EVENT_PORT_ERR), VerbsEvent::port_err);
    EXPECT_EQ(port_event_of(IBV_EVENT_PORT_ACTIVE), VerbsEvent::port_active);
    for (ibv_event_type t : {IBV_EVENT_GID_CHANGE, IBV_EVENT_DEVICE_FATAL, IBV_EVENT_QP_FATAL,
                             IBV_EVENT_CQ_ERR, IBV_EVENT_SRQ_LIMIT_REACHED})
        EXPECT_EQ(port_event_of(t), std::nullopt) << ibv_event_type_str(t);
}

TEST_F(Verbs, NoVerbsSupportWatchesNothingQuietly) {
    verbs.list_fails = true;
    VerbsEvents ev(loop, hooks(), kFakeApi);
    EXPECT_EQ(ev.open(), 0u);
    EXPECT_TRUE(ev.devices().empty());
    EXPECT_TRUE(notes_at_least(Note::Level::info).empty());
}

TEST_F(Verbs, NoDevicesWatchesNothingQuietly) {
    VerbsEvents ev(loop, hooks(), kFakeApi);
    EXPECT_EQ(ev.open(), 0u);
    EXPECT_EQ(verbs.lists_freed, 1);
    EXPECT_TRUE(notes_at_least(Note::Level::info).empty());
}

TEST_F(Verbs, TheRealLibraryOnAHostWithoutDevicesDoesNothing) {
    // This test host (and umad2sim) has no verbs devices; on one that has, it watches them.
    VerbsEvents ev(loop, hooks());
    const std::size_t n = ev.open();
    if (n > 0)
        GTEST_SKIP() << "this host has " << n << " verbs device(s)";
    EXPECT_TRUE(notes_at_least(Note::Level::info).empty());
}

TEST_F(Verbs, OpensTheWantedDevicesOnceWithNonBlockingFds) {
    verbs.add("mlx5_0");
    verbs.add("mlx5_1");
    verbs.add("mlx4_0");
    auto h = hooks();
    h.wanted = [](std::string_view name) { return name.starts_with("mlx5"); };
    VerbsEvents ev(loop, std::move(h), kFakeApi);
    EXPECT_EQ(ev.open(), 2u);
    EXPECT_EQ(ev.devices(), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
    EXPECT_FALSE(verbs.devs[2]->opened);
    EXPECT_TRUE(fcntl(verbs.devs[0]->fds[0], F_GETFL) & O_NONBLOCK);
    EXPECT_EQ(verbs.lists_freed, 1);
    EXPECT_EQ(ev.open(), 2u) << "a second open() adds nothing";
    EXPECT_EQ(verbs.lists_freed, 2);
}

TEST_F(Verbs, ADeviceThatCannotBeOpenedIsNotedAndSkipped) {
    verbs.add("mlx5_0").open_fails = true;
    verbs.add("mlx5_1");
    VerbsEvents ev(loop, hooks(), kFakeApi);
    EXPECT_EQ(ev.open(), 1u);
    const auto warn = notes_at_least(Note::Level::warning);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_EQ(warn[0].text,
              "mlx5_0: cannot open the verbs device to watch its async events: Permission denied");
}

TEST_F(Verbs, EventsAreAcknowledgedMappedAndDispatched) {
    auto &d0 = verbs.add("mlx5_0");
    auto &d1 = verbs.add("mlx5_1");
    VerbsEvents ev(loop, hooks(), kFakeApi);
    ASSERT_EQ(ev.open(), 2u);
    verbs.push(d0, IBV_EVENT_GID_CHANGE, 1);      // not a port watch event
    verbs.push(d0, IBV_EVENT_LID_CHANGE, 2);      // port 2 is not served
    verbs.push(d0, IBV_EVENT_CLIENT_REREGISTER, 1);
    verbs.push(d1, IBV_EVENT_PORT_ERR, 1);
    verbs.push(d0, IBV_EVENT_PORT_ACTIVE, 1);
    want = 3;
    ASSERT_EQ(run(), 0);
    // Per device in order; the two devices' fds may be served in either order.
    std::vector<std::pair<PortIndex, VerbsEvent>> port4, port5;
    for (const auto &g : got)
        (g.first == 4 ? port4 : port5).push_back(g);
    using P = std::pair<PortIndex, VerbsEvent>;
    EXPECT_EQ(port4, (std::vector<P>{{4, VerbsEvent::client_reregister}, {4, VerbsEvent::port_active}}));
    EXPECT_EQ(port5, (std::vector<P>{{5, VerbsEvent::port_err}}));
    EXPECT_EQ(verbs.acks, 5) << "every event is acknowledged, ignored ones too";
    EXPECT_EQ(ev.dispatched(), 3u);
    EXPECT_EQ(ev.ignored(), 2u);
    EXPECT_TRUE(notes_at_least(Note::Level::warning).empty());
}

TEST_F(Verbs, AnEventIsAcknowledgedBeforeItsHandlerCanThrow) {
    auto &d0 = verbs.add("mlx5_0");
    auto h = hooks();
    h.on_event = [](PortIndex, VerbsEvent) { throw std::runtime_error("handler failed"); };
    VerbsEvents ev(loop, std::move(h), kFakeApi);
    ev.open();
    verbs.push(d0, IBV_EVENT_PORT_ACTIVE, 1);
    EXPECT_THROW(run(), std::runtime_error);
    EXPECT_EQ(verbs.acks, 1);
}

TEST_F(Verbs, DeviceFatalIsLoudAndClosesTheDevice) {
    auto &d0 = verbs.add("mlx5_0");
    verbs.add("mlx5_1");
    std::vector<std::string> fatal;
    auto h = hooks();
    h.on_fatal = [&](const std::string &name) {
        fatal.push_back(name);
        loop.exit(0);
    };
    VerbsEvents ev(loop, std::move(h), kFakeApi);
    ev.open();
    verbs.push(d0, IBV_EVENT_DEVICE_FATAL, 0);
    ASSERT_EQ(run(), 0);
    EXPECT_EQ(fatal, std::vector<std::string>{"mlx5_0"});
    EXPECT_EQ(verbs.acks, 1);
    EXPECT_TRUE(d0.closed);
    EXPECT_EQ(ev.devices(), std::vector<std::string>{"mlx5_1"});
    const auto err = notes_at_least(Note::Level::error);
    ASSERT_EQ(err.size(), 1u);
    EXPECT_EQ(err[0].text, "mlx5_0: IBV_EVENT_DEVICE_FATAL: the device failed; its ports stay "
                           "unusable until it is reset and the daemon restarted");
}

TEST_F(Verbs, AReadErrorStopsWatchingInsteadOfSpinning) {
    auto &d0 = verbs.add("mlx5_0");
    auto h = hooks();
    h.note = [this](const Note &n) {
        notes.push_back(n);
        if (n.level == Note::Level::warning)
            loop.exit(0);
    };
    VerbsEvents ev(loop, std::move(h), kFakeApi);
    ev.open();
    d0.read_errno = EIO;
    verbs.push(d0, IBV_EVENT_PORT_ACTIVE, 1);
    ASSERT_EQ(run(), 0);
    EXPECT_TRUE(d0.closed);
    EXPECT_TRUE(ev.devices().empty());
    EXPECT_EQ(notes.back().text, "mlx5_0: reading async events failed: Input/output error; no "
                                 "longer watching the device's events");
    EXPECT_EQ(verbs.acks, 0) << "nothing was read, so nothing to acknowledge";
}

TEST_F(Verbs, ClosingClosesEveryDevice) {
    verbs.add("mlx5_0");
    verbs.add("mlx5_1");
    {
        VerbsEvents ev(loop, hooks(), kFakeApi);
        ev.open();
    }
    EXPECT_TRUE(verbs.devs[0]->closed);
    EXPECT_TRUE(verbs.devs[1]->closed);
}

} // namespace
} // namespace mcastd::port

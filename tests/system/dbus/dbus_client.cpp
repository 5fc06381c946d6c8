// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-dbus-client: one long-lived D-Bus connection to org.rdmamcast1 driven by lines on
// stdin, so the system tests can act as an owner that joins and later leaves (busctl opens a
// new connection, i.e. a new owner, per call) and can watch which signals reach whom.
//
//   join DEVICE PORT MGID|- JOIN_STATE   -> "ok PATH MLID" or "error NAME MESSAGE"
//   join-name DEVICE PORT NAME STATE     -> the same, joining the named group NAME
//   join-ip DEVICE PORT IP STATE         -> the same, joining the IP group IP on a RoCE port with a
//                                           UDP socket of this process as the option "socket"
//   join-key DEVICE PORT MGID STATE N    -> the same, with one option (a uint32) whose key is N bytes
//                                           of '/'; an error's message cut after 200 bytes
//   join-async DEVICE PORT MGID|- STATE  -> "sent" at once; later "reply ok PATH MLID" or
//                                           "reply error NAME MESSAGE"
//   leave PATH                           -> "ok" or "error NAME MESSAGE"
//   ping                                 -> "pong" after every signal that arrived before the
//                                           daemon's answer to a Peer.Ping has been printed
//   list                                 -> ListGroups: "ok N" (N groups) or "error NAME MESSAGE"
//   list-cookie COOKIE                   -> the same, the call sent with that cookie (a sender
//                                           chooses its cookies; an honest one never repeats one)
//   ports                                -> the Ports property: "ok N" (N ports) or "error ..."
//   whoami                               -> "pid PID": the process that holds the connection
//   StateChanged signals from org.rdmamcast1 (any sender match, unicast or not):
//                                        -> "signal PATH STATE MGID CHANGED,... REASON" (MGID: the
//                                           record's, "-" when it has none)
// EOF on stdin exits.
//
// With --connect-fork-exit, the process started connects the socket of DBUS_SYSTEM_BUS_ADDRESS
// (the bus records its pid then), forks and exits; its child waits until it is gone, then
// authenticates, says Hello and serves the commands above on that connection: a caller whose
// recorded pid belongs to no process (or, later, to another one).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

namespace {

sd_bus *bus = nullptr;
sd_event *loop = nullptr;
std::string pending;

void say(const std::string &line) {
    std::cout << line << std::endl;
}

std::string error_line(const sd_bus_error &e) {
    return std::string("error ") + (e.name ? e.name : "?") + " " + (e.message ? e.message : "");
}

// Skips one a{sv} record, returning its "mlid" (and its "mgid" in `mgid`, when asked).
unsigned read_record_mlid(sd_bus_message *m, std::string *mgid = nullptr) {
    unsigned mlid = 0;
    sd_bus_message_enter_container(m, 'a', "{sv}");
    while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
        const char *key = nullptr;
        sd_bus_message_read(m, "s", &key);
        if (std::strcmp(key, "mlid") == 0) {
            std::uint16_t v = 0;
            sd_bus_message_read(m, "v", "q", &v);
            mlid = v;
        } else if (mgid && std::strcmp(key, "mgid") == 0) {
            const char *v = nullptr;
            sd_bus_message_read(m, "v", "s", &v);
            *mgid = v ? v : "";
        } else {
            sd_bus_message_skip(m, "v");
        }
        sd_bus_message_exit_container(m);
    }
    sd_bus_message_exit_container(m);
    return mlid;
}

int on_state_changed(sd_bus_message *m, void *, sd_bus_error *) {
    const char *state = nullptr, *reason = nullptr;
    sd_bus_message_read(m, "s", &state);
    std::string mgid;
    read_record_mlid(m, &mgid);
    std::string changed;
    sd_bus_message_enter_container(m, 'a', "s");
    for (const char *c = nullptr; sd_bus_message_read(m, "s", &c) > 0;)
        changed += (changed.empty() ? "" : ",") + std::string(c);
    sd_bus_message_exit_container(m);
    sd_bus_message_read(m, "s", &reason);
    say(std::string("signal ") + sd_bus_message_get_path(m) + " " + state + " " + (mgid.empty() ? "-" : mgid) + " " +
        (changed.empty() ? "-" : changed) + " " + reason);
    return 0;
}

int on_async_reply(sd_bus_message *m, void *, sd_bus_error *) {
    if (const sd_bus_error *e = sd_bus_message_get_error(m)) {
        say("reply " + error_line(*e));
        return 0;
    }
    const char *path = nullptr;
    sd_bus_message_read(m, "o", &path);
    const std::string p = path;
    say("reply ok " + p + " " + std::to_string(read_record_mlid(m)));
    return 0;
}

// "ok N": N elements of type `element` in the array `reply` holds.
std::string count_line(sd_bus_message *reply, const char *element) {
    int n = 0;
    sd_bus_message_enter_container(reply, 'a', element);
    while (sd_bus_message_skip(reply, element) > 0)
        ++n;
    return "ok " + std::to_string(n);
}

// A Join's answer: "ok PATH MLID" or "error NAME MESSAGE".
void say_joined(int r, const sd_bus_error &e, sd_bus_message *reply) {
    if (r < 0)
        return say(error_line(e));
    const char *path = nullptr;
    sd_bus_message_read(reply, "o", &path);
    const std::string p = path;
    say("ok " + p + " " + std::to_string(read_record_mlid(reply)));
}

void command(const std::string &line) {
    std::istringstream in(line);
    std::string op;
    in >> op;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = nullptr;
    if (op == "join-async") {
        std::string dev, mgid, state;
        unsigned port = 0;
        in >> dev >> port >> mgid >> state;
        if (mgid == "-")
            mgid.clear();
        const int r = sd_bus_call_method_async(bus, nullptr, "org.rdmamcast1", "/org/rdmamcast1",
                                               "org.rdmamcast1.Manager", "Join", on_async_reply, nullptr,
                                               "sqssa{sv}", dev.c_str(), static_cast<std::uint16_t>(port),
                                               mgid.c_str(), state.c_str(), 0);
        say(r < 0 ? std::string("error send ") + std::strerror(-r) : "sent");
    } else if (op == "join" || op == "join-name") {
        std::string dev, mgid, state;
        unsigned port = 0;
        in >> dev >> port >> mgid >> state;
        const std::string name = op == "join-name" ? mgid : "";
        if (mgid == "-" || !name.empty())
            mgid.clear();
        const int r = name.empty()
                          ? sd_bus_call_method(bus, "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager",
                                               "Join", &e, &reply, "sqssa{sv}", dev.c_str(),
                                               static_cast<std::uint16_t>(port), mgid.c_str(), state.c_str(), 0)
                          : sd_bus_call_method(bus, "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager",
                                               "Join", &e, &reply, "sqssa{sv}", dev.c_str(),
                                               static_cast<std::uint16_t>(port), "", state.c_str(), 1, "name", "s",
                                               name.c_str());
        say_joined(r, e, reply);
    } else if (op == "join-key") {
        std::string dev, mgid, state;
        unsigned port = 0;
        std::size_t n = 0;
        in >> dev >> port >> mgid >> state >> n;
        const std::string key(n, '/');
        const int r = sd_bus_call_method(bus, "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", &e,
                                         &reply, "sqssa{sv}", dev.c_str(), static_cast<std::uint16_t>(port),
                                         mgid.c_str(), state.c_str(), 1, key.c_str(), "u", 1u);
        if (r < 0)
            say(error_line(e).substr(0, 200));
        else
            say_joined(r, e, reply);
    } else if (op == "join-ip") {
        std::string dev, ip, state;
        unsigned port = 0;
        in >> dev >> port >> ip >> state;
        const int sock = ::socket(ip.find(':') == std::string::npos ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        const int r = sd_bus_call_method(bus, "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", &e,
                                         &reply, "sqssa{sv}", dev.c_str(), static_cast<std::uint16_t>(port), "",
                                         state.c_str(), 2, "ip", "s", ip.c_str(), "socket", "h", sock);
        ::close(sock); // the daemon keeps its own copy while it needs one
        say_joined(r, e, reply);
    } else if (op == "leave") {
        std::string path;
        in >> path;
        if (sd_bus_call_method(bus, "org.rdmamcast1", path.c_str(), "org.rdmamcast1.Membership", "Leave", &e,
                               &reply, "") < 0)
            say(error_line(e));
        else
            say("ok");
    } else if (op == "list") {
        if (sd_bus_call_method(bus, "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "ListGroups", &e,
                               &reply, "") < 0) {
            say(error_line(e));
        } else {
            say(count_line(reply, "(sqsquasasa(tssuus))"));
        }
    } else if (op == "list-cookie") {
        std::uint64_t cookie = 0;
        in >> cookie;
        sd_bus_message *call = nullptr;
        int r = sd_bus_message_new_method_call(bus, &call, "org.rdmamcast1", "/org/rdmamcast1",
                                               "org.rdmamcast1.Manager", "ListGroups");
        if (r >= 0)
            r = sd_bus_message_seal(call, cookie, 20'000'000); // 20 s; sd_bus_call sends it as it is
        if (r >= 0)
            r = sd_bus_call(bus, call, 0, &e, &reply);
        sd_bus_message_unref(call);
        if (r < 0)
            say(sd_bus_error_is_set(&e) ? error_line(e) : std::string("error send ") + std::strerror(-r));
        else
            say(count_line(reply, "(sqsquasasa(tssuus))"));
    } else if (op == "ports") {
        if (sd_bus_get_property(bus, "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Ports", &e,
                                &reply, "a(sqsb)") < 0) {
            say(error_line(e));
        } else {
            say(count_line(reply, "(sqsb)"));
        }
    } else if (op == "whoami") {
        say("pid " + std::to_string(getpid()));
    } else if (op == "ping") {
        if (sd_bus_call_method(bus, "org.rdmamcast1", "/org/rdmamcast1", "org.freedesktop.DBus.Peer", "Ping", &e,
                               &reply, "") < 0) {
            say(error_line(e));
        } else {
            // Messages that came before the answer were queued by the call: dispatch them now.
            while (sd_bus_process(bus, nullptr) > 0) {
            }
            say("pong");
        }
    } else {
        say("error usage unknown command: " + op);
    }
    sd_bus_message_unref(reply);
    sd_bus_error_free(&e);
}

int on_stdin(sd_event_source *, int fd, std::uint32_t, void *) {
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) {
        sd_event_exit(loop, 0);
        return 0;
    }
    pending.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        const std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        command(line);
    }
    return 0;
}

} // namespace

// --connect-fork-exit: see the top. The child's bus, on the connection its parent made.
int open_handed_over(sd_bus **out) {
    const char *addr = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
    const std::string prefix = "unix:path=";
    if (!addr || std::string(addr).rfind(prefix, 0) != 0)
        return -EINVAL;
    std::string path = std::string(addr).substr(prefix.size());
    path = path.substr(0, path.find(','));
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) < 0)
        return -errno;
    const pid_t connector = getpid();
    const pid_t child = fork();
    if (child < 0)
        return -errno;
    if (child > 0)
        _exit(0);
    // Until the connector has exited (a zombie or reaped: either way no process runs as it).
    const long pidfd = syscall(SYS_pidfd_open, connector, 0);
    if (pidfd >= 0) {
        pollfd p{static_cast<int>(pidfd), POLLIN, 0};
        poll(&p, 1, -1);
        close(static_cast<int>(pidfd));
    }
    int r = sd_bus_new(out);
    if (r >= 0) r = sd_bus_set_fd(*out, fd, fd);
    if (r >= 0) r = sd_bus_set_bus_client(*out, 1);
    if (r >= 0) r = sd_bus_start(*out);
    return r;
}

int main(int argc, char **argv) {
    const bool handed_over = argc > 1 && std::strcmp(argv[1], "--connect-fork-exit") == 0;
    if (int r = handed_over ? open_handed_over(&bus) : sd_bus_open_system(&bus); r < 0) {
        std::fprintf(stderr, "mcastd-dbus-client: cannot connect to the system bus: %s\n", std::strerror(-r));
        return 1;
    }
    sd_event_default(&loop);
    sd_bus_attach_event(bus, loop, 0);
    sd_bus_match_signal(bus, nullptr, "org.rdmamcast1", nullptr, "org.rdmamcast1.Membership", "StateChanged",
                        on_state_changed, nullptr);
    sd_event_add_io(loop, nullptr, STDIN_FILENO, EPOLLIN, on_stdin, nullptr);
    say("ready");
    const int r = sd_event_loop(loop);
    sd_bus_flush_close_unref(bus);
    sd_event_unref(loop);
    return r < 0 ? 1 : 0;
}

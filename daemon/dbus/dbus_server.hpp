// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The D-Bus transport (proto/DBUS.md): org.rdmamcast1 on the system bus, over the same client
// sessions as the Unix socket (frontend/), so a D-Bus caller lives by the same limits and the
// same access policy, with the identity the bus attests (caller_identity.hpp; the daemon watches
// NameOwnerChanged from its start to know when each connection appeared). One session per
// caller's unique name; the same NameOwnerChanged match says when the name leaves the bus, so a
// caller that leaves releases its memberships exactly as a closed socket does (one match rule in
// all, however many callers: the bus limits the rules of a connection). One object per
// membership, which only its owner may leave and only its owner hears about.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <variant>

#include <systemd/sd-bus.h>

#include "dbus/log_control.hpp"
#include "dbus/name_watch.hpp"
#include "frontend/sessions.hpp"
#include "runtime/event_loop.hpp"

namespace mcastd::dbus {

inline constexpr const char *kBusName = "org.rdmamcast1";
inline constexpr const char *kManagerPath = "/org/rdmamcast1";
inline constexpr const char *kMembershipPrefix = "/org/rdmamcast1/membership";

class DbusServer final {
public:
    // Connects to the system bus (sd_bus_open_system(), which honours DBUS_SYSTEM_BUS_ADDRESS),
    // registers every object, attaches to `loop` and only then requests the bus name, so no
    // caller ever sees a half-built service. Throws std::system_error naming the step that
    // failed (no bus, name taken or refused by the bus policy).
    DbusServer(runtime::EventLoop &loop, frontend::Sessions &sessions, LogHooks log);
    ~DbusServer();
    DbusServer(const DbusServer &) = delete;
    DbusServer &operator=(const DbusServer &) = delete;

    // Graceful stop: releases every D-Bus caller's memberships.
    void disconnect_all();
    // A restart's drain: every Join from now on is answered Cancelled ("call again"), so that
    // callers cannot keep the drain from ending and no Join waits at the hand-over, where the
    // bus would answer it NoReply. Leave, Evict and the rest are served: what they release is
    // drained too. The socket pauses instead, its requests waiting for the next instance.
    void pause() { paused_ = true; }
    std::size_t clients() const { return owners_.size(); }

    // The bus's id (sd_bus_get_bus_id(), 32 hex digits): the restart state keeps it, since a
    // bus that restarted hands the same unique names to other connections.
    std::string bus_id() const;
    // After a restart of the daemon: the sessions the previous instance kept for D-Bus callers
    // (detached, Sessions::restore()) on the bus `saved_bus_id`. Each whose caller's unique
    // name is still on this bus (NameHasOwner) is the caller's again, with its Membership objects
    // under the same ids and its StateChanged signals going to it; the others stay detached for
    // the daemon to release. Returns how many were taken back.
    std::size_t take_back(const std::string &saved_bus_id);

private:
    struct Owner;
    struct Membership;
    struct Unref {
        void operator()(sd_bus *b) const noexcept { sd_bus_flush_close_unref(b); }
        void operator()(sd_bus_slot *s) const noexcept { sd_bus_slot_unref(s); }
    };
    using SlotPtr = std::unique_ptr<sd_bus_slot, Unref>;

    // sd-bus callbacks (userdata: this, or the Membership the object path names).
    static int on_join(sd_bus_message *m, void *userdata, sd_bus_error *error);
    static int on_list_groups(sd_bus_message *m, void *userdata, sd_bus_error *error);
    static int on_list_groups2(sd_bus_message *m, void *userdata, sd_bus_error *error);
    static int on_evict(sd_bus_message *m, void *userdata, sd_bus_error *error);
    static int get_ports(sd_bus *, const char *, const char *, const char *, sd_bus_message *reply,
                         void *userdata, sd_bus_error *);
    static int on_leave(sd_bus_message *m, void *userdata, sd_bus_error *error);
    static int get_membership(sd_bus *, const char *, const char *, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error);
    static int find_membership(sd_bus *, const char *path, const char *, void *userdata, void **found,
                               sd_bus_error *);
    static int enumerate_memberships(sd_bus *, const char *, void *userdata, char ***nodes, sd_bus_error *);
    static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *);
    static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *);

    int join(sd_bus_message *m);
    int leave(sd_bus_message *m, Membership &mb);
    int evict(sd_bus_message *m);
    // ListGroups and ListGroups2: the list the socket's `list` gives, written by `append`.
    int list_groups(sd_bus_message *m, int (*append)(sd_bus_message *, const proto::ListResult &));
    // Who the caller of `m` is, as the bus attests it (caller_identity.hpp); or why not.
    std::variant<frontend::Credentials, Error> identify(sd_bus_message *m);
    // The caller's Owner, created (session, credentials) on its first join; or why not.
    std::variant<Owner *, Error> owner_for(sd_bus_message *m);
    // Why the allow lists refuse the caller of `m` a call other than Leave (an Owner's session
    // says, as after a reload; another caller is identified first), or nullopt. One verdict per
    // call: a GetAll asks for each property.
    std::optional<Error> refusal(sd_bus_message *m);
    // The same for the Properties.Get or GetAll a property getter answers: < 0 with `error` set
    // when refused, else 0.
    int property_refused(sd_bus *bus, sd_bus_error *error);
    // Why `name` is not on the bus now (NameHasOwner, synchronous), or "" when it is.
    std::string why_not_on_bus(const std::string &name);
    void release_owner(const std::string &name);
    void release_if_idle(const std::string &name);
    Membership &ensure_membership(MembershipId id, const std::string &owner, const std::string &device,
                                  std::uint16_t port);
    void drop_membership(MembershipId id);
    void membership_event(MembershipId id, const MembershipEvent &ev);

    runtime::EventLoop &loop_;
    frontend::Sessions &sessions_;
    LogHooks log_;
    std::unique_ptr<sd_bus, Unref> bus_;
    SlotPtr manager_slot_, membership_slot_, enumerator_slot_, log_slot_, disconnect_slot_, names_slot_;
    NameWatch names_; // when each unique name appeared, since the daemon started
    struct Verdict {
        std::string sender;
        std::uint64_t cookie = 0;
        std::uint64_t policy_generation = 0; // Sessions::policy_generation() it was made under
        std::optional<Error> refusal;
    } last_verdict_; // refusal()'s, for the call it was asked about, under the policy then
    std::map<std::string, std::unique_ptr<Owner>> owners_;              // by unique name
    std::map<MembershipId, std::unique_ptr<Membership>> memberships_;
    bool paused_ = false; // pause()
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // for closures we post
};

} // namespace mcastd::dbus

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/dbus_server.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "common/utf8.hpp"
#include "dbus/caller_identity.hpp"
#include "dbus/errors.hpp"
#include "dbus/evict_args.hpp"
#include "dbus/list_reply.hpp"
#include "dbus/wire.hpp"
#include "logging/policy_log.hpp"
#include "proto/protocol.hpp"
#include "runtime/sd_error.hpp"
#include "service/views.hpp"

namespace mcastd::dbus {

using runtime::sd_check;

// One caller (a unique bus name) with memberships: its session, and the outlet its session
// speaks through.
struct DbusServer::Owner final : frontend::SessionOutlet {
    DbusServer *server = nullptr;
    std::string name; // unique bus name, ":1.42"
    std::unique_ptr<frontend::ClientSession> session;
    std::set<MembershipId> memberships;
    std::uint64_t next_request = 1; // D-Bus calls carry no request id: the session's own
    ~Owner() {
        session.reset(); // releases every membership; pending joins die unanswered
    }
    void membership_event(MembershipId id, const MembershipEvent &ev) override { server->membership_event(id, ev); }
    // evict --disconnect: a bus connection is not the daemon's to close; the caller's session
    // ends (from the loop: the evict that asks is still walking the sessions).
    void disconnect(const std::string &why) override {
        spdlog::info("ending the session of D-Bus client {}: {}", name, why);
        server->loop_.post([srv = server, n = name, alive = std::weak_ptr<bool>(server->alive_)] {
            if (alive.lock())
                srv->release_owner(n);
        });
    }
};

struct DbusServer::Membership {
    DbusServer *server = nullptr;
    MembershipId id = 0;
    std::string owner;
    std::string path;
    std::string device;
    std::uint16_t port = 0;
    std::string name; // the named group's name it joined by, "" when joined by MGID
    McRecord record;
    std::string state = "pending"; // pending, active, lost
};

namespace {

DbusServer &server_of(void *userdata) { return *static_cast<DbusServer *>(userdata); }

std::string membership_path(MembershipId id) { return std::string(kMembershipPrefix) + "/" + std::to_string(id); }

// Errors go back to the caller as a reply; only a failure to send that reply is the handler's.
int answer(sd_bus_message *m, const Error &e) { return reply_error(m, e); }

// A D-Bus error has no `field`: a session's refusal names its argument in front of the message,
// as the argument decoder's own errors do ("/gid_type: ...").
Error with_field(const proto::Failure &f) {
    Error e = f.error;
    if (!f.field.empty() && e.message.rfind(f.field, 0) != 0)
        e.message = f.field + ": " + e.message;
    return e;
}

} // namespace

// ---- setup ----

DbusServer::DbusServer(runtime::EventLoop &loop, frontend::Sessions &sessions, LogHooks log)
    : loop_(loop), sessions_(sessions), log_(std::move(log)) {
    // Names appear in introspection, which proto/org.rdmamcast1.xml fixes.
    static const sd_bus_vtable manager[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_NAMES("Join", "sqssa{sv}",
                                 SD_BUS_PARAM(device) SD_BUS_PARAM(port) SD_BUS_PARAM(mgid)
                                     SD_BUS_PARAM(join_state) SD_BUS_PARAM(options),
                                 "oa{sv}", SD_BUS_PARAM(membership) SD_BUS_PARAM(record), on_join,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListGroups", "", "", "a(sqsquasasa(tssuus))", SD_BUS_PARAM(groups),
                                 on_list_groups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListGroups2", "", "", "aa{sv}", SD_BUS_PARAM(groups), on_list_groups2,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Evict", "a{sv}", SD_BUS_PARAM(what), "tt",
                                 SD_BUS_PARAM(released) SD_BUS_PARAM(disconnected), on_evict,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Ports", "a(sqsb)", get_ports, 0, 0),
        SD_BUS_VTABLE_END,
    };
    static const sd_bus_vtable membership[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Leave", "", "", on_leave, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Owner", "s", get_membership, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Device", "s", get_membership, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Port", "q", get_membership, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("Name", "s", get_membership, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MGID", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("PortGID", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("MLID", "q", get_membership, 0, 0),
        SD_BUS_PROPERTY("QKey", "u", get_membership, 0, 0),
        SD_BUS_PROPERTY("PKey", "q", get_membership, 0, 0),
        SD_BUS_PROPERTY("SL", "y", get_membership, 0, 0),
        SD_BUS_PROPERTY("MTU", "u", get_membership, 0, 0),
        SD_BUS_PROPERTY("Rate", "y", get_membership, 0, 0),
        SD_BUS_PROPERTY("RateGbps", "d", get_membership, 0, 0),
        SD_BUS_PROPERTY("FlowLabel", "u", get_membership, 0, 0),
        SD_BUS_PROPERTY("TrafficClass", "y", get_membership, 0, 0),
        SD_BUS_PROPERTY("HopLimit", "y", get_membership, 0, 0),
        SD_BUS_PROPERTY("Scope", "y", get_membership, 0, 0),
        SD_BUS_PROPERTY("JoinState", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("LinkLayer", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("GidType", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("SgidIndex", "y", get_membership, 0, 0),
        SD_BUS_PROPERTY("Netdev", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("IP", "s", get_membership, 0, 0),
        SD_BUS_PROPERTY("DMAC", "s", get_membership, 0, 0),
        SD_BUS_SIGNAL_WITH_NAMES("StateChanged", "sa{sv}ass",
                                 SD_BUS_PARAM(state) SD_BUS_PARAM(record) SD_BUS_PARAM(changed)
                                     SD_BUS_PARAM(reason),
                                 0),
        SD_BUS_VTABLE_END,
    };

    sd_bus *bus = nullptr;
    sd_check(sd_bus_open_system(&bus), "cannot connect to the system bus (sd_bus_open_system)");
    bus_.reset(bus);
    sd_check(sd_bus_error_add_map(error_map()), "sd_bus_error_add_map");
    // A bus that goes away must not stop the daemon: the socket keeps serving.
    sd_check(sd_bus_set_exit_on_disconnect(bus, 0), "sd_bus_set_exit_on_disconnect");

    sd_bus_slot *s = nullptr;
    sd_check(sd_bus_add_object_vtable(bus, &s, kManagerPath, "org.rdmamcast1.Manager", manager, this),
             "registering org.rdmamcast1.Manager");
    manager_slot_.reset(s);
    sd_check(sd_bus_add_fallback_vtable(bus, &s, kMembershipPrefix, "org.rdmamcast1.Membership", membership,
                                        find_membership, this),
             "registering org.rdmamcast1.Membership");
    membership_slot_.reset(s);
    sd_check(sd_bus_add_node_enumerator(bus, &s, kMembershipPrefix, enumerate_memberships, this),
             "registering the membership enumerator");
    enumerator_slot_.reset(s);
    sd_check(add_log_control(bus, &s, &log_), "registering org.freedesktop.LogControl1");
    log_slot_.reset(s);
    sd_check(sd_bus_match_signal(bus, &s, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                 "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, this),
             "watching for the bus to disconnect");
    disconnect_slot_.reset(s);

    // From here on the daemon knows when each new connection appeared: the process with a
    // caller's pid must have started before (caller_identity.hpp), and when each leaves the
    // bus, which releases a caller's memberships (on_name_owner_changed). Synchronous: every
    // name that appears or leaves after this call is seen. The daemon's one match rule on the
    // bus: one per caller (sd_bus_track) would run into the bus's limit per connection (512 on
    // dbus-daemon's system bus), and sd-bus closes the connection when a rule is refused.
    sd_check(sd_bus_match_signal(bus, &s, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                 "NameOwnerChanged", on_name_owner_changed, this),
             "watching the bus's NameOwnerChanged");
    names_slot_.reset(s);

    sd_check(sd_bus_attach_event(bus, loop_.get(), SD_EVENT_PRIORITY_NORMAL), "sd_bus_attach_event");
    // Synchronous on purpose: main() says READY=1 only once the name is ours.
    sd_check(sd_bus_request_name(bus, kBusName, 0), std::string("cannot own the bus name ") + kBusName);
}

DbusServer::~DbusServer() {
    *alive_ = false;
    disconnect_all();
    log_slot_.reset();
    disconnect_slot_.reset();
    names_slot_.reset();
    enumerator_slot_.reset();
    membership_slot_.reset();
    manager_slot_.reset();
    if (bus_)
        sd_bus_detach_event(bus_.get());
}

void DbusServer::disconnect_all() {
    while (!owners_.empty())
        release_owner(owners_.begin()->first);
}

// ---- callers ----

std::variant<frontend::Credentials, Error> DbusServer::identify(sd_bus_message *m) {
    const char *sender = sd_bus_message_get_sender(m);
    if (!sender)
        return Error{Errc::denied, policy::unidentified("the call carries no sender"), std::nullopt};
    BusCredentials bus;
    if (std::string why = query_bus_credentials(bus_.get(), sender, bus); !why.empty())
        return Error{Errc::denied, policy::unidentified(why), std::nullopt};
    return attest_caller(sender, bus, names_.appeared(sender));
}

std::variant<DbusServer::Owner *, Error> DbusServer::owner_for(sd_bus_message *m) {
    auto internal = [](std::string why) { return Error{Errc::internal, std::move(why), std::nullopt}; };
    const char *sender = sd_bus_message_get_sender(m);
    if (!sender)
        return internal("the call carries no sender");
    if (auto it = owners_.find(sender); it != owners_.end())
        return it->second.get();

    // Who the caller is, as the bus says (never as the caller says).
    auto identified = identify(m);
    if (auto *e = std::get_if<Error>(&identified)) {
        logging::log_refused_client(ClientInfo{0, kUnknownUid, kUnknownGid, sender}, e->message);
        sessions_.refusals().count(frontend::refusal::kIdentity);
        return *e;
    }
    frontend::Credentials who = std::get<frontend::Credentials>(std::move(identified));
    if (!who.cgroup_unattested.empty())
        spdlog::info("D-Bus client {} pid {} uid {}: its cgroup is not attested ({}); joins that a rule on "
                     "units or cgroups would judge are refused",
                     sender, who.who.pid, who.who.uid, who.cgroup_unattested);

    auto o = std::make_unique<Owner>();
    o->server = this;
    o->name = sender;
    auto opened = sessions_.open(frontend::Door::dbus, who, *o);
    if (auto *f = std::get_if<proto::Failure>(&opened))
        return f->error; // max_clients
    o->session = std::get<std::unique_ptr<frontend::ClientSession>>(std::move(opened));
    o->session->set_bus_name(o->name);
    // Its departure cannot be missed although nothing watches it yet: the bus sends the
    // daemon's one connection its messages in order, and a caller's NameOwnerChanged (gone)
    // comes after every call it made, this one included. identify() waited for the bus's
    // answer to GetConnectionCredentials (sd_bus_call), and sd-bus queued whatever came in
    // meanwhile and dispatches it after this call: had the caller left before the bus answered,
    // the bus would have refused to answer for it, so its NameOwnerChanged is still to be
    // dispatched, and finds its Owner.
    spdlog::debug("D-Bus client {} pid {} uid {} ({}) connected", o->name, who.who.pid, who.who.uid, who.who.comm);
    Owner *raw = o.get();
    owners_.emplace(raw->name, std::move(o));
    return raw;
}

std::optional<Error> DbusServer::refusal(sd_bus_message *m) {
    const char *sender = sd_bus_message_get_sender(m);
    if (sender)
        if (auto it = owners_.find(sender); it != owners_.end()) {
            if (auto no = it->second->session->not_allowed())
                return no->error;
            return std::nullopt;
        }
    // (sender, cookie) is the call: an honest sender's cookies never repeat. The sender chooses
    // them, though, so a verdict holds only under the policy it was made under: a reload must
    // not leave an old verdict for a call that reuses a cookie.
    std::uint64_t cookie = 0;
    const std::uint64_t generation = sessions_.policy_generation();
    if (sender && sd_bus_message_get_cookie(m, &cookie) >= 0 && cookie == last_verdict_.cookie &&
        last_verdict_.sender == sender && last_verdict_.policy_generation == generation)
        return last_verdict_.refusal;
    std::optional<Error> no;
    auto identified = identify(m);
    if (auto *e = std::get_if<Error>(&identified))
        no = *e;
    else if (const auto &who = std::get<frontend::Credentials>(identified); !sessions_.policy().admits(who.caller()))
        no = Error{Errc::denied, policy::not_admitted(who.who.uid), std::nullopt};
    last_verdict_ = Verdict{sender ? sender : "", cookie, generation, no};
    return no;
}

int DbusServer::property_refused(sd_bus *bus, sd_bus_error *error) {
    sd_bus_message *call = sd_bus_get_current_message(bus); // Properties.Get or GetAll
    if (!call)
        return sd_bus_error_set(error, error_name(Errc::denied),
                                policy::unidentified("the property read carries no call").c_str());
    if (auto no = refusal(call))
        return sd_bus_error_set(error, error_name(no->code), valid_utf8(no->message).c_str());
    return 0;
}

std::string DbusServer::bus_id() const {
    sd_id128_t id;
    char text[SD_ID128_STRING_MAX];
    return sd_bus_get_bus_id(bus_.get(), &id) < 0 ? std::string() : std::string(sd_id128_to_string(id, text));
}

std::size_t DbusServer::take_back(const std::string &saved_bus_id) {
    const std::vector<std::uint64_t> saved = sessions_.detached_of(frontend::Door::dbus);
    if (saved.empty())
        return 0;
    if (saved_bus_id != bus_id()) {
        spdlog::warn("the system bus is not the one the restart state's {} D-Bus session(s) were on (bus id {}, "
                     "state {}): their unique names may be other connections' now, so they are released",
                     saved.size(), bus_id(), saved_bus_id.empty() ? "none" : saved_bus_id);
        return 0;
    }
    std::size_t taken = 0;
    for (const std::uint64_t id : saved) {
        std::unique_ptr<frontend::ClientSession> s = sessions_.take_detached(id);
        const std::string name = s->bus_name();
        auto o = std::make_unique<Owner>();
        o->server = this;
        o->name = name;
        // The constructor's NameOwnerChanged match is in place, so asking now whether the name
        // has an owner leaves no gap: a name gone before the answer is refused here (its
        // NameOwnerChanged, if it comes after the match, finds no Owner), one gone after it is
        // released by its NameOwnerChanged, which follows the answer on the daemon's connection.
        std::string why = name.empty() ? "the restart state has no bus name for it"
                          : owners_.count(name) ? "another session has its name"
                                                : why_not_on_bus(name);
        if (!why.empty()) {
            spdlog::info("session {} of D-Bus client {} (pid {}): {}", id, name.empty() ? "?" : name, s->who().who.pid,
                         why);
            sessions_.restore_detached(std::move(s)); // the daemon releases it
            continue;
        }
        o->session = std::move(s);
        o->session->attach(*o);
        const ClientId client = o->session->client();
        const auto grants = o->session->grants();
        Owner &owner = *owners_.emplace(name, std::move(o)).first->second;
        // Its memberships, as objects under the ids its caller knows.
        const auto &ports = sessions_.service().ports();
        for (const GroupView &g : sessions_.service().group_views())
            for (const MemberView &mv : g.members) {
                if (mv.client != client)
                    continue;
                Membership &mb = ensure_membership(mv.id, name, ports.at(g.port).device(), ports.at(g.port).number());
                if (const auto it = grants.find(mv.id); it != grants.end())
                    mb.name = it->second.name;
                mb.record = g.record;
                mb.record.mgid = g.mgid;
                mb.record.join_state = mv.join_state;
                mb.state = mv.state == MemberView::State::lost ? "lost"
                           : mv.state == MemberView::State::pending ? "pending"
                                                                    : "active";
            }
        // What the restart could not take back, or root evicted meanwhile: an object in state
        // "lost" under the id its caller knows (its Leave succeeds), and the signal it missed.
        for (frontend::LostMembership &l : owner.session->take_untold()) {
            ensure_membership(l.id, name, l.device, l.port).record.mgid = l.mgid;
            MembershipEvent ev;
            ev.kind = MembershipEvent::Kind::lost;
            ev.reason = std::move(l.why);
            membership_event(l.id, ev);
        }
        spdlog::info("D-Bus client {} (pid {}, uid {}) keeps session {} with {} membership(s)", name,
                     owner.session->who().who.pid, owner.session->who().who.uid, id, owner.memberships.size());
        ++taken;
    }
    return taken;
}

void DbusServer::release_owner(const std::string &name) {
    auto node = owners_.extract(name);
    if (node.empty())
        return;
    Owner &o = *node.mapped();
    for (MembershipId id : std::set<MembershipId>(o.memberships))
        drop_membership(id);
    // `node` goes here: its session releases every membership as if each had been left.
    spdlog::debug("D-Bus client {} gone", name);
}

// Called where the engine may be mid-callback, so the release runs from the loop.
void DbusServer::release_if_idle(const std::string &name) {
    loop_.post([this, name, alive = std::weak_ptr<bool>(alive_)] {
        if (!alive.lock())
            return;
        auto it = owners_.find(name);
        if (it != owners_.end() && it->second->memberships.empty())
            release_owner(name);
    });
}

std::string DbusServer::why_not_on_bus(const std::string &name) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = nullptr;
    // Synchronous: take_back() decides on the answer before it returns, and the answer's place
    // among the bus's messages (after the match, before a later NameOwnerChanged) is what makes
    // the decision safe.
    int r = sd_bus_call_method(bus_.get(), "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", &error, &reply, "s", name.c_str());
    int has = 0;
    if (r >= 0)
        r = sd_bus_message_read(reply, "b", &has);
    std::string why;
    if (r < 0)
        why = "cannot ask the bus whether its name is still there (org.freedesktop.DBus.NameHasOwner): " +
              std::string(error.message ? error.message : std::strerror(-r));
    else if (!has)
        why = "its name is no longer on the bus";
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    return why;
}

int DbusServer::on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *) {
    const char *name = nullptr, *old_owner = nullptr, *new_owner = nullptr;
    if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
        return 0;
    DbusServer &srv = server_of(userdata);
    // Only the bus itself sends it (the match names its sender): a caller cannot forge one.
    srv.names_.owner_changed(name, old_owner, new_owner, frontend::boot_clock());
    // A caller's unique name left the bus (it exited, crashed, closed its connection). The
    // release tears its session down, which reaches into the engine: from the loop, as
    // release_if_idle's, not from inside sd-bus's dispatch.
    if (name[0] == ':' && new_owner[0] == '\0' && srv.owners_.count(name))
        srv.loop_.post([&srv, n = std::string(name), alive = std::weak_ptr<bool>(srv.alive_)] {
            if (alive.lock())
                srv.release_owner(n);
        });
    return 0;
}

int DbusServer::on_disconnected(sd_bus_message *, void *userdata, sd_bus_error *) {
    DbusServer &srv = server_of(userdata);
    spdlog::warn("lost the connection to the system bus; releasing the memberships of {} D-Bus client(s) and "
                 "serving the socket only",
                 srv.owners_.size());
    srv.disconnect_all();
    return 0;
}

// ---- memberships ----

DbusServer::Membership &DbusServer::ensure_membership(MembershipId id, const std::string &owner,
                                                      const std::string &device, std::uint16_t port) {
    auto &slot = memberships_[id];
    if (!slot) {
        slot = std::make_unique<Membership>();
        slot->server = this;
        slot->id = id;
        slot->owner = owner;
        slot->path = membership_path(id);
        slot->device = device;
        slot->port = port;
        if (auto it = owners_.find(owner); it != owners_.end())
            it->second->memberships.insert(id);
    }
    return *slot;
}

void DbusServer::drop_membership(MembershipId id) {
    auto node = memberships_.extract(id);
    if (node.empty())
        return;
    if (auto it = owners_.find(node.mapped()->owner); it != owners_.end())
        it->second->memberships.erase(id);
}

int DbusServer::find_membership(sd_bus *, const char *path, const char *, void *userdata, void **found,
                                sd_bus_error *) {
    DbusServer &srv = server_of(userdata);
    const std::string_view p = path, prefix = kMembershipPrefix;
    if (p.size() <= prefix.size() + 1 || p.substr(0, prefix.size()) != prefix || p[prefix.size()] != '/')
        return 0;
    const std::string tail(p.substr(prefix.size() + 1));
    char *end = nullptr;
    const unsigned long long id = std::strtoull(tail.c_str(), &end, 10);
    if (*end != '\0' || tail.empty() || tail[0] == '0')
        return 0;
    auto it = srv.memberships_.find(id);
    if (it == srv.memberships_.end())
        return 0;
    *found = it->second.get();
    return 1;
}

int DbusServer::enumerate_memberships(sd_bus *, const char *, void *userdata, char ***nodes, sd_bus_error *) {
    DbusServer &srv = server_of(userdata);
    auto **v = static_cast<char **>(std::calloc(srv.memberships_.size() + 1, sizeof(char *)));
    if (!v)
        return -ENOMEM;
    std::size_t i = 0;
    for (const auto &[id, mb] : srv.memberships_)
        if (!(v[i++] = strdup(mb->path.c_str()))) {
            for (std::size_t j = 0; j < i; ++j)
                std::free(v[j]);
            std::free(v);
            return -ENOMEM;
        }
    *nodes = v;
    return 0;
}

int DbusServer::get_membership(sd_bus *bus, const char *, const char *, const char *property, sd_bus_message *reply,
                               void *userdata, sd_bus_error *error) {
    const Membership &mb = *static_cast<Membership *>(userdata);
    if (int r = mb.server->property_refused(bus, error); r < 0)
        return r;
    const std::string_view p = property;
    if (p == "Owner")
        return append_text(reply, mb.owner);
    if (p == "Device")
        return append_text(reply, mb.device);
    if (p == "Port")
        return sd_bus_message_append_basic(reply, 'q', &mb.port);
    if (p == "State")
        return sd_bus_message_append_basic(reply, 's', mb.state.c_str());
    if (p == "Name")
        return append_text(reply, mb.name);
    if (auto v = record_property(mb.record, p))
        return append_value(reply, *v);
    return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY, "no property %s", property);
}

void DbusServer::membership_event(MembershipId id, const MembershipEvent &ev) {
    auto it = memberships_.find(id);
    if (it == memberships_.end())
        return;
    Membership &mb = *it->second;
    // An event without a record (an eviction, a restart's not_held or withdraw: the session has
    // none to give) keeps the last known one, so the object and the signal still name the group.
    if (!is_zero(ev.record.mgid))
        mb.record = ev.record;
    mb.state = ev.kind == MembershipEvent::Kind::restored ? "active" : "lost";
    // Unicast: only the owner hears about its membership.
    sd_bus_message *sig = nullptr;
    int r = sd_bus_message_new_signal(bus_.get(), &sig, mb.path.c_str(), "org.rdmamcast1.Membership", "StateChanged");
    if (r >= 0) r = sd_bus_message_set_destination(sig, mb.owner.c_str());
    if (r >= 0) r = append_state_changed(sig, mb.state, mb.record, ev.changed, ev.reason ? ev.reason->message : "");
    if (r >= 0) r = sd_bus_send(bus_.get(), sig, nullptr);
    sd_bus_message_unref(sig);
    if (r < 0)
        spdlog::warn("cannot tell D-Bus client {} that membership {} is {}: {}", mb.owner, id, mb.state,
                     std::strerror(-r));
}

// ---- methods ----

int DbusServer::on_join(sd_bus_message *m, void *userdata, sd_bus_error *) { return server_of(userdata).join(m); }

int DbusServer::join(sd_bus_message *m) {
    if (paused_)
        return answer(m, Error{Errc::cancelled,
                               "rdma-mcastd is restarting: call Join again in a moment (every membership stays)",
                               std::nullopt});
    JoinArgs a;
    const char *device = nullptr, *mgid = nullptr, *state = nullptr;
    int r = sd_bus_message_read(m, "sqss", &device, &a.port, &mgid, &state);
    if (r < 0)
        return r;
    // The socket's bound on a request, before anything is copied, decoded or asked of the bus.
    ArgumentBound bound(sessions_.limits().max_message_bytes);
    for (const char *s : {device, mgid, state})
        if (!bound.take(std::strlen(s)))
            return answer(m, bound.too_large());
    a.device = device;
    a.mgid = mgid;
    a.join_state = state;
    std::optional<Error> refused;
    if ((r = read_options(m, a.options, refused, bound, &a.socket)) < 0)
        return r;
    if (refused)
        return answer(m, *refused);
    auto decoded = decode_join_args(a);
    if (auto *e = std::get_if<Error>(&decoded))
        return answer(m, *e);

    auto found = owner_for(m);
    if (auto *e = std::get_if<Error>(&found))
        return answer(m, *e);
    Owner *o = std::get<Owner *>(found);

    // The reply waits for the SA: the call is kept until the session answers (or is dropped
    // with the session when the caller leaves the bus first).
    std::shared_ptr<sd_bus_message> call(sd_bus_message_ref(m), sd_bus_message_unref);
    auto done = std::make_shared<bool>(false);
    const std::string owner = o->name;
    const std::string name = std::get<JoinRequest>(decoded).name;
    const MembershipId id = o->session->join(
        o->next_request++, std::get<JoinRequest>(decoded),
        [this, call, done, owner, name, dev = a.device, port = a.port](const frontend::JoinAnswer &res) {
            *done = true;
            if (res.failure) {
                drop_membership(res.membership);
                if (int rc = answer(call.get(), with_field(*res.failure)); rc < 0)
                    spdlog::warn("cannot answer D-Bus client {}: {}", owner, std::strerror(-rc));
                release_if_idle(owner);
                return;
            }
            Membership &mb = ensure_membership(res.membership, owner, dev, port);
            mb.name = name;
            mb.record = res.record;
            mb.state = "active";
            sd_bus_message *reply = nullptr;
            int rc = sd_bus_message_new_method_return(call.get(), &reply);
            if (rc >= 0) rc = sd_bus_message_append_basic(reply, 'o', mb.path.c_str());
            if (rc >= 0) rc = append_record(reply, mb.record);
            if (rc >= 0) rc = sd_bus_send(nullptr, reply, nullptr);
            sd_bus_message_unref(reply);
            if (rc < 0)
                spdlog::warn("cannot answer D-Bus client {}: {}", owner, std::strerror(-rc));
        });
    if (!*done)
        ensure_membership(id, owner, a.device, a.port).name = name; // "pending" until the SA answers
    return 1;
}

int DbusServer::on_leave(sd_bus_message *m, void *userdata, sd_bus_error *) {
    auto &mb = *static_cast<Membership *>(userdata);
    return mb.server->leave(m, mb);
}

int DbusServer::leave(sd_bus_message *m, Membership &mb) {
    const char *sender = sd_bus_message_get_sender(m);
    if (!sender || mb.owner != sender)
        return answer(m, Error{Errc::denied,
                               "only its owner (" + mb.owner + ") may leave membership " + std::to_string(mb.id),
                               std::nullopt});
    const MembershipId id = mb.id;
    const std::string owner = mb.owner;
    Owner &o = *owners_.at(owner);
    // A pending join is withdrawn: its Join call is answered Cancelled by the callback.
    proto::Leave leave;
    leave.membership = id;
    if (auto f = o.session->leave(leave))
        return answer(m, f->error);
    drop_membership(id);
    release_if_idle(owner);
    return sd_bus_reply_method_return(m, "");
}

int DbusServer::on_list_groups(sd_bus_message *m, void *userdata, sd_bus_error *) {
    return server_of(userdata).list_groups(m, append_groups_v1);
}

int DbusServer::on_list_groups2(sd_bus_message *m, void *userdata, sd_bus_error *) {
    return server_of(userdata).list_groups(m, append_groups);
}

int DbusServer::list_groups(sd_bus_message *m, int (*append)(sd_bus_message *, const proto::ListResult &)) {
    if (auto no = refusal(m))
        return answer(m, *no);
    // The admitting rule, created, flagged, the name: as the socket's list, without a page limit.
    const proto::ListResult list = list_view(sessions_.service(), {}, [this](const MemberView &mv, proto::MemberInfo &out) {
        sessions_.annotate(mv, out);
    });
    // One message, which the bus must take: past its limit it drops the daemon's connection.
    if (const std::size_t bytes = reply_bytes_at_most(list, append == append_groups); bytes > kMaxReplyBytes) {
        std::size_t members = 0;
        for (const auto &p : list.ports)
            for (const auto &g : p.groups)
                members += g.members.size();
        return answer(m, Error{Errc::too_large,
                               "the list of " + std::to_string(members) + " memberships would take up to " +
                                   std::to_string(bytes >> 20) + " MiB in one D-Bus message, more than the " +
                                   std::to_string(kMaxReplyBytes >> 20) +
                                   " MiB a reply may; the socket's list, a page at a time, shows them all "
                                   "(rdma-mcastctl list)",
                               std::nullopt});
    }
    sd_bus_message *reply = nullptr;
    int r = sd_bus_message_new_method_return(m, &reply);
    if (r >= 0) r = append(reply, list);
    if (r >= 0) r = sd_bus_send(nullptr, reply, nullptr);
    sd_bus_message_unref(reply);
    return r < 0 ? r : 1;
}

int DbusServer::on_evict(sd_bus_message *m, void *userdata, sd_bus_error *) { return server_of(userdata).evict(m); }

int DbusServer::evict(sd_bus_message *m) {
    Options options;
    std::optional<Error> refused_args;
    ArgumentBound bound(sessions_.limits().max_message_bytes); // as Join's
    if (int r = read_options(m, options, refused_args, bound); r < 0)
        return r;
    if (refused_args)
        return answer(m, *refused_args);
    auto what = decode_evict_args(options);
    if (auto *e = std::get_if<Error>(&what))
        return answer(m, *e);
    // Root's, as on the socket: the caller's session asks (Sessions::evict checks).
    auto found = owner_for(m);
    if (auto *e = std::get_if<Error>(&found))
        return answer(m, *e);
    Owner *o = std::get<Owner *>(found);
    const std::string name = o->name;
    std::optional<Error> refused;
    proto::EvictResult done;
    if (auto no = o->session->not_allowed()) {
        refused = no->error;
    } else {
        auto out = o->session->evict(std::get<proto::Evict>(what));
        if (auto *f = std::get_if<proto::Failure>(&out))
            refused = with_field(*f);
        else
            done = std::get<proto::EvictResult>(out);
    }
    release_if_idle(name); // a caller that holds nothing is no client
    if (refused)
        return answer(m, *refused);
    return sd_bus_reply_method_return(m, "tt", done.released, done.disconnected);
}

int DbusServer::get_ports(sd_bus *bus, const char *, const char *, const char *, sd_bus_message *reply,
                          void *userdata, sd_bus_error *error) {
    DbusServer &srv = server_of(userdata);
    if (int r = srv.property_refused(bus, error); r < 0)
        return r;
    int r = sd_bus_message_open_container(reply, 'a', "(sqsb)");
    for (const port::RegisteredPort &p : srv.sessions_.service().ports()) {
        const std::string gid = format_gid(p.gid());
        if (r >= 0) r = sd_bus_message_open_container(reply, 'r', "sqsb");
        if (r >= 0) r = append_text(reply, p.device());
        if (r >= 0) r = sd_bus_message_append(reply, "qsb", std::uint16_t{p.number()}, gid.c_str(), static_cast<int>(p.usable));
        if (r >= 0) r = sd_bus_message_close_container(reply);
    }
    if (r >= 0) r = sd_bus_message_close_container(reply);
    return r;
}

} // namespace mcastd::dbus

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The access policy on its own (daemon/policy/policy.hpp), no sessions and no SA: who a rule
// matches, first match wins and default deny, MGID prefixes, what each refusal says and which
// field it names, the P_Key a rule asserts, create rights, the record's checks after the SA
// answered, a reload's review and the quotas a caller lives by.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "policy/policy.hpp"

namespace mcastd::policy {
namespace {

// What root's quotas are: the host's groups per port, no per-uid quota or share.
Quotas root_quotas(std::size_t groups_per_port) {
    Quotas q{0, 0, groups_per_port, 0, 0, 0};
    return q;
}

constexpr uid_t kAlice = 1001, kBob = 1002;
constexpr gid_t kUsers = 100, kHpc = 3000, kOps = 3001;

Gid gid(const char *text) {
    const auto g = parse_gid(text);
    EXPECT_TRUE(g) << text;
    return g.value_or(kZeroGid);
}

// What a prefix parser made of `text`: the prefix (a failure when it refused), or why not.
template <class Prefix> Prefix parsed(const char *text, std::variant<Prefix, std::string> p) {
    if (const auto *why = std::get_if<std::string>(&p)) {
        ADD_FAILURE() << text << ": " << *why;
        return {};
    }
    return std::get<Prefix>(p);
}
template <class Prefix> std::string why_not(std::variant<Prefix, std::string> p) {
    const auto *why = std::get_if<std::string>(&p);
    return why ? *why : "";
}

MgidPrefix prefix(const char *text) { return parsed(text, parse_mgid_prefix(text)); }
IpPrefix ip_prefix(const char *text) { return parsed(text, parse_ip_prefix(text)); }
// Why the parser refuses `text` ("" when it accepts it).
std::string parse_error(const char *text) { return why_not(parse_mgid_prefix(text)); }
std::string ip_parse_error(const char *text) { return why_not(parse_ip_prefix(text)); }

IpAddress ip(const char *text) { return parse_ip(text).value(); }

Rule rule(std::string name) {
    Rule r;
    r.name = std::move(name);
    return r;
}

// A caller; `groups` must outlive it (Caller holds a span).
Caller caller(uid_t uid, gid_t gid, const std::vector<gid_t> &groups = {}, std::string_view cgroup = "") {
    return Caller{uid, gid, groups, cgroup};
}

JoinAsk ask(const char *mgid, std::uint8_t join_state = join::full) {
    JoinAsk a;
    a.mgid = gid(mgid);
    a.join_state = join_state;
    a.create_qkey = 0x01234567; // groups.create.qkey's default
    return a;
}

JoinAsk sa_assigned() {
    JoinAsk a;
    a.create_qkey = 0x01234567;
    return a;
}

McRecord record(const char *mgid, std::uint16_t pkey = 0xffff, std::uint32_t qkey = 0x01234567) {
    McRecord r;
    r.mgid = gid(mgid);
    r.pkey = pkey;
    r.qkey = qkey;
    return r;
}

Admission admitted(const Policy &p, const Caller &c, const JoinAsk &a) {
    auto out = admit(p, c, a);
    if (const auto *no = std::get_if<Refusal>(&out)) {
        ADD_FAILURE() << "refused: " << no->error.message << " (" << no->field << ")";
        return {};
    }
    return std::get<Admission>(out);
}

Refusal refused(const Policy &p, const Caller &c, const JoinAsk &a) {
    auto out = admit(p, c, a);
    if (const auto *yes = std::get_if<Admission>(&out)) {
        ADD_FAILURE() << "admitted by " << yes->rule;
        return Refusal{Error{Errc::internal, "", std::nullopt}, ""};
    }
    return std::get<Refusal>(out);
}

// A refusal by rule `name`: the code, the PolicyRef naming the rule and no quota.
void expect_denied_by(const Refusal &r, const std::string &name) {
    EXPECT_EQ(r.error.code, Errc::denied);
    ASSERT_TRUE(r.error.policy);
    EXPECT_EQ(r.error.policy->rule, name);
    EXPECT_EQ(r.error.policy->quota, "");
    EXPECT_EQ(r.error.policy->limit, 0u);
}

// ---- no rules, root ----

TEST(PolicyNoRules, AllowsEverythingWithTheDefaultQuotas) {
    const Policy p;
    const std::vector<gid_t> none;
    const Caller alice = caller(kAlice, kUsers, none, "/user.slice/user-1001.slice/session-2.scope");
    for (const JoinAsk &a : {ask("ff15:a:1::1"), ask("ff12::1", join::send_only_non_member), sa_assigned()}) {
        const Admission ad = admitted(p, alice, a);
        EXPECT_EQ(ad.rule, "any");
        EXPECT_EQ(ad.memberships_quota, 4096u);
        EXPECT_EQ(ad.creates_quota, 64u);
        EXPECT_FALSE(ad.no_create);
        EXPECT_FALSE(ad.assert_pkey);
        EXPECT_TRUE(ad.controlled_qkeys);
        EXPECT_TRUE(ad.pkeys.empty());
    }
    // A controlled Q_Key, asserted or the create default, is no rule's business either.
    JoinAsk controlled = ask("ff15::9");
    controlled.qkey = 0x80010000;
    EXPECT_EQ(admitted(p, alice, controlled).rule, "any");
    JoinAsk create = sa_assigned();
    create.create_qkey = 0x80000001;
    EXPECT_FALSE(admitted(p, alice, create).no_create);

    const Quotas q = p.quotas_for(alice);
    EXPECT_EQ(q.memberships_per_uid, 4096u);
    EXPECT_EQ(q.creates_per_uid, 64u);
    EXPECT_EQ(q.groups_per_port, 1024u);
    EXPECT_EQ(p.match(alice), nullptr);
    EXPECT_TRUE(p.admits(alice));
}

TEST(PolicyRoot, AlwaysAllowedAndWithoutQuotas) {
    Policy p;
    p.allow_uids = {kAlice};
    Rule only_alice = rule("alice");
    only_alice.uids = {kAlice};
    only_alice.mgids = {prefix("ff15:a:1::/48")};
    only_alice.pkeys = {0x8001};
    p.rules = {only_alice};
    p.quotas.groups_per_port = 77;
    const std::vector<gid_t> none;
    const Caller root = caller(0, 0, none, "/system.slice/sshd.service");

    EXPECT_TRUE(p.admits(root));
    EXPECT_EQ(p.match(root), nullptr); // no rule matches root, and none needs to
    JoinAsk a = ask("ff12::1", join::send_only_full);
    a.qkey = 0x80000000;
    const Admission ad = admitted(p, root, a);
    EXPECT_EQ(ad.rule, "root");
    EXPECT_EQ(ad.memberships_quota, 0u);
    EXPECT_EQ(ad.creates_quota, 0u);
    EXPECT_FALSE(ad.assert_pkey);
    EXPECT_FALSE(ad.no_create);
    EXPECT_FALSE(admitted(p, root, sa_assigned()).no_create);
    // root's groups still count against the host's cap.
    EXPECT_EQ(p.quotas_for(root), root_quotas(77));
    // And a group of any P_Key or Q_Key is root's to join.
    EXPECT_FALSE(check_record(ad, record("ff12::1", 0x8005, 0x80000000)));
}

// ---- the allow lists ----

TEST(PolicyAllowLists, UidsAndPrimaryOrSupplementaryGids) {
    Policy p;
    p.allow_uids = {kBob};
    p.allow_gids = {kHpc};
    const std::vector<gid_t> none, hpc{kOps, kHpc};
    EXPECT_TRUE(p.admits(caller(kBob, kUsers, none)));
    EXPECT_TRUE(p.admits(caller(kAlice, kHpc, none)));
    EXPECT_TRUE(p.admits(caller(kAlice, kUsers, hpc)));
    EXPECT_FALSE(p.admits(caller(kAlice, kUsers, none)));
    EXPECT_TRUE(p.admits(caller(0, 0, none)));
    // Only gids listed: a uid list left empty allows no one by uid.
    p.allow_uids.clear();
    EXPECT_FALSE(p.admits(caller(kBob, kUsers, none)));
    EXPECT_TRUE(p.admits(caller(kBob, kUsers, hpc)));
}

// ---- matching ----

TEST(PolicyMatch, FirstMatchWinsAndALaterRuleIsNeverReached) {
    Rule hpc = rule("hpc");
    hpc.gids = {kHpc};
    hpc.mgids = {prefix("ff15:a:1::/48")};
    Rule everyone = rule("everyone"); // no match keys, no restrictions
    Policy p;
    p.rules = {hpc, everyone};
    const std::vector<gid_t> in_hpc{kHpc}, none;
    const Caller alice = caller(kAlice, kUsers, in_hpc), bob = caller(kBob, kUsers, none);

    ASSERT_NE(p.match(alice), nullptr);
    EXPECT_EQ(p.match(alice)->name, "hpc");
    EXPECT_EQ(p.match(bob)->name, "everyone");
    EXPECT_EQ(admitted(p, alice, ask("ff15:a:1::5")).rule, "hpc");
    // "everyone" would allow ff15:a:2::5, but alice's rule is "hpc" and it decides.
    const Refusal r = refused(p, alice, ask("ff15:a:2::5"));
    expect_denied_by(r, "hpc");
    EXPECT_EQ(r.field, "/mgid");
    EXPECT_EQ(admitted(p, bob, ask("ff15:a:2::5")).rule, "everyone");
}

TEST(PolicyMatch, ByUidByPrimaryGidAndBySupplementaryGid) {
    Rule by_uid = rule("by-uid");
    by_uid.uids = {kAlice};
    Rule by_gid = rule("by-gid");
    by_gid.gids = {kHpc};
    Policy p;
    p.rules = {by_uid, by_gid};
    const std::vector<gid_t> none, supplementary{kOps, kHpc};

    EXPECT_EQ(p.match(caller(kAlice, kUsers, none))->name, "by-uid");
    EXPECT_EQ(p.match(caller(kBob, kHpc, none))->name, "by-gid");          // primary
    EXPECT_EQ(p.match(caller(kBob, kUsers, supplementary))->name, "by-gid"); // supplementary
    EXPECT_EQ(p.match(caller(kBob, kUsers, none)), nullptr);
    EXPECT_EQ(p.match(caller(kBob, kOps, none)), nullptr);
}

TEST(PolicyMatch, CgroupPrefixesEndAtASlash) {
    Rule r = rule("a");
    r.cgroups = {"/a.slice"};
    Policy p;
    p.rules = {r};
    const std::vector<gid_t> none;
    auto in = [&](std::string_view cgroup) { return p.match(caller(kAlice, kUsers, none, cgroup)) != nullptr; };
    EXPECT_TRUE(in("/a.slice"));
    EXPECT_TRUE(in("/a.slice/x.scope"));
    EXPECT_TRUE(in("/a.slice/b.slice/c.scope"));
    EXPECT_FALSE(in("/a.slicex"));
    EXPECT_FALSE(in("/a.slicex/x.scope"));
    EXPECT_FALSE(in("/b.slice/a.slice"));
    EXPECT_FALSE(in("/a"));
    EXPECT_FALSE(in("")); // unknown

    // "/" is every known path's ancestor, but not an unknown one's.
    p.rules[0].cgroups = {"/"};
    EXPECT_TRUE(in("/"));
    EXPECT_TRUE(in("/user.slice/user-1001.slice/session-2.scope"));
    EXPECT_FALSE(in(""));

    // Several prefixes: any one will do.
    p.rules[0].cgroups = {"/machine.slice/tenant-a.slice", "/machine.slice/tenant-b.slice"};
    EXPECT_TRUE(in("/machine.slice/tenant-b.slice/libpod-1.scope"));
    EXPECT_FALSE(in("/machine.slice/tenant-c.slice/libpod-1.scope"));
    EXPECT_FALSE(in("/machine.slice"));
}

TEST(PolicyMatch, UnitsMatchAnyWholeComponentOfThePath) {
    Rule r = rule("tenant-a");
    r.units = {"tenant-a.slice", "slurmstepd.scope"};
    Policy p;
    p.rules = {r};
    const std::vector<gid_t> none;
    auto in = [&](std::string_view cgroup) { return p.match(caller(kAlice, kUsers, none, cgroup)) != nullptr; };
    EXPECT_TRUE(in("/tenant-a.slice"));
    EXPECT_TRUE(in("/machine.slice/tenant-a.slice"));
    EXPECT_TRUE(in("/machine.slice/tenant-a.slice/libpod-1234.scope"));
    EXPECT_TRUE(in("/system.slice/slurmstepd.scope/job_12/step_0"));
    EXPECT_FALSE(in("/machine.slice/tenant-a.slicex/libpod-1234.scope"));
    EXPECT_FALSE(in("/machine.slice/xtenant-a.slice"));
    EXPECT_FALSE(in("/machine.slice/tenant-b.slice"));
    EXPECT_FALSE(in(""));
}

TEST(PolicyMatch, EveryGivenKeyMustHold) {
    Rule r = rule("hpc-jobs");
    r.uids = {kAlice, kBob};
    r.gids = {kHpc};
    r.units = {"slurmstepd.scope"};
    r.cgroups = {"/system.slice"};
    Policy p;
    p.rules = {r};
    const std::vector<gid_t> hpc{kHpc}, none;
    const char *job = "/system.slice/slurmstepd.scope/job_7";
    EXPECT_NE(p.match(caller(kAlice, kUsers, hpc, job)), nullptr);
    EXPECT_NE(p.match(caller(kBob, kHpc, none, job)), nullptr);
    EXPECT_EQ(p.match(caller(1003, kUsers, hpc, job)), nullptr);                        // uid
    EXPECT_EQ(p.match(caller(kAlice, kUsers, none, job)), nullptr);                     // group
    EXPECT_EQ(p.match(caller(kAlice, kUsers, hpc, "/system.slice/sshd.service")), nullptr); // unit
    EXPECT_EQ(p.match(caller(kAlice, kUsers, hpc, "/user.slice/slurmstepd.scope")), nullptr); // cgroup
}

TEST(PolicyMatch, NoRuleMatchesIsDefaultDeny) {
    Rule r = rule("hpc");
    r.gids = {kHpc};
    Policy p;
    p.rules = {r};
    const std::vector<gid_t> none;
    const Caller bob = caller(kBob, kUsers, none);
    for (const JoinAsk &a : {ask("ff15:a:1::1"), sa_assigned()}) {
        const Refusal no = refused(p, bob, a);
        expect_denied_by(no, "default-deny");
        EXPECT_EQ(no.error.message,
                  "no rule of the access policy (config access.rules) matches uid 1002, so it may join nothing");
        EXPECT_EQ(no.field, "");
    }
    // Bob may still use the daemon (list, status): the allow lists are empty.
    EXPECT_TRUE(p.admits(bob));
    // And lives by the default quotas, which hold no join.
    EXPECT_EQ(p.quotas_for(bob), Quotas{});
}

// A transport that cannot attest the caller's cgroup (a D-Bus connection older than the daemon,
// a process that cannot be read): a decision that depends on the cgroup is refused with the
// reason, one that does not goes on.
TEST(PolicyMatch, AnUnattestedCgroupRefusesOnlyWhatDependsOnIt) {
    Rule ops = rule("ops");
    ops.gids = {kOps};
    ops.cgroups = {"/system.slice"};
    Rule tenant = rule("tenant-a");
    tenant.uids = {kAlice};
    tenant.units = {"tenant-a.slice"};
    Rule hpc = rule("hpc");
    hpc.gids = {kHpc};
    Rule everyone = rule("everyone");
    Policy p;
    p.rules = {ops, tenant, hpc, everyone};
    const std::vector<gid_t> in_hpc{kHpc}, in_ops{kOps}, none;
    const char *why = "its bus connection is older than this daemon; reconnect to the bus";
    auto unattested = [&](uid_t uid, const std::vector<gid_t> &groups) {
        Caller c = caller(uid, kUnknownGid, groups, "");
        c.cgroup_unattested = why;
        return c;
    };

    // Bob in hpc: "ops" and "tenant-a" cannot match him whatever his cgroup; "hpc" decides.
    EXPECT_EQ(p.needs_cgroup(unattested(kBob, in_hpc)), nullptr);
    EXPECT_EQ(p.match(unattested(kBob, in_hpc))->name, "hpc");
    EXPECT_EQ(admitted(p, unattested(kBob, in_hpc), ask("ff15::1")).rule, "hpc");
    // A caller no rule names by id reaches the catch-all the same way.
    EXPECT_EQ(p.match(unattested(1003, none))->name, "everyone");

    // Alice: "tenant-a" would match her if her cgroup were under tenant-a.slice: refused.
    const Caller alice = unattested(kAlice, in_hpc);
    EXPECT_EQ(p.needs_cgroup(alice)->name, "tenant-a");
    EXPECT_EQ(p.match(alice), nullptr);
    const Refusal no = refused(p, alice, ask("ff15::1"));
    expect_denied_by(no, "tenant-a");
    EXPECT_EQ(no.error.message, std::string("cannot attest the caller's cgroup, which rule \"tenant-a\" (config "
                                            "access.rules) matches on: ") +
                                    why);
    // A member of ops: the first rule already depends on it.
    EXPECT_EQ(p.needs_cgroup(unattested(kBob, in_ops))->name, "ops");
    // Her quotas are the defaults (no rule is hers), and the allow lists do not look at cgroups.
    EXPECT_EQ(p.quotas_for(alice), Quotas{});
    EXPECT_TRUE(p.admits(alice));

    // Attested, the same Alice is judged by her cgroup as always.
    EXPECT_EQ(p.match(caller(kAlice, kUsers, in_hpc, "/user.slice"))->name, "hpc");
    EXPECT_EQ(p.match(caller(kAlice, kUsers, in_hpc, "/machine.slice/tenant-a.slice"))->name, "tenant-a");
}

// ---- MGID prefixes ----

TEST(MgidPrefix, ContainsAtByteAndNonByteBoundaries) {
    const MgidPrefix p48 = prefix("ff15:a:1::/48");
    EXPECT_EQ(p48.length, 48u);
    EXPECT_TRUE(p48.contains(gid("ff15:a:1::")));
    EXPECT_TRUE(p48.contains(gid("ff15:a:1::1")));
    EXPECT_TRUE(p48.contains(gid("ff15:a:1:ffff:ffff:ffff:ffff:ffff")));
    EXPECT_FALSE(p48.contains(gid("ff15:a:2::1")));
    EXPECT_FALSE(p48.contains(gid("ff15:b:1::1")));
    EXPECT_FALSE(p48.contains(gid("ff12:a:1::1")));

    // /12: flags and scope's first nibble (ff1x::), any scope.
    const MgidPrefix p12 = prefix("ff10::/12");
    EXPECT_TRUE(p12.contains(gid("ff12::1")));
    EXPECT_TRUE(p12.contains(gid("ff15:a:1::1")));
    EXPECT_TRUE(p12.contains(gid("ff1f::1")));
    EXPECT_FALSE(p12.contains(gid("ff25::1")));
    EXPECT_FALSE(p12.contains(gid("ff05::1")));

    // /52: the first nibble of the fourth group.
    const MgidPrefix p52 = prefix("ff15:a:1:1000::/52");
    EXPECT_TRUE(p52.contains(gid("ff15:a:1:1000::1")));
    EXPECT_TRUE(p52.contains(gid("ff15:a:1:1fff:ffff::")));
    EXPECT_FALSE(p52.contains(gid("ff15:a:1:2000::")));
    EXPECT_FALSE(p52.contains(gid("ff15:a:1:0fff::")));

    // /9: the first bit of the flags.
    const MgidPrefix p9 = prefix("ff00::/9");
    EXPECT_TRUE(p9.contains(gid("ff12::1")));
    EXPECT_TRUE(p9.contains(gid("ff7e::1")));
    EXPECT_FALSE(p9.contains(gid("ff80::1")));

    // A whole MGID is /128, itself only.
    const MgidPrefix one = prefix("ff15::1:2");
    EXPECT_EQ(one.length, 128u);
    EXPECT_TRUE(one.contains(gid("ff15::1:2")));
    EXPECT_FALSE(one.contains(gid("ff15::1:3")));
    EXPECT_EQ(one.text(), "ff15::1:2/128");

    // /8: every MGID.
    EXPECT_TRUE(prefix("ff00::/8").contains(gid("ff3e:ffff::1")));
}

TEST(MgidPrefix, TextIsNormalised) {
    EXPECT_EQ(prefix("FF15:000A:0001::/48").text(), "ff15:a:1::/48");
    EXPECT_EQ(prefix("ff15:a:1:1000::/52").text(), "ff15:a:1:1000::/52");
}

TEST(MgidPrefix, ParseErrorsSayWhatIsWrong) {
    EXPECT_EQ(parse_error("ff15:a:1::/48"), "");
    EXPECT_EQ(parse_error("ff00::/8"), "");
    EXPECT_EQ(parse_error("ff15::1/128"), "");
    EXPECT_EQ(parse_error("zz15::/16"), "\"zz15::\" is not an MGID in IPv6 text form");
    EXPECT_EQ(parse_error(""), "\"\" is not an MGID in IPv6 text form");
    EXPECT_EQ(parse_error("ff15:a:1/48"), "\"ff15:a:1\" is not an MGID in IPv6 text form");
    EXPECT_EQ(parse_error("fe80::/16"), "fe80:: is not a multicast GID (it must start with ff)");
    const std::string bad_length = "the length after '/' must be a number in [8, 128]";
    for (const char *text : {"ff15::/", "ff15::/7", "ff15::/129", "ff15::/048", "ff15::/4x", "ff15::/-8",
                             "ff15::/ 16", "ff15::/16/16"})
        EXPECT_EQ(parse_error(text), bad_length) << text;
    // Bits after the prefix: a typo in the address or in the length.
    EXPECT_EQ(parse_error("ff15:a:1::1/48"),
              "ff15:a:1::1 has bits set after its first 48 (did you mean ff15:a:1::/48?)");
    EXPECT_EQ(parse_error("ff1f::/12"), "ff1f:: has bits set after its first 12 (did you mean ff10::/12?)");
}

// ---- IP prefixes ----

TEST(IpPrefix, ContainsIpv4AndIpv6GroupsByTheirOwnBits) {
    const IpPrefix v4 = ip_prefix("239.1.0.0/16");
    EXPECT_EQ(v4.length, 16u) << "counted in IPv4 bits";
    EXPECT_TRUE(v4.contains(ip("239.1.0.0")));
    EXPECT_TRUE(v4.contains(ip("239.1.255.255")));
    EXPECT_FALSE(v4.contains(ip("239.2.0.1")));
    EXPECT_FALSE(v4.contains(ip("ff0e::ef01:1"))) << "an IPv6 group is never in an IPv4 prefix";
    const IpPrefix v4_12 = ip_prefix("239.16.0.0/12");
    EXPECT_TRUE(v4_12.contains(ip("239.31.1.1")));
    EXPECT_FALSE(v4_12.contains(ip("239.32.1.1")));
    EXPECT_TRUE(ip_prefix("224.0.0.0/4").contains(ip("239.255.255.255")));
    const IpPrefix one = ip_prefix("239.1.2.3");
    EXPECT_EQ(one.length, 32u);
    EXPECT_TRUE(one.contains(ip("239.1.2.3")));
    EXPECT_FALSE(one.contains(ip("239.1.2.4")));

    const IpPrefix v6 = ip_prefix("ff3e::/16");
    EXPECT_TRUE(v6.contains(ip("ff3e::1:2")));
    EXPECT_FALSE(v6.contains(ip("ff3f::1")));
    EXPECT_FALSE(v6.contains(ip("239.1.2.3"))) << "nor an IPv4 group in an IPv6 prefix";
    EXPECT_EQ(ip_prefix("ff0e::1").length, 128u);
}

TEST(IpPrefix, TextIsNormalised) {
    EXPECT_EQ(ip_prefix("FF3E:0::/16").text(), "ff3e::/16");
    EXPECT_EQ(ip_prefix("::ffff:239.1.0.0/16").text(), "239.1.0.0/16") << "the IPv4 group it maps";
}

TEST(IpPrefix, ParseErrorsSayWhatIsWrong) {
    EXPECT_EQ(ip_parse_error("239.1.0.0/16"), "");
    EXPECT_EQ(ip_parse_error("ff3e::/16"), "");
    EXPECT_EQ(ip_parse_error("239.1/16"), "\"239.1\" is not an IPv4 or IPv6 address");
    EXPECT_EQ(ip_parse_error("10.0.0.0/8"), "10.0.0.0 is not an IP multicast group (224.0.0.0/4 or ff00::/8)");
    EXPECT_EQ(ip_parse_error("fe80::/16"), "fe80:: is not an IP multicast group (224.0.0.0/4 or ff00::/8)");
    for (const char *text : {"239.0.0.0/3", "239.0.0.0/33", "239.0.0.0/", "239.0.0.0/016", "239.0.0.0/1x"})
        EXPECT_EQ(ip_parse_error(text), "the length after '/' must be a number in [4, 32]") << text;
    EXPECT_EQ(ip_parse_error("ff3e::/129"), "the length after '/' must be a number in [8, 128]");
    EXPECT_EQ(ip_parse_error("239.1.2.3/16"), "239.1.2.3 has bits set after its first 16 (did you mean 239.1.0.0/16?)");
    EXPECT_EQ(ip_parse_error("ff3e::1/16"), "ff3e::1 has bits set after its first 16 (did you mean ff3e::/16?)");
}

TEST(IpPrefix, TheIpGroupOfAnMgidOnEthernetOnly) {
    EXPECT_EQ(ip_group_on(LinkLayer::ethernet, gid("::ffff:239.1.2.3")), ip("239.1.2.3"));
    EXPECT_EQ(ip_group_on(LinkLayer::ethernet, gid("ff0e::ffff:239.1.2.3")), ip("239.1.2.3")) << "RoCE v1's MGID";
    EXPECT_EQ(ip_group_on(LinkLayer::ethernet, gid("ff3e::1")), ip("ff3e::1"));
    EXPECT_EQ(ip_group_on(LinkLayer::infiniband, gid("ff0e::ffff:239.1.2.3")), std::nullopt)
        << "an InfiniBand MGID is no IP group";
}

// ---- what a rule allows, and what its refusals say ----

class PolicyRule : public ::testing::Test {
protected:
    PolicyRule() {
        Rule r = rule("hpc");
        r.gids = {kHpc};
        p.rules = {r};
    }
    Rule &r() { return p.rules[0]; }
    Refusal no(const JoinAsk &a) { return refused(p, alice, a); }
    Admission yes(const JoinAsk &a) { return admitted(p, alice, a); }

    Policy p;
    const std::vector<gid_t> groups{kHpc};
    const Caller alice = caller(kAlice, kUsers, groups, "/user.slice");
};

TEST_F(PolicyRule, MgidOutsideItsPrefixes) {
    r().mgids = {prefix("ff15:a:1::/48"), prefix("ff12::1:0/112")};
    EXPECT_EQ(yes(ask("ff15:a:1::7")).rule, "hpc");
    EXPECT_EQ(yes(ask("ff12::1:42")).rule, "hpc");
    const Refusal n = no(ask("ff15:a:2::7"));
    expect_denied_by(n, "hpc");
    EXPECT_EQ(n.field, "/mgid");
    EXPECT_EQ(n.error.message, "rule \"hpc\" (config access.rules) allows MGIDs in ff15:a:1::/48, ff12::1:0/112 "
                               "only, and ff15:a:2::7 is not in them");
}

// An IP rule judges a RoCE join by the IP group its MGID stands for, however the join named it.
TEST_F(PolicyRule, IpPrefixesAllowRoceJoinsOfTheirGroups) {
    r().ips = {ip_prefix("239.1.0.0/16"), ip_prefix("ff3e::/16")};
    auto roce = [](const char *mgid, bool by_ip) {
        JoinAsk a = ask(mgid);
        a.ip = ip_group_on(LinkLayer::ethernet, a.mgid);
        a.by_ip = by_ip;
        return a;
    };
    EXPECT_EQ(yes(roce("::ffff:239.1.2.3", true)).rule, "hpc") << "--ip 239.1.2.3 on RoCE v2";
    EXPECT_EQ(yes(roce("ff0e::ffff:239.1.2.3", true)).rule, "hpc") << "--ip 239.1.2.3 on RoCE v1";
    EXPECT_EQ(yes(roce("::ffff:239.1.2.3", false)).rule, "hpc") << "the same group named by its MGID";
    EXPECT_EQ(yes(roce("ff3e::1:2", false)).rule, "hpc");
    Refusal n = no(roce("::ffff:239.2.0.1", true));
    expect_denied_by(n, "hpc");
    EXPECT_EQ(n.field, "/ip");
    EXPECT_EQ(n.error.message, "rule \"hpc\" (config access.rules) allows IP groups in 239.1.0.0/16, ff3e::/16 only, "
                               "and 239.2.0.1 (MGID ::ffff:239.2.0.1) is not in them");
    EXPECT_EQ(no(roce("::ffff:239.2.0.1", false)).field, "/mgid");
    // An InfiniBand join has no IP group: a rule with only `ips` allows no InfiniBand MGID.
    n = no(ask("ff0e::ffff:239.1.2.3"));
    EXPECT_EQ(n.error.message, "rule \"hpc\" (config access.rules) allows IP groups in 239.1.0.0/16, ff3e::/16 only, "
                               "and ff0e::ffff:ef01:203 is not in them");

    // With `mgids` as well, either list admits.
    r().mgids = {prefix("ff15::/16")};
    EXPECT_EQ(yes(ask("ff15::1")).rule, "hpc");
    EXPECT_EQ(yes(roce("::ffff:239.1.2.3", true)).rule, "hpc");
    EXPECT_EQ(no(ask("ff12::1")).error.message,
              "rule \"hpc\" (config access.rules) allows MGIDs in ff15::/16 or IP groups in 239.1.0.0/16, "
              "ff3e::/16 only, and ff12::1 is not in them");
}

TEST_F(PolicyRule, ReviewSeesARoceRecordsIpGroup) {
    r().ips = {ip_prefix("239.1.0.0/16")};
    McRecord rec = record("::ffff:239.1.2.3");
    rec.link_layer = LinkLayer::ethernet;
    EXPECT_EQ(review(p, alice, join::full, rec, false), std::nullopt);
    rec.mgid = gid("::ffff:239.9.2.3");
    EXPECT_EQ(review(p, alice, join::full, rec, false),
              "rule \"hpc\" (config access.rules) allows IP groups in 239.1.0.0/16 only, and 239.9.2.3 (MGID "
              "::ffff:239.9.2.3) is not in them");
}

TEST_F(PolicyRule, JoinStateItDoesNotAllow) {
    r().join_states = join::full | join::send_only_full;
    EXPECT_EQ(yes(ask("ff15::1", join::send_only_full)).rule, "hpc");
    const Refusal n = no(ask("ff15::1", join::non_member));
    expect_denied_by(n, "hpc");
    EXPECT_EQ(n.field, "/join_state");
    EXPECT_EQ(n.error.message,
              "rule \"hpc\" (config access.rules) allows join states full, sendonly-full only, not nonmember");
}

TEST_F(PolicyRule, PkeyItDoesNotAllow) {
    r().pkeys = {0x8001, 0x8003};
    JoinAsk a = ask("ff15::1");
    a.pkey = 0x8002;
    const Refusal n = no(a);
    expect_denied_by(n, "hpc");
    EXPECT_EQ(n.field, "/pkey");
    EXPECT_EQ(n.error.message, "rule \"hpc\" (config access.rules) allows P_Keys 0x8001, 0x8003 only, not 0x8002");
    a.pkey = 0x8003;
    const Admission ad = yes(a);
    EXPECT_FALSE(ad.assert_pkey); // the join named it
    EXPECT_EQ(ad.pkeys, (std::vector<std::uint16_t>{0x8001, 0x8003}));
}

TEST_F(PolicyRule, ControlledQkeyAskedForWithoutTheRight) {
    JoinAsk a = ask("ff15::1");
    a.qkey = 0x80010000;
    const Refusal n = no(a);
    expect_denied_by(n, "hpc");
    EXPECT_EQ(n.field, "/qkey");
    EXPECT_EQ(n.error.message, "rule \"hpc\" (config access.rules) does not allow controlled Q_Keys (0x80010000 has "
                               "its high bit set, which the kernel reserves to CAP_NET_RAW)");
    a.qkey = 0x7fffffff; // the high bit clear: anyone's
    EXPECT_FALSE(yes(a).controlled_qkeys);
    r().controlled_qkeys = true;
    a.qkey = 0x80010000;
    EXPECT_TRUE(yes(a).controlled_qkeys);
}

TEST_F(PolicyRule, AnUnnamedRuleIsNamedByItsIndex) {
    r().name = "access.rules[0]";
    r().mgids = {prefix("ff15:a:1::/48")};
    const Refusal n = no(ask("ff15:b::1"));
    expect_denied_by(n, "access.rules[0]");
    EXPECT_EQ(n.error.message.rfind("rule \"access.rules[0]\" (config access.rules) allows MGIDs", 0), 0u)
        << n.error.message;
}

TEST_F(PolicyRule, OnePkeyIsAssertedForAJoinThatNamesNone) {
    r().pkeys = {0x8001};
    const Admission ad = yes(ask("ff15::1"));
    ASSERT_TRUE(ad.assert_pkey);
    EXPECT_EQ(*ad.assert_pkey, 0x8001);
    EXPECT_EQ(ad.pkeys, std::vector<std::uint16_t>{0x8001});
    // SA-assigned creates too (with the right to create).
    r().create = Create::any;
    EXPECT_EQ(yes(sa_assigned()).assert_pkey, std::optional<std::uint16_t>(0x8001));
}

TEST_F(PolicyRule, SeveralPkeysRequireTheJoinToNameOne) {
    r().pkeys = {0x8001, 0x8002};
    const Refusal n = no(ask("ff15::1"));
    expect_denied_by(n, "hpc");
    EXPECT_EQ(n.field, "/pkey");
    EXPECT_EQ(n.error.message, "rule \"hpc\" (config access.rules) allows several P_Keys (0x8001, 0x8002): the join "
                               "must name its P_Key");
    JoinAsk a = ask("ff15::1");
    a.pkey = 0x8002;
    EXPECT_FALSE(yes(a).assert_pkey);
}

TEST_F(PolicyRule, PkeysCompareOnTheLow15Bits) {
    r().pkeys = {0x8001};
    JoinAsk a = ask("ff15::1");
    a.pkey = 0x0001; // the limited member of partition 1
    EXPECT_EQ(yes(a).rule, "hpc");
    a.pkey = 0x8001;
    EXPECT_EQ(yes(a).rule, "hpc");
    a.pkey = 0x0002;
    EXPECT_EQ(no(a).field, "/pkey");
    // The record's P_Key likewise.
    const Admission ad = yes(ask("ff15::1"));
    EXPECT_FALSE(check_record(ad, record("ff15::1", 0x0001)));
    EXPECT_FALSE(check_record(ad, record("ff15::1", 0x8001)));
    // A rule of a limited P_Key allows the full one.
    r().pkeys = {0x0001};
    a.pkey = 0x8001;
    EXPECT_EQ(yes(a).rule, "hpc");
}

// ---- create rights ----

TEST_F(PolicyRule, NoCreateRight) {
    ASSERT_EQ(r().create, Create::none); // the default
    // An SA-assigned MGID is always a create: refused at once.
    const Refusal n = no(sa_assigned());
    expect_denied_by(n, "hpc");
    EXPECT_EQ(n.field, "/create");
    EXPECT_EQ(n.error.message,
              "rule \"hpc\" (config access.rules) does not allow creating groups with an SA-assigned MGID");
    // An MGID it names is admitted: the group may exist. Should the SA say it does not, the
    // create gate answers with no_create.
    const Admission ad = yes(ask("ff15:a:1::5"));
    ASSERT_TRUE(ad.no_create);
    expect_denied_by(*ad.no_create, "hpc");
    EXPECT_EQ(ad.no_create->field, "/mgid");
    EXPECT_EQ(ad.no_create->error.message,
              "rule \"hpc\" (config access.rules) does not allow creating groups, and ff15:a:1::5 does not exist");
}

TEST_F(PolicyRule, CreateByMgidOnly) {
    r().create = Create::mgid;
    EXPECT_FALSE(yes(ask("ff15:a:1::5")).no_create);
    const Refusal n = no(sa_assigned());
    EXPECT_EQ(n.field, "/create");
    EXPECT_EQ(n.error.message,
              "rule \"hpc\" (config access.rules) does not allow creating groups with an SA-assigned MGID");
}

TEST_F(PolicyRule, CreateSaAssignedOnly) {
    r().create = Create::sa_assigned;
    EXPECT_FALSE(yes(sa_assigned()).no_create);
    const Admission ad = yes(ask("ff15:a:1::5"));
    ASSERT_TRUE(ad.no_create);
    EXPECT_EQ(ad.no_create->field, "/mgid");
}

TEST_F(PolicyRule, CreateAny) {
    r().create = Create::any;
    EXPECT_FALSE(yes(sa_assigned()).no_create);
    EXPECT_FALSE(yes(ask("ff15:a:1::5")).no_create);
}

TEST_F(PolicyRule, SaAssignedCreatesIgnoreTheMgidPrefixes) {
    // The prefixes apply to MGIDs the caller names; the SA picks an assigned one.
    r().mgids = {prefix("ff15:a:1::/48")};
    r().create = Create::any;
    EXPECT_EQ(yes(sa_assigned()).rule, "hpc");
}

TEST_F(PolicyRule, ACreateWithAControlledDefaultQkeyNeedsControlledQkeys) {
    r().create = Create::any;
    JoinAsk a = ask("ff15:a:1::5");
    a.create_qkey = 0x80000001;
    Admission ad = yes(a);
    ASSERT_TRUE(ad.no_create);
    expect_denied_by(*ad.no_create, "hpc");
    EXPECT_EQ(ad.no_create->field, "/qkey");
    EXPECT_EQ(ad.no_create->error.message, "rule \"hpc\" (config access.rules) does not allow controlled Q_Keys, and "
                                           "a create would use the configured 0x80000001 (groups.create.qkey)");
    // SA-assigned: refused at once, for the same reason.
    JoinAsk s = sa_assigned();
    s.create_qkey = 0x80000001;
    const Refusal n = no(s);
    EXPECT_EQ(n.field, "/qkey");
    EXPECT_EQ(n.error.message, ad.no_create->error.message);
    // A join that asserts its own (uncontrolled) Q_Key does not use the default.
    a.qkey = 0x1234;
    EXPECT_FALSE(yes(a).no_create);
    // With the right, the default is fine.
    r().controlled_qkeys = true;
    EXPECT_FALSE(yes(s).no_create);
}

// ---- after the SA answered ----

TEST_F(PolicyRule, CheckRecordRefusesAControlledQkeyOrAForeignPkey) {
    r().pkeys = {0x8001};
    const Admission ad = yes(ask("ff15:a:1::5"));
    EXPECT_FALSE(check_record(ad, record("ff15:a:1::5", 0x8001, 0x01234567)));

    auto pkey = check_record(ad, record("ff15:a:1::5", 0x8002, 0x01234567));
    ASSERT_TRUE(pkey);
    expect_denied_by(*pkey, "hpc");
    EXPECT_EQ(pkey->field, "/pkey");
    EXPECT_EQ(pkey->error.message,
              "rule \"hpc\" (config access.rules) allows P_Keys 0x8001 only, and group ff15:a:1::5 has 0x8002");

    auto qkey = check_record(ad, record("ff15:a:1::5", 0x8001, 0x80000000));
    ASSERT_TRUE(qkey);
    expect_denied_by(*qkey, "hpc");
    EXPECT_EQ(qkey->field, "/qkey");
    EXPECT_EQ(qkey->error.message, "rule \"hpc\" (config access.rules) does not allow controlled Q_Keys, and group "
                                   "ff15:a:1::5 has 0x80000000 (the kernel reserves those to CAP_NET_RAW)");

    // With no P_Keys listed, any; with controlled_qkeys, those too.
    r().pkeys.clear();
    r().controlled_qkeys = true;
    EXPECT_FALSE(check_record(yes(ask("ff15:a:1::5")), record("ff15:a:1::5", 0x8002, 0x80000000)));
}

// ---- a reload's review ----

TEST_F(PolicyRule, ReviewFlagsAndExplains) {
    r().mgids = {prefix("ff15:a:1::/48")};
    r().pkeys = {0x8001};
    r().join_states = join::full;
    EXPECT_EQ(review(p, alice, join::full, record("ff15:a:1::5", 0x8001), false), std::nullopt);
    EXPECT_EQ(review(p, alice, join::full, record("ff15:a:2::5", 0x8001), false),
              "rule \"hpc\" (config access.rules) allows MGIDs in ff15:a:1::/48 only, and ff15:a:2::5 is not in them");
    EXPECT_EQ(review(p, alice, join::send_only_full, record("ff15:a:1::5", 0x8001), false),
              "rule \"hpc\" (config access.rules) allows join states full only, not sendonly-full");
    EXPECT_EQ(review(p, alice, join::full, record("ff15:a:1::5", 0xffff), false),
              "rule \"hpc\" (config access.rules) allows P_Keys 0x8001 only, not 0xffff");
    EXPECT_EQ(review(p, alice, join::full, record("ff15:a:1::5", 0x8001, 0x80000002), false),
              "rule \"hpc\" (config access.rules) does not allow controlled Q_Keys (0x80000002 has its high bit set, "
              "which the kernel reserves to CAP_NET_RAW)");
    // A held membership of a group it may not create is not flagged: the group exists.
    EXPECT_EQ(r().create, Create::none);
    EXPECT_EQ(review(p, alice, join::full, record("ff15:a:1::5", 0x8001), false), std::nullopt);

    // Rules that no longer match the caller: default deny.
    r().gids = {kOps};
    EXPECT_EQ(review(p, alice, join::full, record("ff15:a:1::5", 0x8001), false),
              "no rule of the access policy (config access.rules) matches uid 1001, so it may join nothing");
    // root is never flagged.
    const std::vector<gid_t> none;
    EXPECT_EQ(review(p, caller(0, 0, none), join::full, record("ff99::1", 0x7777, 0x80000000), true), std::nullopt);
}

TEST_F(PolicyRule, ReviewOfAnSaAssignedMembershipJudgesTheCreate) {
    r().mgids = {prefix("ff15:a:1::/48")};
    // The MGID the SA assigned is outside the prefixes: not a reason, since they apply to
    // MGIDs a caller names.
    r().create = Create::sa_assigned;
    EXPECT_EQ(review(p, alice, join::full, record("ff15:601b:ffff::1234"), true), std::nullopt);
    // Judged as the MGID it now has, the same membership would be flagged.
    EXPECT_NE(review(p, alice, join::full, record("ff15:601b:ffff::1234"), false), std::nullopt);
    // Without the right to create with an SA-assigned MGID, it is flagged whatever its MGID.
    r().create = Create::mgid;
    EXPECT_EQ(review(p, alice, join::full, record("ff15:a:1::1234"), true),
              "rule \"hpc\" (config access.rules) does not allow creating groups with an SA-assigned MGID");
}

TEST(PolicyReview, NoRulesFlagsNothing) {
    const Policy p;
    const std::vector<gid_t> none;
    EXPECT_EQ(review(p, caller(kAlice, kUsers, none), join::full, record("ff12::1", 0x7fff, 0x80000000), true),
              std::nullopt);
}

// ---- quotas ----

TEST(PolicyQuotas, QuotasForUseTheMatchingRulesOverrides) {
    Rule small = rule("small");
    small.gids = {kOps};
    small.memberships_per_uid = 10;
    small.creates_per_uid = 0; // none
    Rule half = rule("half");
    half.gids = {kHpc};
    half.creates_per_uid = 2; // memberships: access.quotas'
    Policy p;
    p.rules = {small, half};
    p.quotas = Quotas{500, 20, 300};
    const std::vector<gid_t> ops{kOps}, hpc{kHpc}, none;

    EXPECT_EQ(p.quotas_for(caller(kAlice, kUsers, ops)), (Quotas{10, 0, 300}));
    EXPECT_EQ(p.quotas_for(caller(kAlice, kUsers, hpc)), (Quotas{500, 2, 300}));
    EXPECT_EQ(p.quotas_for(caller(kAlice, kUsers, none)), (Quotas{500, 20, 300})); // no rule: access.quotas'
    // The shares are access.quotas' whatever the rule.
    p.quotas.sa_mads_per_second = 7;
    EXPECT_EQ(p.quotas_for(caller(kAlice, kUsers, ops)).sa_mads_per_second, 7u);
    EXPECT_EQ(p.quotas_for(caller(0, 0, ops)), root_quotas(300));

    // admit() hands the same on with the admission.
    const Admission a = admitted(p, caller(kAlice, kUsers, ops), ask("ff15::1"));
    EXPECT_EQ(a.rule, "small");
    EXPECT_EQ(a.memberships_quota, 10u);
    EXPECT_EQ(a.creates_quota, 0u);
    const Admission b = admitted(p, caller(kAlice, kUsers, hpc), ask("ff15::1"));
    EXPECT_EQ(b.memberships_quota, 500u);
    EXPECT_EQ(b.creates_quota, 2u);
}

// ---- the worked examples of config/README.md, "Access policy" (names as ids) ----

TEST(PolicyExamples, HpcSite) {
    Rule hpc = rule("hpc");
    hpc.gids = {kHpc};
    hpc.mgids = {prefix("ff15:a:1::/48")};
    hpc.create = Create::mgid;
    Rule everyone = rule("everyone");
    everyone.mgids = {prefix("ff15:a:1::/48")};
    everyone.join_states = join::full | join::send_only_non_member | join::send_only_full;
    Policy p;
    p.rules = {hpc, everyone};
    const std::vector<gid_t> in_hpc{kHpc}, none;
    const Caller alice = caller(kAlice, kUsers, in_hpc), bob = caller(kBob, kUsers, none);

    // hpc creates groups it names in the prefix, in any join state; not SA-assigned ones.
    const Admission a = admitted(p, alice, ask("ff15:a:1::17", join::non_member));
    EXPECT_EQ(a.rule, "hpc");
    EXPECT_FALSE(a.no_create);
    EXPECT_EQ(refused(p, alice, sa_assigned()).field, "/create");
    EXPECT_EQ(refused(p, alice, ask("ff15:b::1")).field, "/mgid");

    // Everyone else joins what exists there, full or send-only, and creates nothing.
    const Admission b = admitted(p, bob, ask("ff15:a:1::9", join::send_only_non_member));
    EXPECT_EQ(b.rule, "everyone");
    ASSERT_TRUE(b.no_create);
    EXPECT_EQ(b.no_create->error.message, "rule \"everyone\" (config access.rules) does not allow creating groups, "
                                          "and ff15:a:1::9 does not exist");
    EXPECT_EQ(refused(p, bob, ask("ff15:a:1::9", join::non_member)).field, "/join_state");
    EXPECT_EQ(refused(p, bob, ask("ff15:b::1")).field, "/mgid");
    EXPECT_EQ(refused(p, bob, sa_assigned()).field, "/create");

    // root: anything.
    EXPECT_EQ(admitted(p, caller(0, 0, none), sa_assigned()).rule, "root");
}

TEST(PolicyExamples, CloudNode) {
    auto tenant = [](const char *name, const char *cgroup, std::uint16_t pkey, const char *mgids) {
        Rule r = rule(name);
        r.cgroups = {cgroup};
        r.pkeys = {pkey};
        r.mgids = {prefix(mgids)};
        r.create = Create::mgid;
        r.join_states = join::full | join::send_only_non_member | join::send_only_full;
        r.memberships_per_uid = 256;
        r.creates_per_uid = 16;
        return r;
    };
    Policy p;
    p.rules = {tenant("tenant-a", "/machine.slice/tenant-a.slice", 0x8001, "ff15:a:1::/48"),
               tenant("tenant-b", "/machine.slice/tenant-b.slice", 0x8002, "ff15:b:1::/48")};
    p.quotas.groups_per_port = 512;
    const std::vector<gid_t> none;
    const Caller a = caller(200000, 200000, none, "/machine.slice/tenant-a.slice/libpod-4f2c.scope");
    const Caller b = caller(300000, 300000, none, "/machine.slice/tenant-b.slice/libpod-77aa.scope");

    const Admission ok = admitted(p, a, ask("ff15:a:1::5"));
    EXPECT_EQ(ok.rule, "tenant-a");
    EXPECT_EQ(ok.assert_pkey, std::optional<std::uint16_t>(0x8001));
    EXPECT_FALSE(ok.no_create);
    EXPECT_EQ(ok.memberships_quota, 256u);
    EXPECT_EQ(ok.creates_quota, 16u);
    EXPECT_EQ(p.quotas_for(a), (Quotas{256, 16, 512}));
    JoinAsk other = ask("ff15:a:1::5");
    other.pkey = 0x8002;
    EXPECT_EQ(refused(p, a, other).error.message,
              "rule \"tenant-a\" (config access.rules) allows P_Keys 0x8001 only, not 0x8002");
    other.pkey = 0x0001;
    EXPECT_EQ(admitted(p, a, other).rule, "tenant-a");
    EXPECT_EQ(check_record(ok, record("ff15:a:1::5", 0x8002))->field, "/pkey");
    EXPECT_EQ(refused(p, a, sa_assigned()).field, "/create");
    EXPECT_EQ(refused(p, a, ask("ff15:b:1::5")).field, "/mgid");
    EXPECT_EQ(refused(p, b, ask("ff15:a:1::5")).field, "/mgid");
    EXPECT_EQ(admitted(p, b, ask("ff15:b:1::5")).assert_pkey, std::optional<std::uint16_t>(0x8002));

    // Outside the tenants' slices, a slice of the same name in a user's own manager included:
    // default deny.
    for (const char *cgroup :
         {"/user.slice/user-1001.slice/session-2.scope",
          "/user.slice/user-1001.slice/user@1001.service/tenant.slice/tenant-a.slice/run-1.scope"}) {
        const Refusal no = refused(p, caller(kAlice, kUsers, none, cgroup), ask("ff15:a:1::5"));
        ASSERT_TRUE(no.error.policy) << cgroup;
        EXPECT_EQ(no.error.policy->rule, "default-deny") << cgroup;
    }
}

// The refusal sentences every transport (socket, D-Bus) gives: one wording each.
TEST(PolicyText, RefusalSentences) {
    EXPECT_EQ(unidentified("process 42 is gone"), "cannot identify the caller: process 42 is gone");
    EXPECT_EQ(not_admitted(1001),
              "uid 1001 is not allowed to use rdma-mcastd (config access.allow_uids, access.allow_gids)");
}

TEST(PolicyText, PkeyText) {
    EXPECT_EQ(pkey_text(0x8001), "0x8001");
    EXPECT_EQ(pkey_text(0xffff), "0xffff");
    EXPECT_EQ(pkey_text(0x1), "0x0001");
}

} // namespace
} // namespace mcastd::policy

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The C API against a fake daemon: connecting, joining, leaving, evicting, list and status.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "client_testing.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;

// ---- connect ----

TEST(ClientConnect, HelloOffersBothVersionsAndRecordsTheDaemon) {
    FakeDaemon d;
    auto c = connect_to(d);
    ASSERT_TRUE(c);
    auto hellos = d.requests_of<proto::Hello>();
    ASSERT_EQ(hellos.size(), 1u);
    EXPECT_EQ(hellos[0].versions, (std::vector<unsigned>{1, 2}));
    EXPECT_FALSE(hellos[0].resume);
    EXPECT_FALSE(hellos[0].client.empty());
    EXPECT_EQ(rdmamcast_protocol_version(c.get()), 1u);
    EXPECT_STREQ(rdmamcast_daemon_version(c.get()), "rdma-mcastd 0.1.0-fake");
    EXPECT_EQ(rdmamcast_socket_path(c.get()), d.path());
}

TEST(ClientConnect, UnsupportedVersionFailsWithTheDaemonsVersions) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        s.fail(env.id, mcastd::Errc::unsupported_version, "no common version", std::nullopt, {},
               {2, 3});
        return true;
    });
    rdmamcast_client *c = reinterpret_cast<rdmamcast_client *>(1);
    EXPECT_EQ(rdmamcast_connect(d.path().c_str(), &c), -EPROTONOSUPPORT);
    EXPECT_EQ(c, nullptr);
    const rdmamcast_error *e = rdmamcast_last_error(nullptr);
    EXPECT_EQ(e->code, RDMAMCAST_E_UNSUPPORTED_VERSION);
    EXPECT_EQ(e->err, -EPROTONOSUPPORT);
    EXPECT_STREQ(e->code_name, "unsupported-version");
    ASSERT_EQ(e->num_versions, 2u);
    EXPECT_EQ(e->versions[0], 2u);
    EXPECT_EQ(e->versions[1], 3u);
    EXPECT_NE(std::strstr(e->message, "no common version"), nullptr) << e->message;
    EXPECT_NE(std::strstr(e->message, "serves 2, 3"), nullptr) << e->message;
}

TEST(ClientConnect, DeniedHelloIsEacces) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        s.fail(env.id, mcastd::Errc::denied, "uid 1000 is not in group rdma");
        s.close();
        return true;
    });
    rdmamcast_client *c = nullptr;
    EXPECT_EQ(rdmamcast_connect(d.path().c_str(), &c), -EACCES);
    EXPECT_EQ(rdmamcast_last_error(nullptr)->code, RDMAMCAST_E_DENIED);
    EXPECT_STREQ(rdmamcast_last_error(nullptr)->message, "uid 1000 is not in group rdma");
}

TEST(ClientConnect, NoDaemonNamesThePathAndTheCause) {
    rdmamcast_client *c = nullptr;
    EXPECT_EQ(rdmamcast_connect("/nonexistent/rdma-mcastd.sock", &c), -ENOENT);
    const rdmamcast_error *e = rdmamcast_last_error(nullptr);
    EXPECT_EQ(e->code, RDMAMCAST_E_SYSTEM);
    EXPECT_NE(std::strstr(e->message, "/nonexistent/rdma-mcastd.sock"), nullptr) << e->message;
    EXPECT_NE(std::strstr(e->message, "is rdma-mcastd running?"), nullptr) << e->message;
}

TEST(ClientConnect, EnvironmentVariableChoosesTheSocket) {
    FakeDaemon d;
    ::setenv(RDMAMCAST_SOCKET_ENV, d.path().c_str(), 1);
    rdmamcast_client *c = nullptr;
    int rc = rdmamcast_connect(nullptr, &c);
    ::unsetenv(RDMAMCAST_SOCKET_ENV);
    ASSERT_EQ(rc, 0) << rdmamcast_last_error(nullptr)->message;
    ClientPtr owned(c);
    EXPECT_EQ(rdmamcast_socket_path(c), d.path());
    EXPECT_EQ(d.requests_of<proto::Hello>().size(), 1u);
}

TEST(ClientConnect, ExplicitPathWinsOverTheEnvironment) {
    FakeDaemon d;
    ::setenv(RDMAMCAST_SOCKET_ENV, "/nonexistent/env.sock", 1);
    rdmamcast_client *c = nullptr;
    int rc = rdmamcast_connect(d.path().c_str(), &c);
    ::unsetenv(RDMAMCAST_SOCKET_ENV);
    ASSERT_EQ(rc, 0);
    rdmamcast_close(c);
}

TEST(ClientConnect, WithoutPathOrEnvironmentUsesTheDefault) {
    ::unsetenv(RDMAMCAST_SOCKET_ENV);
    rdmamcast_client *c = nullptr;
    if (rdmamcast_connect(nullptr, &c) == 0) {
        EXPECT_STREQ(rdmamcast_socket_path(c), RDMAMCAST_DEFAULT_SOCKET);
        rdmamcast_close(c);
        GTEST_SKIP() << "a daemon is running at " RDMAMCAST_DEFAULT_SOCKET;
    }
    EXPECT_NE(std::strstr(rdmamcast_last_error(nullptr)->message, RDMAMCAST_DEFAULT_SOCKET),
              nullptr);
}

TEST(ClientConnect, CloseOfNullIsANoOp) { rdmamcast_close(nullptr); }

// ---- join ----

// A daemon whose joins succeed with sample_record() and membership 7.
FakeDaemon::Handler join_ok(std::uint64_t membership = 7) {
    return [membership](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.reply(env.id, proto::JoinResult{membership, sample_record()});
        return true;
    };
}

rdmamcast_join_params params_for(const char *mgid) {
    rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
    p.device = "mlx5_0";
    p.port = 1;
    auto g = gid(mgid);
    std::memcpy(p.mgid, g.data(), 16);
    return p;
}

TEST(ClientJoin, RecordFieldsAreMappedExactly) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    auto p = params_for("ff15::1:2");
    rdmamcast_record rec;
    std::memset(&rec, 0xaa, sizeof rec);
    std::uint64_t membership = 0;
    ASSERT_EQ(rdmamcast_join(c.get(), &p, &rec, &membership), 0)
        << rdmamcast_last_error(c.get())->message;
    EXPECT_EQ(membership, 7u);
    const auto want = sample_record();
    EXPECT_EQ(0, std::memcmp(rec.mgid, want.mgid.data(), 16));
    EXPECT_EQ(0, std::memcmp(rec.port_gid, want.port_gid.data(), 16));
    EXPECT_EQ(rec.qkey, 0x12345678u);
    EXPECT_EQ(rec.mlid, 0xc001);
    EXPECT_EQ(rec.pkey, 0xffff);
    EXPECT_EQ(rec.sl, 3);
    EXPECT_EQ(rec.mtu, 2048u);
    EXPECT_EQ(rec.rate, 3); // IBV_RATE_10_GBPS
    EXPECT_EQ(rec.flow_label, 0xabcdeu);
    EXPECT_EQ(rec.traffic_class, 0x20);
    EXPECT_EQ(rec.hop_limit, 7);
    EXPECT_EQ(rec.scope, 5);
    EXPECT_EQ(rec.join_state, RDMAMCAST_JOIN_STATE_FULL);
    for (auto r : rec.reserved)
        EXPECT_EQ(r, 0u); // zeroed, not left as the caller's bytes
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NONE);
}

TEST(ClientJoin, RequestCarriesEveryAssertedField) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    auto p = params_for("ff12:601b::1");
    p.join_state = RDMAMCAST_JOIN_STATE_SENDONLY_FULL;
    p.flags = RDMAMCAST_JOIN_QKEY | RDMAMCAST_JOIN_PKEY | RDMAMCAST_JOIN_SL |
              RDMAMCAST_JOIN_TRAFFIC_CLASS | RDMAMCAST_JOIN_FLOW_LABEL |
              RDMAMCAST_JOIN_HOP_LIMIT | RDMAMCAST_JOIN_MTU | RDMAMCAST_JOIN_RATE;
    p.qkey = 0x80010000;
    p.pkey = 0x8001;
    p.sl = 15;
    p.traffic_class = 0xff;
    p.flow_label = 0xfffff;
    p.hop_limit = 64;
    p.mtu = 4096;
    p.mtu_selector = RDMAMCAST_SELECTOR_LESS;
    p.rate = 16; // 100 Gb/s
    p.rate_selector = RDMAMCAST_SELECTOR_BEST;
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), 0)
        << rdmamcast_last_error(c.get())->message;

    auto joins = d.requests_of<proto::Join>();
    ASSERT_EQ(joins.size(), 1u);
    const auto &r = joins[0].request;
    EXPECT_EQ(r.device, "mlx5_0");
    EXPECT_EQ(r.port, 1);
    EXPECT_EQ(r.mgid, gid("ff12:601b::1"));
    EXPECT_EQ(r.join_state, mcastd::join::send_only_full);
    EXPECT_FALSE(r.scope);
    EXPECT_EQ(r.params.qkey, 0x80010000u);
    EXPECT_EQ(r.params.pkey, 0x8001);
    EXPECT_EQ(r.params.sl, 15);
    EXPECT_EQ(r.params.tclass, 0xff);
    EXPECT_EQ(r.params.flow_label, 0xfffffu);
    EXPECT_EQ(r.params.hop_limit, 64);
    EXPECT_EQ(r.params.mtu, (mcastd::Selected{mcastd::Selector::less, 5}));
    EXPECT_EQ(r.params.rate, (mcastd::Selected{mcastd::Selector::best, 16}));
}

TEST(ClientJoin, UnsetFieldsAreNotAsserted) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    auto p = params_for("ff15::1:2");
    p.qkey = 5; // ignored without RDMAMCAST_JOIN_QKEY
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), 0);
    auto r = d.requests_of<proto::Join>().at(0).request;
    EXPECT_EQ(r.params, mcastd::GroupParams{});
    EXPECT_EQ(r.join_state, mcastd::join::full); // 0 means full
}

TEST(ClientJoin, CreateSendsZeroMgidAndScope) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    rdmamcast_join_params p;
    rdmamcast_join_params_init(&p);
    p.device = "mlx5_1";
    p.port = 2;
    p.flags = RDMAMCAST_JOIN_CREATE | RDMAMCAST_JOIN_SCOPE;
    p.scope = 2;
    p.mgid[0] = 0xff; // ignored with CREATE
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), 0);
    auto r = d.requests_of<proto::Join>().at(0).request;
    EXPECT_TRUE(mcastd::is_zero(r.mgid));
    EXPECT_EQ(r.scope, 2);
}

TEST(ClientJoin, NameSendsTheNameAndNoMgid) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    rdmamcast_join_params p;
    rdmamcast_join_params_init(&p);
    p.device = "mlx5_0";
    p.port = 1;
    p.name = "job-42";
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), 0);
    auto r = d.requests_of<proto::Join>().at(0).request;
    EXPECT_EQ(r.name, "job-42");
    EXPECT_TRUE(mcastd::is_zero(r.mgid));
}

// A caller compiled before name existed passes the first layout's size: the bytes where name
// is now are not its own, and are never read.
TEST(ClientJoin, TheFirstLayoutHasNoName) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    auto p = params_for("ff15::1:2");
    p.size = offsetof(rdmamcast_join_params, name);
    p.name = "not the caller's";
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), 0);
    auto r = d.requests_of<proto::Join>().at(0).request;
    EXPECT_TRUE(r.name.empty());
    EXPECT_EQ(r.mgid, *mcastd::parse_gid("ff15::1:2"));
}

struct BadParams {
    const char *name;
    void (*mutate)(rdmamcast_join_params &);
    int err;
    const char *field;
};
// Names the case in test listings instead of dumping its bytes.
void PrintTo(const BadParams &c, std::ostream *os) { *os << c.name; }


class ClientJoinParams : public ::testing::TestWithParam<BadParams> {};

TEST_P(ClientJoinParams, AreRejectedBeforeAnythingIsSent) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    auto p = params_for("ff15::1:2");
    GetParam().mutate(p);
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), GetParam().err);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_INVALID_ARGUMENT);
    EXPECT_EQ(e->err, GetParam().err);
    EXPECT_STREQ(e->field, GetParam().field);
    EXPECT_NE(e->message[0], '\0');
    EXPECT_TRUE(d.requests_of<proto::Join>().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, ClientJoinParams,
    ::testing::Values(
        BadParams{"size_zero", [](rdmamcast_join_params &p) { p.size = 0; }, -EINVAL, ""},
        BadParams{"unknown_flag", [](rdmamcast_join_params &p) { p.flags |= 1u << 20; },
                  -EOPNOTSUPP, ""},
        BadParams{"no_device", [](rdmamcast_join_params &p) { p.device = nullptr; }, -EINVAL,
                  "/device"},
        BadParams{"device_with_space", [](rdmamcast_join_params &p) { p.device = "mlx5 0"; },
                  -EINVAL, "/device"},
        BadParams{"port_zero", [](rdmamcast_join_params &p) { p.port = 0; }, -EINVAL, "/port"},
        BadParams{"port_255", [](rdmamcast_join_params &p) { p.port = 255; }, -EINVAL, "/port"},
        BadParams{"two_join_states", [](rdmamcast_join_params &p) { p.join_state = 3; },
                  -EINVAL, "/join_state"},
        BadParams{"zero_mgid",
                  [](rdmamcast_join_params &p) { std::memset(p.mgid, 0, 16); }, -EINVAL,
                  "/mgid"},
        BadParams{"scope_without_create",
                  [](rdmamcast_join_params &p) {
                      p.flags |= RDMAMCAST_JOIN_SCOPE;
                      p.scope = 5;
                  },
                  -EINVAL, "/scope"},
        BadParams{"scope_16",
                  [](rdmamcast_join_params &p) {
                      p.flags |= RDMAMCAST_JOIN_CREATE | RDMAMCAST_JOIN_SCOPE;
                      p.scope = 16;
                  },
                  -EINVAL, "/scope"},
        BadParams{"sl_16",
                  [](rdmamcast_join_params &p) {
                      p.flags |= RDMAMCAST_JOIN_SL;
                      p.sl = 16;
                  },
                  -EINVAL, "/sl"},
        BadParams{"flow_label_21_bits",
                  [](rdmamcast_join_params &p) {
                      p.flags |= RDMAMCAST_JOIN_FLOW_LABEL;
                      p.flow_label = 0x100000;
                  },
                  -EINVAL, "/flow_label"},
        BadParams{"mtu_1000",
                  [](rdmamcast_join_params &p) {
                      p.flags |= RDMAMCAST_JOIN_MTU;
                      p.mtu = 1000;
                  },
                  -EINVAL, "/mtu"},
        BadParams{"mtu_selector_4",
                  [](rdmamcast_join_params &p) {
                      p.flags |= RDMAMCAST_JOIN_MTU;
                      p.mtu = 1024;
                      p.mtu_selector = 4;
                  },
                  -EINVAL, "/mtu_selector"},
        BadParams{"name_and_mgid", [](rdmamcast_join_params &p) { p.name = "job-42"; }, -EINVAL, "/name"},
        BadParams{"name_and_create",
                  [](rdmamcast_join_params &p) {
                      std::memset(p.mgid, 0, 16);
                      p.flags |= RDMAMCAST_JOIN_CREATE;
                      p.name = "job-42";
                  },
                  -EINVAL, "/name"},
        BadParams{"name_empty",
                  [](rdmamcast_join_params &p) {
                      std::memset(p.mgid, 0, 16);
                      p.name = "";
                  },
                  -EINVAL, "/name"},
        BadParams{"name_not_utf8",
                  [](rdmamcast_join_params &p) {
                      std::memset(p.mgid, 0, 16);
                      p.name = "job\xff";
                  },
                  -EINVAL, "/name"},
        BadParams{"rate_1",
                  [](rdmamcast_join_params &p) {
                      p.flags |= RDMAMCAST_JOIN_RATE;
                      p.rate = 1;
                  },
                  -EINVAL, "/rate"}),
    [](const auto &p) { return std::string(p.param.name); });

// A caller built against a newer header passes a bigger structure: fine while the fields we
// do not know are zero, E2BIG once one is set.
TEST(ClientJoin, LargerParamsFromANewerCaller) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    struct {
        rdmamcast_join_params p;
        std::uint64_t newer_field;
    } big{};
    big.p = params_for("ff15::1:2");
    big.p.size = sizeof big;
    EXPECT_EQ(rdmamcast_join(c.get(), &big.p, nullptr, nullptr), 0);
    big.newer_field = 1;
    EXPECT_EQ(rdmamcast_join(c.get(), &big.p, nullptr, nullptr), -E2BIG);
    EXPECT_EQ(d.requests_of<proto::Join>().size(), 1u);
}

TEST(ClientJoin, NullArgumentsAreEinval) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    EXPECT_EQ(rdmamcast_join(nullptr, nullptr, nullptr, nullptr), -EINVAL);
    EXPECT_EQ(rdmamcast_join(c.get(), nullptr, nullptr, nullptr), -EINVAL);
}

// A field out of bounds is refused in the daemon's wording (join_field_problem), naming it.
TEST(ClientJoin, AFieldOutOfBoundsHasTheDaemonsWording) {
    FakeDaemon d(join_ok());
    auto c = connect_to(d);
    rdmamcast_join_params p = params_for("ff15::1:2");
    p.flags |= RDMAMCAST_JOIN_SL;
    p.sl = 16;
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -EINVAL);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->message, "join: /sl: 16 out of range [0, 15]");
    EXPECT_STREQ(rdmamcast_last_error(c.get())->field, "/sl");
    EXPECT_TRUE(d.requests_of<proto::Join>().empty());
}

// ---- errors ----

struct ErrorCase {
    mcastd::Errc code;
    rdmamcast_errc c_code;
    int err;
    const char *name;
};
// Names the case in test listings instead of dumping its bytes.
void PrintTo(const ErrorCase &c, std::ostream *os) { *os << c.name; }


class ClientErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ClientErrors, MapToTheCEnumWithMessageFieldAndSaStatus) {
    const auto ec = GetParam();
    const bool sa = ec.code == mcastd::Errc::sa_error;
    FakeDaemon d([&](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.fail(env.id, ec.code, std::string("because ") + ec.name,
               sa ? std::optional<std::uint16_t>(0x0200) : std::nullopt,
               ec.code == mcastd::Errc::invalid_argument ? "/qkey" : "");
        return true;
    });
    auto c = connect_to(d);
    auto p = params_for("ff15::1:2");
    std::uint64_t membership = 99;
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, &membership), ec.err);
    EXPECT_EQ(membership, 99u) << "outputs are untouched on failure";
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, ec.c_code);
    EXPECT_EQ(e->err, ec.err);
    EXPECT_STREQ(e->code_name, ec.name);
    EXPECT_STREQ(rdmamcast_errc_name(ec.c_code), ec.name);
    EXPECT_STRNE(rdmamcast_strerror(ec.c_code), "unknown error code");
    EXPECT_EQ(std::string(e->message), std::string("because ") + ec.name);
    EXPECT_STREQ(e->field, ec.code == mcastd::Errc::invalid_argument ? "/qkey" : "");
    EXPECT_EQ(e->has_sa_status, sa);
    if (sa) {
        EXPECT_EQ(e->sa_status, 0x0200);
        EXPECT_STREQ(e->sa_status_name, "ERR_REQ_INVALID");
    } else {
        EXPECT_STREQ(e->sa_status_name, "");
    }
    EXPECT_STREQ(e->rule, "");
    EXPECT_STREQ(e->quota, "");
    EXPECT_EQ(e->limit, 0u);
    // The connection stays usable after an error reply, and the next call clears the error
    // whole; so does the one after it, which finds it clear already.
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(rdmamcast_leave(c.get(), 1), 0);
        const rdmamcast_error *after = rdmamcast_last_error(c.get());
        EXPECT_EQ(after->code, RDMAMCAST_E_NONE);
        EXPECT_STREQ(after->code_name, "");
        EXPECT_STREQ(after->message, "");
        EXPECT_STREQ(after->field, "");
        EXPECT_FALSE(after->has_sa_status);
        EXPECT_STREQ(after->sa_status_name, "");
    }
}

INSTANTIATE_TEST_SUITE_P(
    EveryCode, ClientErrors,
    ::testing::Values(
        ErrorCase{mcastd::Errc::invalid_argument, RDMAMCAST_E_INVALID_ARGUMENT, -EINVAL,
                  "invalid-argument"},
        ErrorCase{mcastd::Errc::no_such_device, RDMAMCAST_E_NO_SUCH_DEVICE, -ENODEV,
                  "no-such-device"},
        ErrorCase{mcastd::Errc::no_such_port, RDMAMCAST_E_NO_SUCH_PORT, -ENXIO, "no-such-port"},
        ErrorCase{mcastd::Errc::port_not_active, RDMAMCAST_E_PORT_NOT_ACTIVE, -ENETDOWN,
                  "port-not-active"},
        ErrorCase{mcastd::Errc::conflict, RDMAMCAST_E_CONFLICT, -EEXIST, "conflict"},
        ErrorCase{mcastd::Errc::sa_error, RDMAMCAST_E_SA_ERROR, -EREMOTEIO, "sa-error"},
        ErrorCase{mcastd::Errc::sa_timeout, RDMAMCAST_E_SA_TIMEOUT, -ETIMEDOUT, "sa-timeout"},
        ErrorCase{mcastd::Errc::denied, RDMAMCAST_E_DENIED, -EACCES, "denied"},
        ErrorCase{mcastd::Errc::too_large, RDMAMCAST_E_TOO_LARGE, -EMSGSIZE, "too-large"},
        ErrorCase{mcastd::Errc::unsupported_version, RDMAMCAST_E_UNSUPPORTED_VERSION,
                  -EPROTONOSUPPORT, "unsupported-version"},
        ErrorCase{mcastd::Errc::not_found, RDMAMCAST_E_NOT_FOUND, -ENOENT, "not-found"},
        ErrorCase{mcastd::Errc::cancelled, RDMAMCAST_E_CANCELLED, -ECANCELED, "cancelled"},
        ErrorCase{mcastd::Errc::limit, RDMAMCAST_E_LIMIT, -ENOSPC, "limit"},
        ErrorCase{mcastd::Errc::internal, RDMAMCAST_E_INTERNAL, -EIO, "internal"}),
    [](const auto &p) {
        std::string n = p.param.name;
        for (char &ch : n)
            if (ch == '-')
                ch = '_';
        return n;
    });

// The access policy's part of an error: the rule that denied a join, or the quota it reached.
TEST(ClientErrors, CarryTheRuleOrTheQuotaOfTheAccessPolicy) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        const auto *j = std::get_if<proto::Join>(&env.request);
        if (!j)
            return false;
        if (j->request.port == 1)
            s.fail(env.id, policy_failure(mcastd::Errc::denied,
                                          "rule hpc refuses uid 1001 on ff15::1:2", {"hpc", "", 0}));
        else
            s.fail(env.id, policy_failure(mcastd::Errc::limit, "quota reached",
                                          {"", "creates_per_uid", 64}));
        return true;
    });
    auto c = connect_to(d);
    auto p = params_for("ff15::1:2");
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -EACCES);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_DENIED);
    EXPECT_STREQ(e->message, "rule hpc refuses uid 1001 on ff15::1:2");
    EXPECT_STREQ(e->rule, "hpc");
    EXPECT_STREQ(e->quota, "");
    EXPECT_EQ(e->limit, 0u);
    p.port = 2;
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -ENOSPC);
    e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_LIMIT);
    EXPECT_STREQ(e->rule, "");
    EXPECT_STREQ(e->quota, "creates_per_uid");
    EXPECT_EQ(e->limit, 64u);
    // A later success clears them.
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), 0);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->quota, "");
    EXPECT_EQ(rdmamcast_last_error(c.get())->limit, 0u);
}

TEST(ClientErrorNames, LibraryCodesHaveNamesAndSentences) {
    EXPECT_STREQ(rdmamcast_errc_name(RDMAMCAST_E_NONE), "");
    EXPECT_STREQ(rdmamcast_strerror(RDMAMCAST_E_NONE), "success");
    EXPECT_STREQ(rdmamcast_errc_name(RDMAMCAST_E_DISCONNECTED), "disconnected");
    EXPECT_STREQ(rdmamcast_errc_name(RDMAMCAST_E_PROTOCOL), "protocol");
    EXPECT_STREQ(rdmamcast_errc_name(RDMAMCAST_E_SYSTEM), "system");
    EXPECT_STREQ(rdmamcast_errc_name(RDMAMCAST_E_UNKNOWN), "unknown");
    EXPECT_STREQ(rdmamcast_strerror(static_cast<rdmamcast_errc>(100)), "unknown error code");
}

// ---- leave, monitor ----

TEST(ClientLeave, SendsTheMembershipAndMapsNotFound) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        const auto *l = std::get_if<proto::Leave>(&env.request);
        if (!l || *l->membership == 7)
            return false;
        s.fail(env.id, mcastd::Errc::not_found, "no membership 8 on this connection");
        return true;
    });
    auto c = connect_to(d);
    EXPECT_EQ(rdmamcast_leave(c.get(), 7), 0);
    EXPECT_EQ(rdmamcast_leave(c.get(), 8), -ENOENT);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NOT_FOUND);
    auto leaves = d.requests_of<proto::Leave>();
    ASSERT_EQ(leaves.size(), 2u);
    EXPECT_EQ(leaves[0].membership, 7u);
    EXPECT_FALSE(leaves[0].join);
    EXPECT_EQ(leaves[1].membership, 8u);
}

TEST(ClientMonitor, SendsEnableAndDisable) {
    FakeDaemon d;
    auto c = connect_to(d);
    EXPECT_EQ(rdmamcast_monitor(c.get(), true), 0);
    EXPECT_EQ(rdmamcast_monitor(c.get(), false), 0);
    auto m = d.requests_of<proto::Monitor>();
    ASSERT_EQ(m.size(), 2u);
    EXPECT_TRUE(m[0].enable);
    EXPECT_FALSE(m[1].enable);
}

// ---- evict ----

TEST(ClientEvict, SendsTheUidOrTheMembershipAndReturnsHowManyWereReleased) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        const auto *e = std::get_if<proto::Evict>(&env.request);
        if (!e)
            return false;
        s.reply(env.id, proto::EvictResult{e->uid ? 3u : 1u});
        return true;
    });
    auto c = connect_to(d);
    std::uint64_t released = 99;
    EXPECT_EQ(rdmamcast_evict_uid(c.get(), 1001, &released), 0);
    EXPECT_EQ(released, 3u);
    EXPECT_EQ(rdmamcast_evict_membership(c.get(), 7, &released), 0);
    EXPECT_EQ(released, 1u);
    EXPECT_EQ(rdmamcast_evict_uid(c.get(), 0, nullptr), 0); // root's own: a uid like any other
    auto evicts = d.requests_of<proto::Evict>();
    ASSERT_EQ(evicts.size(), 3u);
    EXPECT_EQ(evicts[0].uid, 1001u);
    EXPECT_FALSE(evicts[0].membership);
    EXPECT_EQ(evicts[1].membership, 7u);
    EXPECT_FALSE(evicts[1].uid);
    EXPECT_EQ(evicts[2].uid, 0u);
}

TEST(ClientEvict, DisconnectSendsTheUidWithDisconnectAndReturnsBothCounts) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        const auto *e = std::get_if<proto::Evict>(&env.request);
        if (!e)
            return false;
        s.reply(env.id, proto::EvictResult{3u, e->disconnect ? 2u : 0u});
        return true;
    });
    auto c = connect_to(d);
    std::uint64_t released = 99, disconnected = 99;
    EXPECT_EQ(rdmamcast_disconnect_uid(c.get(), 1001, &released, &disconnected), 0);
    EXPECT_EQ(released, 3u);
    EXPECT_EQ(disconnected, 2u);
    EXPECT_EQ(rdmamcast_disconnect_uid(c.get(), 1001, nullptr, nullptr), 0);
    const auto evicts = d.requests_of<proto::Evict>();
    ASSERT_EQ(evicts.size(), 2u);
    EXPECT_TRUE(evicts[0].disconnect);
    EXPECT_EQ(evicts[0].uid, 1001u);
    EXPECT_EQ(rdmamcast_disconnect_uid(c.get(), UINT32_MAX, &released, &disconnected), -EINVAL);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->field, "/uid");
    EXPECT_EQ(rdmamcast_disconnect_uid(nullptr, 1, nullptr, nullptr), -EINVAL);
}

TEST(ClientEvict, UidMinusOneIsRefusedBeforeAnythingIsSent) {
    FakeDaemon d;
    auto c = connect_to(d);
    std::uint64_t released = 99;
    EXPECT_EQ(rdmamcast_evict_uid(c.get(), UINT32_MAX, &released), -EINVAL);
    EXPECT_EQ(released, 99u);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_INVALID_ARGUMENT);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->field, "/uid");
    EXPECT_TRUE(d.requests_of<proto::Evict>().empty());
    EXPECT_EQ(rdmamcast_evict_uid(nullptr, 1, nullptr), -EINVAL);
    EXPECT_EQ(rdmamcast_evict_membership(nullptr, 1, nullptr), -EINVAL);
}

TEST(ClientEvict, DeniedNotFoundAndAnOlderDaemonMapToTheirCodes) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        const auto *e = std::get_if<proto::Evict>(&env.request);
        if (!e)
            return false;
        if (e->uid)
            s.fail(env.id, mcastd::Errc::denied, "evict is for root only");
        else if (*e->membership == 8)
            s.fail(env.id, mcastd::Errc::not_found, "no membership 8");
        else // what a daemon older than evict answers
            s.fail(env.id, mcastd::Errc::invalid_argument,
                   "/op: \"evict\" is not an op (hello, join, leave, list, status or monitor)",
                   std::nullopt, "/op");
        return true;
    });
    auto c = connect_to(d);
    std::uint64_t released = 99;
    EXPECT_EQ(rdmamcast_evict_uid(c.get(), 1001, &released), -EACCES);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_DENIED);
    EXPECT_EQ(rdmamcast_evict_membership(c.get(), 8, &released), -ENOENT);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NOT_FOUND);
    EXPECT_EQ(rdmamcast_evict_membership(c.get(), 9, &released), -EINVAL);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->field, "/op");
    EXPECT_EQ(released, 99u) << "outputs are untouched on failure";
}

// An evicted membership is lost for good (code denied); the holder's leave of it still works.
TEST(ClientEvict, TheHolderSeesALostEventAndMayLeave) {
    FakeDaemon d(joins_from(7));
    auto c = connect_to(d);
    auto p = params_for("ff15::1:2");
    std::uint64_t m = 0;
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, &m), 0);
    d.broadcast(proto::LostEvent{
        m, proto::Failure{mcastd::Error{mcastd::Errc::denied,
                                        "an administrator evicted membership 7; it will not be "
                                        "restored",
                                        std::nullopt},
                          "", {}}});
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 5000));
    rdmamcast_event ev;
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_LOST);
    EXPECT_EQ(ev.membership, m);
    EXPECT_EQ(ev.lost.code, RDMAMCAST_E_DENIED);
    EXPECT_NE(std::string(ev.lost.message).find("evicted"), std::string::npos);
    EXPECT_EQ(rdmamcast_leave(c.get(), m), 0);
}

// ---- list and status ----

proto::ListResult sample_list() {
    proto::ListResult l;
    proto::PortGroups p1{"mlx5_0", 1, gid("fe80::10:3"), {}};
    proto::GroupInfo g;
    g.mgid = gid("ff15::1:2");
    g.mlid = 0xc001;
    g.qkey = 0x12345678;
    g.busy = true;
    g.held = mcastd::join::full | mcastd::join::send_only_full;
    g.foreign = mcastd::join::non_member;
    g.counts = {2, 0, 0, 1};
    g.members.push_back({7, mcastd::join::full, "active", 4242, 1000, "my-app", "hpc", true, ""});
    g.members.push_back({9, mcastd::join::send_only_full, "pending", 4343, 0, "other", "root",
                         false, "no rule admits uid 0 any more", "job-42"});
    p1.groups.push_back(g);
    l.ports.push_back(p1);
    l.ports.push_back(proto::PortGroups{"mlx5_1", 2, gid("fe80::10:4"), {}});
    return l;
}

TEST(ClientList, DecodesTheTree) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::List>(env.request))
            return false;
        s.reply(env.id, sample_list());
        return true;
    });
    auto c = connect_to(d);
    rdmamcast_group_list *l = nullptr;
    ASSERT_EQ(rdmamcast_list(c.get(), &l), 0) << rdmamcast_last_error(c.get())->message;
    ASSERT_EQ(l->num_ports, 2u);
    const auto &p = *l->ports[0];
    EXPECT_STREQ(p.device, "mlx5_0");
    EXPECT_EQ(p.port, 1);
    EXPECT_EQ(0, std::memcmp(p.port_gid, gid("fe80::10:3").data(), 16));
    ASSERT_EQ(p.num_groups, 1u);
    const auto &g = *p.groups[0];
    EXPECT_EQ(0, std::memcmp(g.mgid, gid("ff15::1:2").data(), 16));
    EXPECT_EQ(g.mlid, 0xc001);
    EXPECT_EQ(g.qkey, 0x12345678u);
    EXPECT_TRUE(g.busy);
    EXPECT_EQ(g.held, 0x9);
    EXPECT_EQ(g.foreign, 0x2);
    EXPECT_EQ(g.counts[0], 2u);
    EXPECT_EQ(g.counts[3], 1u);
    ASSERT_EQ(g.num_members, 2u);
    EXPECT_EQ(g.members[0]->membership, 7u);
    EXPECT_EQ(g.members[0]->pid, 4242);
    EXPECT_EQ(g.members[0]->uid, 1000u);
    EXPECT_EQ(g.members[0]->join_state, RDMAMCAST_JOIN_STATE_FULL);
    EXPECT_STREQ(g.members[0]->state, "active");
    EXPECT_STREQ(g.members[0]->comm, "my-app");
    EXPECT_STREQ(g.members[0]->rule, "hpc");
    EXPECT_TRUE(g.members[0]->created);
    EXPECT_EQ(g.members[0]->flagged, nullptr);
    EXPECT_STREQ(g.members[1]->rule, "root");
    EXPECT_FALSE(g.members[1]->created);
    EXPECT_STREQ(g.members[1]->flagged, "no rule admits uid 0 any more");
    EXPECT_EQ(g.members[0]->name, nullptr) << "not a named membership";
    EXPECT_STREQ(g.members[1]->name, "job-42");
    EXPECT_STREQ(g.members[1]->state, "pending");
    EXPECT_EQ(g.members[1]->join_state, RDMAMCAST_JOIN_STATE_SENDONLY_FULL);
    EXPECT_STREQ(l->ports[1]->device, "mlx5_1");
    EXPECT_EQ(l->ports[1]->num_groups, 0u);
    rdmamcast_list_free(l);
    rdmamcast_list_free(nullptr);
}

// A daemon older than the access policy sends no rule, created or flagged.
TEST(ClientList, AnOlderDaemonsMembersHaveAnEmptyRule) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::List>(env.request))
            return false;
        s.raw(R"({"id":)" + std::to_string(env.id) + R"(,"ok":true,"result":{"ports":[
            {"device":"mlx5_0","port":1,"port_gid":"fe80::1","groups":[{"mgid":"ff15::1",
             "mlid":1,"qkey":1,"busy":false,"held":["full"],"foreign":[],
             "counts":{"full":1,"nonmember":0,"sendonly-nonmember":0,"sendonly-full":0},
             "members":[{"membership":7,"join_state":"full","state":"active","pid":1,"uid":2,
                         "comm":"a"}]}]}]}})");
        return true;
    });
    auto c = connect_to(d);
    rdmamcast_group_list *l = nullptr;
    ASSERT_EQ(rdmamcast_list(c.get(), &l), 0) << rdmamcast_last_error(c.get())->message;
    const auto &m = *l->ports[0]->groups[0]->members[0];
    EXPECT_EQ(m.membership, 7u);
    EXPECT_STREQ(m.rule, "");
    EXPECT_FALSE(m.created);
    EXPECT_EQ(m.flagged, nullptr);
    rdmamcast_list_free(l);
}

// A list longer than the 64 KiB a request may be: replies are read whole, whatever their size.
TEST(ClientList, RepliesLargerThanRequestLimitAreReadWhole) {
    proto::ListResult big;
    proto::PortGroups p{"mlx5_0", 1, gid("fe80::10:3"), {}};
    for (unsigned i = 0; i < 600; ++i) {
        proto::GroupInfo g;
        g.mgid = gid("ff15::1:2");
        g.mgid[15] = static_cast<std::uint8_t>(i);
        g.mgid[14] = static_cast<std::uint8_t>(i >> 8);
        g.mlid = static_cast<std::uint16_t>(0xc000 + i);
        g.members.push_back({i, mcastd::join::full, "active", 1, 1, "a-rather-long-name"});
        p.groups.push_back(g);
    }
    big.ports.push_back(p);
    const auto encoded = proto::encode_reply(2, big);
    ASSERT_GT(encoded.size(), proto::kMaxMessageBytes);
    FakeDaemon d([&](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::List>(env.request))
            return false;
        s.reply(env.id, big);
        return true;
    });
    auto c = connect_to(d);
    rdmamcast_group_list *l = nullptr;
    ASSERT_EQ(rdmamcast_list(c.get(), &l), 0) << rdmamcast_last_error(c.get())->message;
    ASSERT_EQ(l->ports[0]->num_groups, 600u);
    EXPECT_EQ(l->ports[0]->groups[599]->mlid, 0xc000 + 599);
    rdmamcast_list_free(l);
}

// A daemon that pages its list: the library asks for every page, in order, and returns one
// tree, the group a page boundary cut whole again.
TEST(ClientList, PutsEveryPageTogether) {
    FakeDaemon d(list_pages(sample_pages()));
    auto c = connect_to(d);
    rdmamcast_group_list *l = nullptr;
    ASSERT_EQ(rdmamcast_list(c.get(), &l), 0) << rdmamcast_last_error(c.get())->message;
    ASSERT_EQ(l->num_ports, 2u);
    ASSERT_EQ(l->ports[0]->num_groups, 2u);
    const auto &cut = *l->ports[0]->groups[0];
    ASSERT_EQ(cut.num_members, 3u);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(cut.members[i]->membership, i + 1);
    EXPECT_EQ(l->ports[0]->groups[1]->members[0]->membership, 4u);
    ASSERT_EQ(l->ports[1]->num_groups, 1u);
    EXPECT_STREQ(l->ports[1]->groups[0]->members[0]->comm, "last-page");
    rdmamcast_list_free(l);
    const auto asked = d.requests_of<proto::List>();
    ASSERT_EQ(asked.size(), 3u);
    EXPECT_FALSE(asked[0].after);
    EXPECT_EQ(asked[1].after, "p1");
    EXPECT_EQ(asked[2].after, "p2");
    for (const auto &a : asked)
        EXPECT_FALSE(a.own);
}

TEST(ClientList, OwnAsksForOwnOnEveryPage) {
    FakeDaemon d(list_pages(sample_pages()));
    auto c = connect_to(d);
    rdmamcast_group_list *l = nullptr;
    ASSERT_EQ(rdmamcast_list_own(c.get(), &l), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_EQ(l->ports[0]->groups[0]->num_members, 3u);
    rdmamcast_list_free(l);
    const auto asked = d.requests_of<proto::List>();
    ASSERT_EQ(asked.size(), 3u);
    for (const auto &a : asked)
        EXPECT_TRUE(a.own);
    EXPECT_EQ(rdmamcast_list_own(nullptr, &l), -EINVAL);
}

// A daemon whose page names itself as the next one would keep the library asking forever.
TEST(ClientList, ACursorThatGetsNowhereIsAProtocolError) {
    auto pages = sample_pages();
    pages[1].next = "p1";
    FakeDaemon d(list_pages(pages));
    auto c = connect_to(d);
    rdmamcast_group_list *l = nullptr;
    EXPECT_EQ(rdmamcast_list(c.get(), &l), -EPROTO);
    EXPECT_EQ(l, nullptr);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_PROTOCOL);
    EXPECT_NE(std::string(rdmamcast_last_error(c.get())->message).find("\"p1\""), std::string::npos);
    EXPECT_EQ(d.requests_of<proto::List>().size(), 2u);
}

TEST(ClientStatus, DecodesPortsAndCounters) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Status>(env.request))
            return false;
        proto::StatusResult st;
        st.daemon = "rdma-mcastd 0.1.0";
        st.uptime_s = 12.5;
        st.clients = 3;
        st.ports.push_back({"mlx5_0", 1, "ACTIVE", 3, 1, 0, gid("fe80::10:3"), "InfiniBand",
                            100, 4, 4096, 0x0002c90300000001, 77, false,
                            proto::RejoinStatus{"SM changed", 30.5, 0.25, 4}});
        // Port 2: nothing known about its SM yet, mid re-join; port 3: never re-joined.
        st.ports.push_back({"mlx5_0", 2, "ACTIVE", 4, 1, 0, gid("fe80::10:4"), "InfiniBand",
                            100, 0, 0, std::nullopt, std::nullopt, true,
                            proto::RejoinStatus{"port active again", 1, std::nullopt, 2}});
        st.ports.push_back({"mlx5_1", 1, "DOWN", 0, 0, 0, gid("fe80::10:5"), "InfiniBand",
                            0, 0});
        st.counters = {10, 1, 2, 3, 12, 8, 1, 5};
        st.counters.sa_responses = 9;
        st.counters.sa_late = 4;
        st.counters.sa_amplification = 1.02;
        st.counters.sa_sets = 6;
        st.counters.sa_deletes = 2;
        st.counters.sa_gets = 11;
        st.ports[0].max_groups = 1024;
        // Port 1 has its SA window; port 2's has had no answer yet; port 3 has none.
        st.ports[0].sa = proto::SaCongestion{3.5, true, 0.41, 300};
        st.ports[1].sa = proto::SaCongestion{1, true, std::nullopt, std::nullopt};
        st.users.push_back({0, "root", 2, 0, 0, 0, 0});
        st.users.push_back({1001, "bob", 3, 4096, 1, 64, 1, 2, 256, 1, 4, 4096, 8388608, 3, 256, -1.5, 50});
        st.ports[0].memberships = {6, 1, 0, 2};
        st.ports[0].rejoins = 3;
        st.counters.restored = 14;
        st.counters.lost = 7;
        st.refused = {{"access.rules", 2}, {"limits.hello_timeout_ms", 0}};
        s.reply(env.id, st);
        return true;
    });
    auto c = connect_to(d);
    rdmamcast_daemon_status *s = nullptr;
    ASSERT_EQ(rdmamcast_status(c.get(), &s), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_STREQ(s->daemon, "rdma-mcastd 0.1.0");
    const std::uint64_t memberships[4] = {6, 1, 0, 2};
    EXPECT_TRUE(std::equal(std::begin(memberships), std::end(memberships), s->ports[0]->memberships));
    EXPECT_EQ(s->ports[0]->rejoins, 3u);
    EXPECT_EQ(s->ports[1]->rejoins, 0u);
    EXPECT_EQ(s->counters->restored, 14u);
    EXPECT_EQ(s->counters->lost, 7u);
    ASSERT_EQ(s->num_refused, 2u);
    EXPECT_STREQ(s->refused[0]->reason, "access.rules");
    EXPECT_EQ(s->refused[0]->count, 2u);
    EXPECT_STREQ(s->refused[1]->reason, "limits.hello_timeout_ms");
    EXPECT_EQ(s->refused[1]->count, 0u);
    const rdmamcast_user_usage &shares = *s->users[1];
    EXPECT_EQ(shares.clients, 2u);
    EXPECT_EQ(shares.clients_quota, 256u);
    EXPECT_EQ(shares.monitors, 1u);
    EXPECT_EQ(shares.monitors_quota, 4u);
    EXPECT_EQ(shares.queued_bytes, 4096u);
    EXPECT_EQ(shares.queued_bytes_quota, 8388608u);
    EXPECT_EQ(shares.groups_per_port, 3u);
    EXPECT_EQ(shares.groups_per_port_quota, 256u);
    EXPECT_DOUBLE_EQ(shares.sa_tokens, -1.5);
    EXPECT_EQ(shares.sa_mads_per_second, 50u);
    EXPECT_EQ(s->protocol, proto::kVersion);
    EXPECT_DOUBLE_EQ(s->uptime_s, 12.5);
    EXPECT_EQ(s->clients, 3u);
    ASSERT_EQ(s->num_ports, 3u);
    const auto &p = *s->ports[0];
    EXPECT_STREQ(p.device, "mlx5_0");
    EXPECT_EQ(p.port, 1);
    EXPECT_STREQ(p.state, "ACTIVE");
    EXPECT_EQ(p.lid, 3);
    EXPECT_EQ(p.sm_lid, 1);
    EXPECT_EQ(p.sm_sl, 0);
    EXPECT_STREQ(p.link_layer, "InfiniBand");
    EXPECT_DOUBLE_EQ(p.rate_gbps, 100);
    EXPECT_EQ(p.groups, 4u);
    EXPECT_EQ(p.mtu, 4096u);
    EXPECT_TRUE(p.sm_known);
    EXPECT_EQ(p.sm_guid, 0x0002c90300000001u);
    EXPECT_EQ(p.sm_act_count, 77u);
    EXPECT_FALSE(p.rejoining);
    ASSERT_NE(p.last_rejoin, nullptr);
    EXPECT_STREQ(p.last_rejoin->reason, "SM changed");
    EXPECT_DOUBLE_EQ(p.last_rejoin->started_ago_s, 30.5);
    EXPECT_TRUE(p.last_rejoin->finished);
    EXPECT_DOUBLE_EQ(p.last_rejoin->duration_s, 0.25);
    EXPECT_EQ(p.last_rejoin->groups, 4u);
    const auto &p2 = *s->ports[1];
    EXPECT_FALSE(p2.sm_known);
    EXPECT_EQ(p2.sm_guid, 0u);
    EXPECT_TRUE(p2.rejoining);
    ASSERT_NE(p2.last_rejoin, nullptr);
    EXPECT_FALSE(p2.last_rejoin->finished);
    EXPECT_EQ(p2.last_rejoin->groups, 2u);
    EXPECT_EQ(s->ports[2]->last_rejoin, nullptr);
    EXPECT_EQ(s->counters->sa_mads_sent, 10u);
    EXPECT_EQ(s->counters->sa_retransmits, 1u);
    EXPECT_EQ(s->counters->sa_timeouts, 2u);
    EXPECT_EQ(s->counters->sa_bounces, 3u);
    EXPECT_EQ(s->counters->joins, 12u);
    EXPECT_EQ(s->counters->joins_local, 8u);
    EXPECT_EQ(s->counters->joins_failed, 1u);
    EXPECT_EQ(s->counters->leaves, 5u);
    EXPECT_EQ(s->counters->sa_responses, 9u);
    EXPECT_EQ(s->counters->sa_late, 4u);
    EXPECT_DOUBLE_EQ(s->counters->sa_amplification, 1.02);
    EXPECT_EQ(s->counters->sa_sets, 6u);
    EXPECT_EQ(s->counters->sa_deletes, 2u);
    EXPECT_EQ(s->counters->sa_gets, 11u);
    ASSERT_NE(p.sa, nullptr);
    EXPECT_DOUBLE_EQ(p.sa->window, 3.5);
    EXPECT_TRUE(p.sa->slow_start);
    EXPECT_TRUE(p.sa->has_srtt);
    EXPECT_DOUBLE_EQ(p.sa->srtt_ms, 0.41);
    EXPECT_TRUE(p.sa->has_timeout);
    EXPECT_DOUBLE_EQ(p.sa->timeout_ms, 300);
    ASSERT_NE(p2.sa, nullptr);
    EXPECT_DOUBLE_EQ(p2.sa->window, 1);
    EXPECT_FALSE(p2.sa->has_srtt);
    EXPECT_EQ(p2.sa->srtt_ms, 0);
    EXPECT_FALSE(p2.sa->has_timeout);
    EXPECT_EQ(p2.sa->timeout_ms, 0);
    EXPECT_EQ(s->ports[2]->sa, nullptr);
    EXPECT_EQ(p.max_groups, 1024u);
    EXPECT_EQ(p2.max_groups, 0u);
    ASSERT_EQ(s->num_users, 2u);
    EXPECT_EQ(s->users[0]->uid, 0u);
    EXPECT_STREQ(s->users[0]->user, "root");
    EXPECT_EQ(s->users[0]->memberships, 2u);
    EXPECT_EQ(s->users[0]->memberships_quota, 0u);
    const rdmamcast_user_usage &bob = *s->users[1];
    EXPECT_EQ(bob.uid, 1001u);
    EXPECT_STREQ(bob.user, "bob");
    EXPECT_EQ(bob.memberships, 3u);
    EXPECT_EQ(bob.memberships_quota, 4096u);
    EXPECT_EQ(bob.creates, 1u);
    EXPECT_EQ(bob.creates_quota, 64u);
    EXPECT_EQ(bob.flagged, 1u);
    rdmamcast_status_free(s);
}

TEST(ClientStatus, AnOlderDaemonHasNoUsersNorMaxGroups) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Status>(env.request))
            return false;
        s.raw(R"({"id":)" + std::to_string(env.id) + R"(,"ok":true,"result":{
            "daemon":"rdma-mcastd 0.0.9","protocol":2,"uptime_s":1,"clients":0,"ports":[
            {"device":"mlx5_0","port":1,"state":"ACTIVE","lid":3,"sm_lid":1,"sm_sl":0,
             "port_gid":"fe80::1","link_layer":"InfiniBand","rate_gbps":100,"groups":0,
             "mtu":4096,"sm_guid":null,"sm_act_count":null,"rejoining":false,
             "last_rejoin":null}],
            "counters":{"sa_mads_sent":0,"sa_retransmits":0,"sa_timeouts":0,"sa_bounces":0,
                        "joins":0,"joins_local":0,"joins_failed":0,"leaves":0}}})");
        return true;
    });
    auto c = connect_to(d);
    rdmamcast_daemon_status *s = nullptr;
    ASSERT_EQ(rdmamcast_status(c.get(), &s), 0) << rdmamcast_last_error(c.get())->message;
    ASSERT_EQ(s->num_ports, 1u);
    EXPECT_EQ(s->ports[0]->max_groups, 0u);
    EXPECT_EQ(s->ports[0]->sa, nullptr);
    EXPECT_EQ(s->counters->sa_responses, 0u);
    EXPECT_EQ(s->counters->sa_late, 0u);
    EXPECT_EQ(s->counters->sa_amplification, 0);
    EXPECT_EQ(s->counters->sa_sets, 0u);
    EXPECT_EQ(s->counters->sa_gets, 0u);
    EXPECT_EQ(s->num_users, 0u);
    // Older than the metrics' figures too: 0 and none.
    EXPECT_EQ(s->ports[0]->rejoins, 0u);
    EXPECT_EQ(s->ports[0]->memberships[0], 0u);
    EXPECT_EQ(s->counters->restored, 0u);
    EXPECT_EQ(s->counters->lost, 0u);
    EXPECT_EQ(s->num_refused, 0u);
    rdmamcast_status_free(s);
}

TEST(ClientStatus, ASaWindowOfTheWrongTypeIsAProtocolErrorNamingIt) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Status>(env.request))
            return false;
        proto::StatusResult st;
        st.ports.push_back({"mlx5_0", 1, "ACTIVE", 3, 1, 0, gid("fe80::10:3"), "InfiniBand",
                            100, 0, 4096});
        st.ports[0].sa = proto::SaCongestion{2.5, false, 0.5, 300};
        std::string text = proto::encode_reply(env.id, st);
        const std::string window = R"("window":2.5)";
        text.replace(text.find(window), window.size(), R"("window":"2.5")");
        s.raw(text);
        return true;
    });
    auto c = connect_to(d);
    rdmamcast_daemon_status *s = nullptr;
    EXPECT_EQ(rdmamcast_status(c.get(), &s), -EPROTO);
    EXPECT_EQ(s, nullptr);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_PROTOCOL);
    EXPECT_NE(std::string(e->message).find("/ports/0/sa/window: expected a number"),
              std::string::npos)
        << e->message;
}

// ---- helpers without a handle ----

TEST(ClientHelpers, JoinStateNamesAndRates) {
    EXPECT_STREQ(rdmamcast_join_state_name(1), "full");
    EXPECT_STREQ(rdmamcast_join_state_name(8), "sendonly-full");
    EXPECT_STREQ(rdmamcast_join_state_name(9), "full+sendonly-full");
    EXPECT_STREQ(rdmamcast_join_state_name(0), "none");
    EXPECT_STREQ(rdmamcast_join_state_name(16), "invalid");
    std::uint8_t bits = 0;
    EXPECT_EQ(rdmamcast_join_state_parse("sendonly-nonmember", &bits), 0);
    EXPECT_EQ(bits, RDMAMCAST_JOIN_STATE_SENDONLY_NONMEMBER);
    EXPECT_EQ(rdmamcast_join_state_parse("full+nonmember", &bits), -EINVAL);
    EXPECT_DOUBLE_EQ(rdmamcast_rate_gbps(2), 2.5);
    EXPECT_DOUBLE_EQ(rdmamcast_rate_gbps(16), 100);
    EXPECT_DOUBLE_EQ(rdmamcast_rate_gbps(99), 0);
    EXPECT_STRNE(rdmamcast_version(), "");
}

} // namespace

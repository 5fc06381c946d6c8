// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Runs c_api_smoke.c, a C11 caller of the C API, against the fake daemon.
#include "c_api_smoke.h"
#include "client_testing.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;

TEST(ClientC, SmokeFromC) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.reply(env.id, proto::JoinResult{7, sample_record()});
        return true;
    });
    char err[256];
    EXPECT_EQ(c_api_smoke(d.path().c_str(), err, sizeof err), 0) << err;
    auto joins = d.requests_of<proto::Join>();
    ASSERT_EQ(joins.size(), 1u);
    EXPECT_TRUE(mcastd::is_zero(joins[0].request.mgid));
    EXPECT_EQ(joins[0].request.params.qkey, 0x1234u);
}

} // namespace

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// join_field_problem(): every field out of bounds is named, in the one wording every front
// (protocol decoder, D-Bus, static groups, the library, the engine) gives.
#include <gtest/gtest.h>

#include "common/join_bounds.hpp"
#include "common/record.hpp"

namespace mcastd {
namespace {

JoinRequest full() {
    JoinRequest r;
    r.join_state = join::full;
    return r;
}

std::string problem(const JoinRequest &r) {
    auto no = join_field_problem(r);
    return no ? no->describe() : "";
}

TEST(JoinBounds, AJoinInBoundsHasNoProblem) {
    JoinRequest r = full();
    r.scope = 15;
    r.params.sl = 15;
    r.params.flow_label = 0xfffff;
    r.params.mtu = Selected{Selector::exactly, 5};
    r.params.rate = Selected{Selector::exactly, 3};
    EXPECT_FALSE(join_field_problem(r));
    r.join_state = join::all;
    EXPECT_FALSE(join_field_problem(r));
}

TEST(JoinBounds, EachFieldOutOfBoundsIsNamedInTheOneWording) {
    JoinRequest r = full();
    r.join_state = 0;
    EXPECT_EQ(problem(r), "/join_state: 0x0 is not a non-empty set of the bits 0x1-0x8");
    r.join_state = 0x10;
    EXPECT_EQ(problem(r), "/join_state: 0x10 is not a non-empty set of the bits 0x1-0x8");
    r = full();
    r.scope = 0;
    EXPECT_EQ(problem(r), "/scope: 0 out of range [1, 15]");
    r = full();
    r.params.sl = 16;
    EXPECT_EQ(problem(r), "/sl: 16 out of range [0, 15]");
    r = full();
    r.params.flow_label = 0x100000;
    EXPECT_EQ(problem(r), "/flow_label: 1048576 out of range [0, 1048575]");
    r = full();
    r.params.mtu = Selected{Selector::exactly, 6};
    EXPECT_EQ(problem(r), "/mtu: enum 6 out of range [1, 5] (256 to 4096 bytes)");
    r = full();
    r.params.rate = Selected{Selector::exactly, 1};
    EXPECT_EQ(problem(r), "/rate: 1 is not an IBA rate");
    auto no = join_field_problem(r);
    ASSERT_TRUE(no);
    EXPECT_EQ(no->field, "rate");
}

} // namespace
} // namespace mcastd

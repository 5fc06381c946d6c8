// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The GID-table entries (logging/gid_log.hpp): one per changed entry of a RoCE port's table,
// with its MESSAGE_ID and the source's netdev, GID type and sgid_index as fields; a removal or a
// netdev gone is a warning.
#include <gtest/gtest.h>

#include "log_recorder.hpp"
#include "logging/gid_log.hpp"
#include "logging/message_ids.hpp"

namespace mcastd::logging {
namespace {

using test::field;

TEST(GidLog, OneEntryPerChangedSourceWithItsNetdevTypeAndIndex) {
    const port::GidEntry v4{1, *parse_gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"};
    port::GidEntry moved = v4;
    moved.index = 5;
    port::GidEntry gone{0, *parse_gid("fe80::4dff:fe00:1"), GidType::roce_v1, "veth1"};
    gone.netdev_gone = true;
    std::vector<test::Entry> entries;
    {
        test::LogCapture capture;
        log_gid_change("rxe0", 1, port::GidTableChange{{v4}, {}, {moved}, {gone}});
        entries = capture.entries();
    }
    ASSERT_EQ(entries.size(), 3u);
    const test::Entry &removed = entries[0];
    EXPECT_EQ(removed.level, spdlog::level::warn);
    EXPECT_EQ(removed.text, "rxe0/1: GID table: removed 1 ::ffff:10.77.0.1 roce_v2 veth1");
    EXPECT_EQ(field(removed, "MESSAGE_ID"), kRoceSource.id);
    EXPECT_EQ(field(removed, "RDMA_DEVICE"), "rxe0");
    EXPECT_EQ(field(removed, "RDMA_PORT"), "1");
    EXPECT_EQ(field(removed, "ROCE_CHANGE"), "removed");
    EXPECT_EQ(field(removed, "ROCE_GID"), "::ffff:10.77.0.1");
    EXPECT_EQ(field(removed, "ROCE_GID_TYPE"), "roce_v2");
    EXPECT_EQ(field(removed, "ROCE_SGID_INDEX"), "1");
    EXPECT_EQ(field(removed, "ROCE_NETDEV"), "veth1");
    EXPECT_EQ(entries[1].level, spdlog::level::info);
    EXPECT_EQ(field(entries[1], "ROCE_CHANGE"), "moved");
    EXPECT_EQ(field(entries[1], "ROCE_SGID_INDEX"), "5");
    EXPECT_EQ(entries[2].level, spdlog::level::warn) << "its netdev is gone";
    EXPECT_EQ(field(entries[2], "ROCE_CHANGE"), "netdev");
    EXPECT_EQ(field(entries[2], "ROCE_GID_TYPE"), "roce_v1");
}

} // namespace
} // namespace mcastd::logging

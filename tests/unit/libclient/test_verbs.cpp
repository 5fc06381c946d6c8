// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The verbs helpers with libibverbs replaced by a recording fake (the VerbsOps seam), so that
// attach/detach sequences are checked without hardware: InfiniBand records, and RoCE ones
// (MLID 0, the source GID index from the record).
#include <cerrno>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>
#include <rdmamcast/verbs.h>
#include <rdmamcast/verbs.hpp>

#include "verbs_ops.hpp"

namespace {

struct Call {
    bool attach;
    ibv_qp *qp;
    std::uint8_t gid[16];
    std::uint16_t lid;
};

// The fake's state: what was called, and what the next calls return.
std::vector<Call> g_calls;
std::vector<int> g_results; // consumed front to back; empty = success

int record(bool attach, ibv_qp *qp, const ibv_gid *gid, std::uint16_t lid) {
    Call c{attach, qp, {}, lid};
    std::memcpy(c.gid, gid->raw, 16);
    g_calls.push_back(c);
    if (g_results.empty())
        return 0;
    int rc = g_results.front();
    g_results.erase(g_results.begin());
    return rc;
}

class Verbs : public ::testing::Test {
protected:
    void SetUp() override {
        saved_ = rdmamcast::detail::verbs_ops();
        rdmamcast::detail::verbs_ops() = {
            [](ibv_qp *qp, const ibv_gid *gid, std::uint16_t lid) {
                return record(true, qp, gid, lid);
            },
            [](ibv_qp *qp, const ibv_gid *gid, std::uint16_t lid) {
                return record(false, qp, gid, lid);
            }};
        g_calls.clear();
        g_results.clear();
    }
    void TearDown() override { rdmamcast::detail::verbs_ops() = saved_; }

    static rdmamcast_record record_with(std::uint16_t mlid, std::uint8_t last_mgid_byte = 1) {
        rdmamcast_record r{};
        r.mgid[0] = 0xff;
        r.mgid[1] = 0x15;
        r.mgid[15] = last_mgid_byte;
        r.mlid = mlid;
        r.qkey = 0x1234;
        r.sl = 4;
        r.rate = 16;
        r.flow_label = 0xabcde;
        r.hop_limit = 9;
        r.traffic_class = 0x40;
        return r;
    }
    static rdmamcast_event restored(std::uint64_t membership, const rdmamcast_record &r,
                                    std::uint32_t changed = RDMAMCAST_FIELD_MLID) {
        rdmamcast_event ev{};
        ev.type = RDMAMCAST_EVENT_RESTORED;
        ev.membership = membership;
        ev.restored.record = r;
        ev.restored.changed = changed;
        return ev;
    }

    // Distinct fake QP addresses; the helpers never dereference them.
    ibv_qp qp_storage_[2]{};
    ibv_qp *qp1_ = &qp_storage_[0];
    ibv_qp *qp2_ = &qp_storage_[1];

private:
    rdmamcast::detail::VerbsOps saved_{};
};

TEST_F(Verbs, FillAhAttrCopiesTheRecord) {
    auto r = record_with(0xc001);
    ibv_ah_attr ah;
    std::memset(&ah, 0x5a, sizeof ah);
    ASSERT_EQ(rdmamcast_fill_ah_attr(&r, 2, 3, &ah), 0);
    EXPECT_EQ(ah.is_global, 1);
    EXPECT_EQ(0, std::memcmp(ah.grh.dgid.raw, r.mgid, 16));
    EXPECT_EQ(ah.grh.flow_label, 0xabcdeu);
    EXPECT_EQ(ah.grh.hop_limit, 9);
    EXPECT_EQ(ah.grh.traffic_class, 0x40);
    EXPECT_EQ(ah.grh.sgid_index, 3);
    EXPECT_EQ(ah.dlid, 0xc001);
    EXPECT_EQ(ah.sl, 4);
    EXPECT_EQ(ah.static_rate, IBV_RATE_100_GBPS);
    EXPECT_EQ(ah.port_num, 2);
    EXPECT_EQ(ah.src_path_bits, 0);
    EXPECT_EQ(rdmamcast_fill_ah_attr(nullptr, 1, 0, &ah), -EINVAL);
}

// A RoCE record as the daemon hands it out: 239.1.2.3 on RoCE v2, MLID 0, source GID index 5.
rdmamcast_record roce_record(std::uint8_t sgid_index = 5, std::uint8_t last_octet = 3) {
    rdmamcast_record r{};
    const std::uint8_t mgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, last_octet};
    std::memcpy(r.mgid, mgid, 16);
    std::memcpy(r.ip, mgid, 16);
    const std::uint8_t dmac[6] = {0x01, 0x00, 0x5e, 1, 2, last_octet};
    std::memcpy(r.dmac, dmac, 6);
    r.mlid = 0;
    r.qkey = 0x01234567;
    r.pkey = 0xffff;
    r.sl = 3;
    r.rate = 0;
    r.flow_label = 0x12345;
    r.hop_limit = 64;
    r.traffic_class = 0x68;
    r.link_layer = RDMAMCAST_LINK_LAYER_ETHERNET;
    r.gid_type = RDMAMCAST_GID_TYPE_ROCE_V2;
    r.sgid_index = sgid_index;
    return r;
}

TEST_F(Verbs, FillAhAttrOnRoceTakesTheRecordsSourceGidAndNoLid) {
    auto r = roce_record();
    ibv_ah_attr ah;
    std::memset(&ah, 0x5a, sizeof ah);
    // The caller's sgid_index is an InfiniBand port's; on RoCE the daemon's choice wins.
    ASSERT_EQ(rdmamcast_fill_ah_attr(&r, 1, 0, &ah), 0);
    EXPECT_EQ(ah.is_global, 1);
    EXPECT_EQ(0, std::memcmp(ah.grh.dgid.raw, r.mgid, 16));
    EXPECT_EQ(ah.grh.sgid_index, 5);
    EXPECT_EQ(ah.grh.hop_limit, 64);
    EXPECT_EQ(ah.grh.traffic_class, 0x68);
    EXPECT_EQ(ah.grh.flow_label, 0x12345u);
    EXPECT_EQ(ah.dlid, 0);
    EXPECT_EQ(ah.sl, 3);
    EXPECT_EQ(ah.static_rate, 0);
    EXPECT_EQ(ah.port_num, 1);
    EXPECT_EQ(ah.src_path_bits, 0);
    // The same record from an InfiniBand port keeps the caller's index and the MLID.
    auto ib = r;
    ib.link_layer = RDMAMCAST_LINK_LAYER_INFINIBAND;
    ib.mlid = 0xc001;
    ASSERT_EQ(rdmamcast_fill_ah_attr(&ib, 1, 2, &ah), 0);
    EXPECT_EQ(ah.grh.sgid_index, 2);
    EXPECT_EQ(ah.dlid, 0xc001);
}

TEST_F(Verbs, RoceAttachesWithLidZero) {
    auto r = roce_record();
    EXPECT_EQ(rdmamcast_attach(qp1_, &r), 0);
    EXPECT_EQ(rdmamcast_detach(qp1_, &r), 0);
    ASSERT_EQ(g_calls.size(), 2u);
    for (const auto &c : g_calls) {
        EXPECT_EQ(c.lid, 0);
        EXPECT_EQ(0, std::memcmp(c.gid, r.mgid, 16));
    }
}

TEST_F(Verbs, AttachAndDetachPassMgidAndMlid) {
    auto r = record_with(0xc001);
    EXPECT_EQ(rdmamcast_attach(qp1_, &r), 0);
    EXPECT_EQ(rdmamcast_detach(qp1_, &r), 0);
    ASSERT_EQ(g_calls.size(), 2u);
    EXPECT_TRUE(g_calls[0].attach);
    EXPECT_FALSE(g_calls[1].attach);
    for (const auto &c : g_calls) {
        EXPECT_EQ(c.qp, qp1_);
        EXPECT_EQ(c.lid, 0xc001);
        EXPECT_EQ(0, std::memcmp(c.gid, r.mgid, 16));
    }
}

TEST_F(Verbs, VerbsErrnosBecomeNegative) {
    auto r = record_with(0xc001);
    g_results = {EPERM, ENOMEM};
    EXPECT_EQ(rdmamcast_attach(qp1_, &r), -EPERM);
    EXPECT_EQ(rdmamcast_detach(qp1_, &r), -ENOMEM);
    EXPECT_EQ(rdmamcast_attach(nullptr, &r), -EINVAL);
}

class VerbsAttachSet : public Verbs {
protected:
    void SetUp() override {
        Verbs::SetUp();
        ASSERT_EQ(rdmamcast_attach_set_new(&set_), 0);
    }
    void TearDown() override {
        rdmamcast_attach_set_free(set_);
        Verbs::TearDown();
    }
    rdmamcast_attach_set *set_ = nullptr;
};

TEST_F(VerbsAttachSet, AddAttachesAndRemoveDetaches) {
    auto r = record_with(0xc001);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), 0);
    EXPECT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), -EEXIST);
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_TRUE(g_calls[0].attach);
    EXPECT_EQ(rdmamcast_attach_set_remove(set_, qp1_, 7), 0);
    ASSERT_EQ(g_calls.size(), 2u);
    EXPECT_FALSE(g_calls[1].attach);
    EXPECT_EQ(g_calls[1].lid, 0xc001);
    EXPECT_EQ(rdmamcast_attach_set_remove(set_, qp1_, 7), -ENOENT);
}

TEST_F(VerbsAttachSet, FailedAddIsNotRemembered) {
    auto r = record_with(0xc001);
    g_results = {EINVAL};
    EXPECT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), -EINVAL);
    EXPECT_EQ(rdmamcast_attach_set_remove(set_, qp1_, 7), -ENOENT);
}

TEST_F(VerbsAttachSet, MlidChangeDetachesOldThenAttachesNew) {
    auto old_rec = record_with(0xc001);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &old_rec), 0);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp2_, 7, &old_rec), 0);
    g_calls.clear();

    auto new_rec = record_with(0xc002);
    auto ev = restored(7, new_rec);
    ibv_ah_attr ah{};
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 2, &ah), 2);
    ASSERT_EQ(g_calls.size(), 4u);
    EXPECT_FALSE(g_calls[0].attach);
    EXPECT_EQ(g_calls[0].qp, qp1_);
    EXPECT_EQ(g_calls[0].lid, 0xc001);
    EXPECT_TRUE(g_calls[1].attach);
    EXPECT_EQ(g_calls[1].qp, qp1_);
    EXPECT_EQ(g_calls[1].lid, 0xc002);
    EXPECT_FALSE(g_calls[2].attach);
    EXPECT_EQ(g_calls[2].qp, qp2_);
    EXPECT_TRUE(g_calls[3].attach);
    EXPECT_EQ(g_calls[3].lid, 0xc002);
    EXPECT_EQ(ah.dlid, 0xc002);
    EXPECT_EQ(ah.port_num, 1);
    EXPECT_EQ(ah.grh.sgid_index, 2);

    // Removing now detaches from the new group.
    g_calls.clear();
    EXPECT_EQ(rdmamcast_attach_set_remove(set_, qp1_, 7), 0);
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_EQ(g_calls[0].lid, 0xc002);
}

TEST_F(VerbsAttachSet, MgidChangeAlsoReattaches) {
    auto r = record_with(0xc001, 1);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), 0);
    g_calls.clear();
    auto ev = restored(7, record_with(0xc001, 2), RDMAMCAST_FIELD_MGID);
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 0, nullptr), 1);
    ASSERT_EQ(g_calls.size(), 2u);
    EXPECT_EQ(g_calls[0].gid[15], 1);
    EXPECT_EQ(g_calls[1].gid[15], 2);
}

TEST_F(VerbsAttachSet, UnchangedRecordTouchesNothingButRefreshesTheAh) {
    auto r = record_with(0xc001);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), 0);
    g_calls.clear();
    auto changed = r;
    changed.sl = 9;
    auto ev = restored(7, changed, RDMAMCAST_FIELD_SL);
    ibv_ah_attr ah{};
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 0, &ah), 0);
    EXPECT_TRUE(g_calls.empty());
    EXPECT_EQ(ah.sl, 9);
}

TEST_F(VerbsAttachSet, OtherMembershipsAndOtherEventsAreIgnored) {
    auto r = record_with(0xc001);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), 0);
    g_calls.clear();
    auto ev = restored(8, record_with(0xc009));
    ibv_ah_attr ah{};
    ah.dlid = 0x1111;
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 0, &ah), 0);
    EXPECT_EQ(ah.dlid, 0x1111) << "not ours: the AH is left alone";
    rdmamcast_event lost{};
    lost.type = RDMAMCAST_EVENT_LOST;
    lost.membership = 7;
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &lost, 1, 0, &ah), 0);
    EXPECT_TRUE(g_calls.empty());
}

TEST_F(VerbsAttachSet, FailedReattachIsRetriedByTheNextEvent) {
    auto r = record_with(0xc001);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), 0);
    g_calls.clear();
    g_results = {0, ENOMEM}; // detach works, attach fails
    auto ev = restored(7, record_with(0xc002));
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 0, nullptr), -ENOMEM);
    ASSERT_EQ(g_calls.size(), 2u);

    // Same record again: the QP is detached, so it is attached without a detach.
    g_calls.clear();
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 0, nullptr), 1);
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_TRUE(g_calls[0].attach);
    EXPECT_EQ(g_calls[0].lid, 0xc002);

    // And removing a QP whose attach had failed does not detach anything.
    g_calls.clear();
    g_results = {0, EIO};
    auto ev3 = restored(7, record_with(0xc003));
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev3, 1, 0, nullptr), -EIO);
    g_calls.clear();
    EXPECT_EQ(rdmamcast_attach_set_remove(set_, qp1_, 7), 0);
    EXPECT_TRUE(g_calls.empty());
}

TEST_F(VerbsAttachSet, LostKeepsTheQpUntilTheRestoreMovesIt) {
    auto r = record_with(0xc001);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), 0);
    g_calls.clear();
    rdmamcast_event lost{};
    lost.type = RDMAMCAST_EVENT_LOST;
    lost.membership = 7;
    lost.lost.code = RDMAMCAST_E_SA_ERROR;
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &lost, 1, 0, nullptr), 0);
    EXPECT_TRUE(g_calls.empty()) << "nothing is detached while the daemon restores it";

    // Restored under a new MLID (the SM restarted and handed out another one).
    auto ev = restored(7, record_with(0xc00b));
    ibv_ah_attr ah{};
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 0, &ah), 1);
    ASSERT_EQ(g_calls.size(), 2u);
    EXPECT_FALSE(g_calls[0].attach);
    EXPECT_EQ(g_calls[0].lid, 0xc001);
    EXPECT_TRUE(g_calls[1].attach);
    EXPECT_EQ(g_calls[1].lid, 0xc00b);
    EXPECT_EQ(ah.dlid, 0xc00b);
}

// On RoCE every group has MLID 0: it is attached by MGID, kept across a restore that moves
// the source GID (only the AH changes), and moved when the MGID changes.
TEST_F(VerbsAttachSet, RoceGroupsWithMlidZeroAreGroupsLikeAnyOther) {
    auto r = roce_record(5, 3);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp1_, 7, &r), 0);
    ASSERT_EQ(rdmamcast_attach_set_add(set_, qp2_, 8, &r), 0);
    ASSERT_EQ(g_calls.size(), 2u);
    EXPECT_TRUE(g_calls[0].attach);
    EXPECT_EQ(g_calls[0].lid, 0);
    g_calls.clear();

    // The address came back at another GID table index: no verbs call, a new AH.
    auto moved = roce_record(9, 3);
    auto ev = restored(7, moved, RDMAMCAST_FIELD_SGID_INDEX);
    ibv_ah_attr ah{};
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev, 1, 0, &ah), 0);
    EXPECT_TRUE(g_calls.empty()) << "MLID 0 to MLID 0 is no change";
    EXPECT_EQ(ah.is_global, 1);
    EXPECT_EQ(ah.grh.sgid_index, 9);
    EXPECT_EQ(ah.dlid, 0);

    // Another group (MGID): detach from the old one at LID 0, attach to the new one at LID 0.
    auto other = roce_record(9, 4);
    auto ev2 = restored(7, other, RDMAMCAST_FIELD_MGID);
    EXPECT_EQ(rdmamcast_attach_set_update(set_, &ev2, 1, 0, nullptr), 1);
    ASSERT_EQ(g_calls.size(), 2u);
    EXPECT_FALSE(g_calls[0].attach);
    EXPECT_EQ(g_calls[0].gid[15], 3);
    EXPECT_EQ(g_calls[0].lid, 0);
    EXPECT_TRUE(g_calls[1].attach);
    EXPECT_EQ(g_calls[1].gid[15], 4);
    EXPECT_EQ(g_calls[1].lid, 0);
    g_calls.clear();

    // Removing detaches at LID 0; the other membership's QP is untouched throughout.
    EXPECT_EQ(rdmamcast_attach_set_remove(set_, qp2_, 8), 0);
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_EQ(g_calls[0].qp, qp2_);
    EXPECT_EQ(g_calls[0].gid[15], 3);
    EXPECT_EQ(g_calls[0].lid, 0);
}

TEST_F(VerbsAttachSet, NullArguments) {
    auto r = record_with(0xc001);
    EXPECT_EQ(rdmamcast_attach_set_new(nullptr), -EINVAL);
    EXPECT_EQ(rdmamcast_attach_set_add(nullptr, qp1_, 7, &r), -EINVAL);
    EXPECT_EQ(rdmamcast_attach_set_update(set_, nullptr, 1, 0, nullptr), -EINVAL);
    rdmamcast_attach_set_free(nullptr);
}

// ---- the C++ wrapper (<rdmamcast/verbs.hpp>) ----

rdmamcast::RestoredEvent restored_cpp(std::uint64_t membership, const rdmamcast_record &r,
                                      std::uint32_t changed) {
    return rdmamcast::RestoredEvent{membership, r, changed};
}

TEST_F(Verbs, CppAttachSetFollowsTheMlid) {
    rdmamcast::AttachSet set;
    const auto old_rec = record_with(0xc001);
    set.add(qp1_, 7, old_rec);
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_TRUE(g_calls[0].attach);
    g_calls.clear();

    // MLID changed: detach old, attach new, fresh AH attributes.
    auto fresh = set.update(restored_cpp(7, record_with(0xc002), RDMAMCAST_FIELD_MLID), 1, 3);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->dlid, 0xc002);
    EXPECT_EQ(fresh->grh.sgid_index, 3);
    ASSERT_EQ(g_calls.size(), 2u);
    EXPECT_FALSE(g_calls[0].attach);
    EXPECT_EQ(g_calls[0].lid, 0xc001);
    EXPECT_TRUE(g_calls[1].attach);
    EXPECT_EQ(g_calls[1].lid, 0xc002);
    g_calls.clear();

    // MLID unchanged: no verbs call, but the AH still reflects the record.
    auto same = record_with(0xc002);
    same.sl = 2;
    fresh = set.update(restored_cpp(7, same, RDMAMCAST_FIELD_SL), 1, 3);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->sl, 2);
    EXPECT_TRUE(g_calls.empty());

    // Lost, another membership's restore: nothing to do, no AH.
    EXPECT_FALSE(set.update(rdmamcast::LostEvent{7, RDMAMCAST_E_SA_ERROR, "sa-error", "gone", 0x300},
                            1, 3));
    EXPECT_FALSE(set.update(restored_cpp(8, record_with(0xc009), RDMAMCAST_FIELD_MLID), 1, 3));
    EXPECT_TRUE(g_calls.empty());

    set.remove(qp1_, 7);
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_FALSE(g_calls[0].attach);
    EXPECT_EQ(g_calls[0].lid, 0xc002);
}

TEST_F(Verbs, CppAhAttrAndAttachSetOnRoce) {
    const auto r = roce_record(5);
    const ibv_ah_attr ah = rdmamcast::ah_attr(r, 1, 0);
    EXPECT_EQ(ah.grh.sgid_index, 5);
    EXPECT_EQ(ah.dlid, 0);
    rdmamcast::AttachSet set;
    set.add(qp1_, 7, r);
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_EQ(g_calls[0].lid, 0);
    auto fresh = set.update(restored_cpp(7, roce_record(6), RDMAMCAST_FIELD_SGID_INDEX), 1, 0);
    ASSERT_TRUE(fresh) << "a RoCE AH is global like any other, so the set says it changed";
    EXPECT_EQ(fresh->grh.sgid_index, 6);
    EXPECT_EQ(g_calls.size(), 1u);
}

TEST_F(Verbs, CppAttachSetFailuresThrowWithTheErrno) {
    rdmamcast::AttachSet set;
    set.add(qp1_, 7, record_with(0xc001));
    g_results = {0, ENOSPC}; // detach works, attach fails
    try {
        set.update(restored_cpp(7, record_with(0xc002), RDMAMCAST_FIELD_MLID), 1, 0);
        FAIL() << "no exception";
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.error_number(), ENOSPC);
        EXPECT_EQ(e.code(), RDMAMCAST_E_SYSTEM);
        EXPECT_EQ(e.message(), std::string("re-attach the QPs of membership 7: ") +
                                   std::strerror(ENOSPC));
    }
    // The next restore of the membership attaches it (it is detached now: no detach first).
    g_calls.clear();
    EXPECT_TRUE(set.update(restored_cpp(7, record_with(0xc002), 0), 1, 0));
    ASSERT_EQ(g_calls.size(), 1u);
    EXPECT_TRUE(g_calls[0].attach);

    g_results = {EPERM};
    EXPECT_THROW(set.add(qp2_, 7, record_with(0xc002)), rdmamcast::Error);
    try {
        set.remove(qp2_, 7);
        FAIL() << "a QP whose add failed is not in the set";
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.error_number(), ENOENT);
    }
}

} // namespace

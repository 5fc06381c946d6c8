// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A watch of one group on one host of the Ethernet bed, through a daemon's restart: the judges
// are the bed's, the host's IGMP table and the bridge's mdb.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>

#include "ethernet/ethernet_bed.hpp"

namespace mcastd::eth {

// Polls host `host`'s IGMP table (every millisecond: a read of /proc/net/igmp) and the bridge's
// mdb (as fast as `bridge mdb show` runs, a few milliseconds) for `group`, each on a thread of
// its own, and keeps for each how many polls lacked it and the longest absence: from the last
// poll that saw it to the next one that did, an upper bound of the true gap.
class GroupWatch {
public:
    struct Judge {
        std::size_t polls = 0, absent = 0;
        std::chrono::steady_clock::duration longest{};
    };
    struct Seen {
        Judge igmp, mdb;
    };

    GroupWatch(EthernetBed &bed, int host, IpGroup group) : bed_(bed), host_(host), group_(std::move(group)) {
        igmp_thread_ = std::thread([this] {
            poll(seen_.igmp, igmp_polls_, std::chrono::milliseconds(1), [this] {
                const GroupUsers users = bed_.igmp(host_);
                const auto u = users.find(group_);
                return u != users.end() && u->second >= 1;
            });
        });
        mdb_thread_ = std::thread([this] {
            poll(seen_.mdb, mdb_polls_, std::chrono::milliseconds(0), [this] { return bed_.mdb_hosts(group_).count(host_) == 1; });
        });
    }
    ~GroupWatch() { finish(); }

    // Polls so far, of the slower judge (the mdb's): the watch's clock, which load slows down
    // rather than wall time.
    std::size_t polls() const { return std::min(igmp_polls_.load(), mdb_polls_.load()); }
    std::size_t igmp_polls() const { return igmp_polls_.load(); }
    // Waits until each judge polled `n` more times.
    bool wait_polls(std::size_t n) {
        const std::size_t goal = polls() + n;
        return sim::poll_until(std::chrono::seconds(60), [&] { return polls() >= goal; });
    }

    Seen finish() {
        stop_ = true;
        for (std::thread *t : {&igmp_thread_, &mdb_thread_})
            if (t->joinable())
                t->join();
        return seen_;
    }

private:
    void poll(Judge &j, std::atomic<std::size_t> &count, std::chrono::milliseconds pause,
              const std::function<bool()> &present) {
        auto last_seen = std::chrono::steady_clock::now();
        bool gone = false;
        while (!stop_) {
            const bool here = present();
            const auto now = std::chrono::steady_clock::now();
            ++j.polls;
            ++count;
            if (here) {
                if (gone)
                    j.longest = std::max(j.longest, now - last_seen);
                last_seen = now;
                gone = false;
            } else {
                ++j.absent;
                gone = true;
            }
            std::this_thread::sleep_for(pause);
        }
        if (gone) // still absent at the end
            j.longest = std::max(j.longest, std::chrono::steady_clock::now() - last_seen);
    }

    EthernetBed &bed_;
    int host_;
    IpGroup group_;
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> igmp_polls_{0}, mdb_polls_{0};
    Seen seen_;
    std::thread igmp_thread_, mdb_thread_;
};

} // namespace mcastd::eth

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-list [MEMBERSHIPS...]: what one page of `list` costs the daemon as it holds more
// memberships (default 10,000 and 100,000, ten to a group). A Service over the unit tests' fake
// SA holds them; the bench builds the first page, then walks every page by its cursor, then the
// whole view in one (D-Bus's ListGroups). A page must cost the same however many memberships
// there are: a page that walked everything before its cursor would show here as an average
// page growing with the memberships (the ratio on the last line well above 1).
//
// Wall-clock figures of one process on whatever else the machine runs: compare runs with each
// other. Prints figures, never fails on them.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "service/list_cursor.hpp"
#include "service/views.hpp"

using namespace mcastd;

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

struct NoSink final : MembershipEventSink {
    void membership_event(ClientId, MembershipId, const MembershipEvent &) override {}
};

struct Figures {
    std::size_t failed = 0; // joins the fake SA refused: the figures are then for fewer
    std::size_t pages = 0;
    double first_page_us = 0, average_page_us = 0, whole_ms = 0;
};

Figures measure(std::size_t memberships) {
    test::FakeTimers timers;
    test::FakeSa sa;
    NoSink sink;
    Service service(EngineConfig{}, sa, timers);
    const PortIndex port = service.add_port(test::test_port(), true);
    sa.port_gids[port] = test::test_port().port_gid();
    sa.state.mlid_limit = 0xfffe; // room for 16,000 groups
    Figures f;
    std::vector<ClientId> clients;
    for (pid_t pid = 1; pid <= 10; ++pid)
        clients.push_back(service.add_client(ClientInfo{pid, 1000, 1000, "bench-client"}, &sink));
    for (std::size_t i = 0; i < memberships; ++i) {
        char mgid[40];
        std::snprintf(mgid, sizeof mgid, "ff15:1::%zx", i / 10 + 1);
        service.join(clients[i % clients.size()], test::join_request(mgid),
                     [&f](const JoinResult &r) { f.failed += r.error.has_value(); });
        sa.run();
    }

    const ListQuery first{std::nullopt, std::nullopt, proto::kListPageBytes};
    constexpr int kRepeats = 20;
    auto t = Clock::now();
    for (int i = 0; i < kRepeats; ++i)
        (void)list_view(service, first);
    f.first_page_us = us_since(t) / kRepeats;

    t = Clock::now();
    std::optional<GroupCursor> after;
    do {
        const proto::ListResult page = list_view(service, ListQuery{after, std::nullopt, proto::kListPageBytes});
        ++f.pages;
        after = page.next ? parse_cursor(*page.next) : std::nullopt;
    } while (after);
    f.average_page_us = us_since(t) / static_cast<double>(f.pages);

    t = Clock::now();
    (void)list_view(service);
    f.whole_ms = us_since(t) / 1000;
    return f;
}

} // namespace

int main(int argc, char **argv) {
    bench::CommandLine cmd(argc, argv, "mcastd-bench-list",
                           "[MEMBERSHIPS...]\nThe daemon's cost of one page of `list` as it holds more memberships.\n");
    std::vector<std::size_t> sizes;
    for (const std::string &a : cmd.args)
        sizes.push_back(cmd.count(a, 10, 160'000)); // ten to a group, 16,000 groups at most
    if (sizes.empty())
        sizes = {10'000, 100'000};
    std::printf("%12s %7s %15s %15s %15s\n", "memberships", "pages", "first page us", "average page us",
                "whole view ms");
    std::vector<Figures> all;
    for (std::size_t n : sizes) {
        all.push_back(measure(n));
        const Figures &f = all.back();
        std::printf("%12zu %7zu %15.0f %15.0f %15.1f\n", n, f.pages, f.first_page_us, f.average_page_us, f.whole_ms);
        if (f.failed)
            std::printf("  (%zu joins failed: the SA ran out of MLIDs; fewer memberships were listed)\n", f.failed);
    }
    if (all.size() > 1)
        std::printf("average page, largest over smallest: %.2f (flat is 1)\n",
                    all.back().average_page_us / all.front().average_page_us);
    return 0;
}

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's config parser, on any file an operator (or a package) could install. An error
// must name the file first; an accepted config must satisfy the invariants its consumers
// assume without re-checking (MadTransactions throws on a few of them; the engine does not).
#include <cstdint>
#include <string_view>

#include "config/config.hpp"
#include "fuzz_check.hpp"

using namespace mcastd;
using namespace mcastd::config;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto r = parse_config(text, "fuzz.json");
    if (auto *err = std::get_if<Error>(&r)) {
        FUZZ_CHECK(err->code == Errc::invalid_argument);
        FUZZ_CHECK(err->message.starts_with("fuzz.json: "));
        return 0;
    }
    const DaemonConfig &c = std::get<DaemonConfig>(r);
    FUZZ_CHECK(!c.socket.empty() && c.socket.front() == '/');
    const auto &sa = c.host.sa;
    FUZZ_CHECK(sa.first_timeout.count() >= 1);
    FUZZ_CHECK(sa.max_timeout >= sa.first_timeout);
    FUZZ_CHECK(sa.max_tries >= 1 && sa.window >= 1 && sa.window <= 256);
    const auto &e = c.engine;
    FUZZ_CHECK(e.retry_min.count() > 0 && e.retry_max >= e.retry_min);
    FUZZ_CHECK(e.create.sl <= 15 && e.create.flow_label <= 0xfffff);
    FUZZ_CHECK(e.create.scope >= 1 && e.create.scope <= 15);
    FUZZ_CHECK((e.create.pkey & 0x7fff) != 0);
    FUZZ_CHECK(c.limits.max_message_bytes >= 1024 && c.limits.max_message_bytes <= 65536);
    for (const JoinRequest &g : c.static_groups) {
        FUZZ_CHECK(!g.device.empty() && g.port >= 1 && g.port <= 254);
        FUZZ_CHECK(is_zero(g.mgid) || g.mgid[0] == 0xff);
        FUZZ_CHECK(!g.scope || is_zero(g.mgid));
    }
    return 0;
}

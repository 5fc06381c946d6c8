// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The local port's answer to a directed-route Get(PortInfo) (daemon/port/portinfo_smp.hpp),
// and the PortInfo attribute alone. The attribute inside an accepted SMP must decode the same
// way on its own.
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "port/portinfo_smp.hpp"

using namespace mcastd::port;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::span<const std::uint8_t> bytes(data, size);
    auto reply = decode_portinfo_reply(bytes);
    if (auto *err = std::get_if<SmpError>(&reply))
        FUZZ_CHECK(!err->message.empty());
    auto alone = decode_portinfo(bytes);
    if (auto *err = std::get_if<SmpError>(&alone))
        FUZZ_CHECK(!err->message.empty());
    // The SMP's data area (64 bytes at offset 64, IBA 14.2.1.2) holds the attribute.
    if (const auto *ok = std::get_if<PortInfoReply>(&reply)) {
        auto inner = decode_portinfo(bytes.subspan(64, kPortInfoSize));
        FUZZ_CHECK(std::holds_alternative<PortInfo>(inner));
        FUZZ_CHECK(std::get<PortInfo>(inner) == ok->info);
    }
    return 0;
}

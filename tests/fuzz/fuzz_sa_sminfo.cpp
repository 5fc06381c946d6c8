// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SMInfoRecord answers (daemon/sa/mad_codec.hpp), which the daemon polls to notice an SM
// restart or failover. A decoded answer must re-encode to one that decodes to the same value.
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "sa/mad_codec.hpp"

using namespace mcastd;
using namespace mcastd::sa;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::span<const std::uint8_t> mad(data, size);
    auto decoded = decode_sminfo_response(mad);
    if (!decoded.ok()) {
        (void)decoded.error().message();
        return 0;
    }
    const MadBuf again = encode_sminfo_mad(decoded.value());
    auto redecoded = decode_sminfo_response(again);
    FUZZ_CHECK(redecoded.ok());
    FUZZ_CHECK(redecoded.value() == decoded.value());
    return 0;
}

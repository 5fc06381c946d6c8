// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA answers the daemon reads (daemon/sa/mad_codec.hpp): the MAD header, and an
// MCMemberRecord response to each request method. A MAD that decodes must re-encode to one
// that decodes to the same value: every field the decoder returns fits its wire field.
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "sa/mad_codec.hpp"

using namespace mcastd;
using namespace mcastd::sa;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::span<const std::uint8_t> mad(data, size);
    auto header = decode_mad_header(mad);
    FUZZ_CHECK(header.ok() == (size >= mad::header_size));
    if (!header.ok())
        (void)header.error().message();

    for (SaMethod method : {SaMethod::get, SaMethod::set, SaMethod::del}) {
        auto decoded = decode_mcmember_response(mad, method);
        if (!decoded.ok()) {
            (void)decoded.error().message();
            continue;
        }
        FUZZ_CHECK(header.ok() && header->tid == decoded->tid);
        const MadBuf again = encode_mcmember_mad(decoded.value());
        auto redecoded = decode_mcmember_response(again, method);
        FUZZ_CHECK(redecoded.ok());
        FUZZ_CHECK(redecoded.value() == decoded.value());
    }
    return 0;
}

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's request decoder, on whatever a client sends. Besides crashes and sanitizer
// reports it checks that
//  - an accepted request re-encodes (client encoder) to text the decoder accepts again and
//    that re-encodes identically: encode(decode(x)) is a fixed point;
//  - a rejection carries a field that is empty or a JSON pointer, a message that starts with
//    that pointer, and encodes to an error reply the client decoder reads back unchanged.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "protocol.hpp"

using namespace mcastd;
using namespace mcastd::proto;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto decoded = decode_request(text);

    if (auto *env = std::get_if<RequestEnvelope>(&decoded)) {
        FUZZ_CHECK(env->id <= kMaxId);
        const std::string once = encode_request(env->id, env->request);
        auto again = decode_request(once);
        FUZZ_CHECK(std::holds_alternative<RequestEnvelope>(again));
        const auto &env2 = std::get<RequestEnvelope>(again);
        FUZZ_CHECK(env2.id == env->id);
        FUZZ_CHECK(encode_request(env2.id, env2.request) == once);
        return 0;
    }

    const auto &bad = std::get<BadRequest>(decoded);
    const Failure &f = bad.failure;
    FUZZ_CHECK(f.error.code == Errc::invalid_argument || f.error.code == Errc::internal);
    FUZZ_CHECK(!f.error.message.empty());
    FUZZ_CHECK(!f.error.sa_status);
    FUZZ_CHECK(f.field.empty() || f.field.front() == '/');
    FUZZ_CHECK(f.field.empty() || f.error.message.starts_with(f.field + ": "));
    FUZZ_CHECK(!bad.id || *bad.id <= kMaxId);

    // The reply to it is valid JSON, whatever bytes the message quoted back.
    auto reply = decode_incoming(encode_error(bad.id, f));
    FUZZ_CHECK(std::holds_alternative<Incoming>(reply));
    const auto *r = std::get_if<Reply>(&std::get<Incoming>(reply));
    FUZZ_CHECK(r != nullptr);
    FUZZ_CHECK(r->id == bad.id);
    const auto *back = std::get_if<Failure>(&r->body);
    FUZZ_CHECK(back != nullptr);
    FUZZ_CHECK(back->error.code == f.error.code);
    FUZZ_CHECK(back->field == f.field);
    // Equal unless the message held bytes that are not UTF-8 (replaced on the way out); the
    // decoder only quotes what the JSON parser accepted, which is UTF-8.
    FUZZ_CHECK(back->error.message == f.error.message);
    return 0;
}

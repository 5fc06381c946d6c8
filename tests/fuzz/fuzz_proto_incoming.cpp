// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The client's decoders, on whatever a daemon (or something pretending to be one) sends:
// decode_incoming and each decode_*_result, on the input itself and on the result object a
// reply carries. Every value they accept must re-encode (the daemon's encoders) to a fixed
// point: decode(encode(v)) succeeds and encodes to the same text.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/json_check.hpp"
#include "fuzz_check.hpp"
#include "protocol.hpp"

using namespace mcastd;
using namespace mcastd::proto;

namespace {

template <class T, class Decode> void check_result(const json_check::Value &value, Decode decode) {
    auto first = decode(value);
    if (!std::holds_alternative<T>(first))
        return;
    const std::string once = encode_reply(1, Result{std::get<T>(first)});
    auto reply = decode_incoming(once);
    FUZZ_CHECK(std::holds_alternative<Incoming>(reply));
    const auto &r = std::get<Reply>(std::get<Incoming>(reply));
    const auto *result = std::get_if<json_check::OwnedValue>(&r.body);
    FUZZ_CHECK(result != nullptr);
    auto second = decode(result->get());
    FUZZ_CHECK(std::holds_alternative<T>(second));
    FUZZ_CHECK(encode_reply(1, Result{std::get<T>(second)}) == once);
}

void check_results(const json_check::Value &value) {
    check_result<HelloResult>(value, decode_hello_result);
    check_result<JoinResult>(value, decode_join_result);
    check_result<ListResult>(value, decode_list_result);
    check_result<StatusResult>(value, decode_status_result);
    check_result<EvictResult>(value, decode_evict_result);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    // The input itself as a reply's result object, when it is JSON.
    if (const auto parsed = json_check::parse(text); !parsed.syntax_error)
        check_results(parsed.value());

    auto in = decode_incoming(text);
    if (auto *err = std::get_if<Error>(&in)) {
        FUZZ_CHECK(err->code == Errc::invalid_argument || err->code == Errc::internal);
        return 0;
    }
    const Incoming &incoming = std::get<Incoming>(in);
    if (const auto *event = std::get_if<Event>(&incoming)) {
        const std::string once = encode_event(*event);
        auto again = decode_incoming(once);
        FUZZ_CHECK(std::holds_alternative<Incoming>(again));
        const auto *event2 = std::get_if<Event>(&std::get<Incoming>(again));
        FUZZ_CHECK(event2 != nullptr);
        FUZZ_CHECK(encode_event(*event2) == once);
        return 0;
    }
    const Reply &reply = std::get<Reply>(incoming);
    if (const auto *result = std::get_if<json_check::OwnedValue>(&reply.body)) {
        check_results(result->get());
    } else {
        const Failure &f = std::get<Failure>(reply.body);
        const std::string once = encode_error(reply.id, f);
        auto again = decode_incoming(once);
        FUZZ_CHECK(std::holds_alternative<Incoming>(again));
        const auto &r2 = std::get<Reply>(std::get<Incoming>(again));
        FUZZ_CHECK(r2.id == reply.id);
        FUZZ_CHECK(encode_error(r2.id, std::get<Failure>(r2.body)) == once);
    }
    return 0;
}

// The protocol's shared vocabulary: names of join states, selectors and record fields, and
// the MTU encoding. The codecs live in request_codec.cpp, reply_encoder.cpp and
// incoming_decoder.cpp.
#include "protocol.hpp"

#include "wire_values.hpp"

namespace mcastd::proto {

namespace {
constexpr std::array<std::string_view, 4> kSelectorNames{"greater", "less", "exactly", "best"};
} // namespace

std::optional<std::uint8_t> join_state_from_name(std::string_view name) {
    for (std::size_t i = 0; i < wire::kJoinStateNames.size(); ++i)
        if (wire::kJoinStateNames[i] == name)
            return static_cast<std::uint8_t>(1u << i);
    return std::nullopt;
}

std::optional<std::uint8_t> join_state_bits_from_name(std::string_view name) {
    if (name == "none")
        return std::uint8_t{0};
    std::uint8_t bits = 0;
    while (true) {
        const auto plus = name.find('+');
        const auto bit = join_state_from_name(name.substr(0, plus));
        if (!bit || (bits & *bit))
            return std::nullopt;
        bits |= *bit;
        if (plus == name.npos)
            return bits;
        name.remove_prefix(plus + 1);
    }
}

std::optional<Selector> selector_from_name(std::string_view name) {
    for (std::size_t i = 0; i < kSelectorNames.size(); ++i)
        if (kSelectorNames[i] == name)
            return static_cast<Selector>(i);
    return std::nullopt;
}

std::string_view selector_name(Selector s) {
    const auto i = static_cast<std::size_t>(s);
    return i < kSelectorNames.size() ? kSelectorNames[i] : std::string_view("?");
}

std::optional<std::uint8_t> mtu_enum_from_bytes(unsigned bytes) {
    for (std::uint8_t e = 1; e <= 5; ++e)
        if (mtu_bytes(e) == bytes)
            return e;
    return std::nullopt;
}

std::vector<std::string> changed_field_names(std::uint64_t fields) {
    std::vector<std::string> out;
    for (const auto &f : wire::kChangedNames)
        if (fields & f.bits)
            out.emplace_back(f.name);
    return out;
}

std::uint64_t changed_fields_from_names(const std::vector<std::string> &names) {
    std::uint64_t bits = 0;
    for (const auto &n : names)
        for (const auto &f : wire::kChangedNames)
            if (f.name == n) // the value bit, not the selector's: what a record key shows
                bits |= f.bits == wire::kMtuBits    ? field::mtu
                        : f.bits == wire::kRateBits ? field::rate
                                                    : f.bits;
    return bits;
}

std::string_view op_name(const Request &request) {
    static constexpr std::string_view names[] = {"hello", "join",   "leave",
                                                 "list",  "status", "monitor"};
    static_assert(std::size(names) == std::variant_size_v<Request>);
    return names[request.index()];
}

} // namespace mcastd::proto

// The protocol's shared vocabulary: names of record fields. The codecs live in envelope.cpp,
// request_codec.cpp, reply_encoder.cpp and incoming_decoder.cpp; record.cpp has the names of
// join states and selectors and the MTU encoding.
#include "protocol.hpp"

#include "codec.hpp"

namespace mcastd::proto {

std::vector<std::string> changed_field_names(std::uint64_t fields) {
    std::vector<std::string> out;
    for (const auto &f : codec::kChangedNames)
        if (fields & f.bits)
            out.emplace_back(f.name);
    return out;
}

std::uint64_t changed_fields_from_names(const std::vector<std::string> &names) {
    std::uint64_t bits = 0;
    for (const auto &n : names)
        for (const auto &f : codec::kChangedNames)
            if (f.name == n) // the value bit, not the selector's: what a record key shows
                bits |= f.bits == codec::kMtuBits    ? field::mtu
                        : f.bits == codec::kRateBits ? field::rate
                                                     : f.bits;
    return bits;
}

} // namespace mcastd::proto

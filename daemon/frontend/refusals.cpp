// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/refusals.hpp"

#include <algorithm>

namespace mcastd::frontend {

namespace refusal {

std::optional<std::string_view> reason_of(const Error &e) {
    if (!e.policy)
        return std::nullopt;
    if (!e.policy->rule.empty())
        return kRules;
    if (e.policy->quota.empty())
        return std::nullopt;
    // A quota's error names its key without the section ("creates_per_uid"): the reason is the
    // one key of the set that ends with it.
    for (std::string_view key : kReasons) {
        const auto dot = key.rfind('.');
        if (dot != std::string_view::npos && key.substr(dot + 1) == e.policy->quota)
            return key;
    }
    return std::nullopt;
}

} // namespace refusal

namespace {

std::optional<std::size_t> index_of(std::string_view reason) {
    const auto it = std::find(refusal::kReasons.begin(), refusal::kReasons.end(), reason);
    if (it == refusal::kReasons.end())
        return std::nullopt;
    return static_cast<std::size_t>(it - refusal::kReasons.begin());
}

} // namespace

void Refusals::count(std::string_view reason) {
    if (const auto i = index_of(reason))
        ++counts_[*i];
}

void Refusals::count(const Error &e) {
    if (const auto reason = refusal::reason_of(e))
        count(*reason);
}

std::uint64_t Refusals::of(std::string_view reason) const {
    const auto i = index_of(reason);
    return i ? counts_[*i] : 0;
}

std::vector<proto::RefusalCount> Refusals::snapshot() const {
    std::vector<proto::RefusalCount> out;
    out.reserve(counts_.size());
    for (std::size_t i = 0; i < counts_.size(); ++i)
        out.push_back(proto::RefusalCount{std::string(refusal::kReasons[i]), counts_[i]});
    return out;
}

} // namespace mcastd::frontend

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/routine_limiter.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <optional>

namespace mcastd::logging {

namespace {

// A bucket that is full and has nothing folded is a fresh one: past this many uids they are
// dropped, so the map holds only uids that logged lately.
constexpr std::size_t kSweepAbove = 256;

// 4950 -> "4,950"
std::string grouped(std::uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return out;
}

constexpr const char *kKindNames[kNoteKinds] = {"joined", "left", "join failed", "deleted",
                                                "lost",   "restored", "warning"};
static_assert(static_cast<std::size_t>(EngineNote::Kind::joined) == 0 &&
              static_cast<std::size_t>(EngineNote::Kind::deleted) == 3 &&
              static_cast<std::size_t>(EngineNote::Kind::restored) == 5);

std::string seconds_text(Duration d) {
    const double s = std::chrono::duration<double>(d).count();
    return s < 9.95 ? fmt::format("{:.1f} s", s) : fmt::format("{:.0f} s", s);
}

} // namespace

std::string describe(const FoldSummary &s, const std::string &user) {
    std::string kinds;
    for (std::size_t k = 0; k < kNoteKinds; ++k)
        if (s.by_kind[k])
            kinds += (kinds.empty() ? "" : ", ") + std::string(kKindNames[k]) + " " + grouped(s.by_kind[k]);
    return fmt::format("uid {}{}: {} routine membership line{} folded in the last {} ({})", s.uid,
                       user.empty() ? "" : " (" + user + ")", grouped(s.folded), s.folded == 1 ? "" : "s",
                       seconds_text(s.over), kinds);
}

RoutineLimiter::RoutineLimiter(Timers &timers, RoutineLimits limits, Summarize summarize)
    : timers_(timers), limits_(limits), summarize_(std::move(summarize)) {}

RoutineLimiter::~RoutineLimiter() { timers_.cancel(timer_); }

void RoutineLimiter::refill(Bucket &b, TimePoint now) const {
    const double per_second = static_cast<double>(std::max<std::size_t>(limits_.per_minute, 1)) / 60.0;
    b.tokens = std::min(static_cast<double>(limits_.burst),
                        b.tokens + std::chrono::duration<double>(now - b.filled).count() * per_second);
    b.filled = now;
}

bool RoutineLimiter::admit(uid_t uid, EngineNote::Kind kind) {
    const TimePoint now = timers_.now();
    auto it = buckets_.find(uid);
    if (it == buckets_.end()) {
        if (buckets_.size() >= kSweepAbove)
            for (auto i = buckets_.begin(); i != buckets_.end();) {
                refill(i->second, now);
                const bool fresh = i->second.folded == 0 && i->second.tokens >= static_cast<double>(limits_.burst);
                i = fresh ? buckets_.erase(i) : std::next(i);
            }
        it = buckets_.emplace(uid, Bucket{static_cast<double>(limits_.burst), now}).first;
    }
    Bucket &b = it->second;
    refill(b, now);
    if (b.tokens >= 1) {
        // The flood is over when a token was earned with nothing folded meanwhile; in a
        // sustained loop the timer writes the summaries instead.
        const std::chrono::duration<double> interval(60.0 /
                                                     static_cast<double>(std::max<std::size_t>(limits_.per_minute, 1)));
        if (b.folded && now - b.last_fold >= interval) {
            summarize(uid, b, now);
            timers_.cancel(timer_);
            timer_ = 0;
            arm(); // for the other uids still folding, if any
        }
        b.tokens -= 1;
        return true;
    }
    if (b.folded == 0)
        b.first_fold = now;
    ++b.folded;
    ++b.by_kind[static_cast<std::size_t>(kind)];
    b.last_fold = now;
    if (!timer_)
        arm();
    return false;
}

void RoutineLimiter::summarize(uid_t uid, Bucket &b, TimePoint now) {
    FoldSummary s{uid, b.folded, b.by_kind, std::chrono::duration_cast<Duration>(now - b.first_fold)};
    b.folded = 0;
    b.by_kind = {};
    summarize_(s);
}

// Due at the earliest first_fold + kMaxFoldedFor; nothing armed when nothing is folded.
void RoutineLimiter::arm() {
    std::optional<TimePoint> due;
    for (const auto &[uid, b] : buckets_)
        if (b.folded && (!due || b.first_fold + kMaxFoldedFor < *due))
            due = b.first_fold + kMaxFoldedFor;
    if (!due)
        return;
    timer_ = timers_.start(std::chrono::duration_cast<Duration>(*due - timers_.now()), [this] { on_timer(); });
}

void RoutineLimiter::on_timer() {
    timer_ = 0;
    const TimePoint now = timers_.now();
    for (auto &[uid, b] : buckets_)
        if (b.folded && b.first_fold + kMaxFoldedFor <= now)
            summarize(uid, b, now);
    arm();
}

void RoutineLimiter::set_limits(const RoutineLimits &limits) {
    const TimePoint now = timers_.now();
    for (auto &[uid, b] : buckets_)
        refill(b, now); // at the old rate up to now
    limits_ = limits;
    for (auto &[uid, b] : buckets_)
        b.tokens = std::min(b.tokens, static_cast<double>(limits_.burst));
}

void RoutineLimiter::flush() {
    timers_.cancel(timer_);
    timer_ = 0;
    const TimePoint now = timers_.now();
    for (auto &[uid, b] : buckets_)
        if (b.folded)
            summarize(uid, b, now);
}

std::size_t RoutineLimiter::folding() const {
    return static_cast<std::size_t>(
        std::count_if(buckets_.begin(), buckets_.end(), [](const auto &e) { return e.second.folded > 0; }));
}

} // namespace mcastd::logging

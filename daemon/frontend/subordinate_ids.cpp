// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/subordinate_ids.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include <spdlog/spdlog.h>

#include "frontend/accounts.hpp"
#include "runtime/small_file.hpp"

namespace mcastd::frontend {

namespace {

bool same_file(const struct stat &a, const struct stat &b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
           a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
           a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

std::optional<std::uint64_t> number(std::string_view s) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

// A file larger than this is not a subuid file: a line per user, about 30 bytes each.
constexpr std::size_t kMaxBytes = 16u << 20;

} // namespace

void SubordinateIds::set_file(const std::string &path) {
    if (path == path_)
        return;
    path_ = path;
    ranges_.clear();
    seen_.reset();
    last_error_.clear();
}

uid_t SubordinateIds::account_of(uid_t uid) {
    if (uid == 0)
        return 0; // a range that holds uid 0 cannot make root anyone's: root keeps its reserve
    refresh();
    for (const Range &r : ranges_)
        if (uid >= r.first && uid - r.first < r.count)
            return r.owner;
    return uid;
}

void SubordinateIds::refresh() {
    if (path_.empty())
        return;
    // No ranges until the file can be read; `why` is logged once until it changes ("": no file,
    // a host where nobody was given a range, which is no news).
    const auto unreadable = [this](const std::string &why) {
        if (!why.empty() && why != last_error_)
            spdlog::warn("cannot read the subordinate uid ranges in {} (config limits.subuid_file): {}; every uid "
                         "has a share of its own until it can",
                         path_, why);
        last_error_ = why;
        ranges_.clear();
        seen_.reset();
    };
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
        return unreadable(errno == ENOENT ? "" : std::strerror(errno));
    if (seen_ && same_file(*seen_, st))
        return;
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return unreadable(std::strerror(errno));
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const std::string why = S_ISREG(st.st_mode) ? std::strerror(errno) : "not a regular file";
        ::close(fd);
        return unreadable(why);
    }
    read(fd);
    ::close(fd);
    seen_ = st;
    last_error_.clear();
}

void SubordinateIds::read(int fd) {
    std::string text;
    if (const int err = runtime::read_rest(fd, text, kMaxBytes); err == E2BIG)
        spdlog::warn("{} (config limits.subuid_file) is longer than {} bytes: only its start is read", path_,
                     kMaxBytes);
    else if (err)
        spdlog::warn("reading {} (config limits.subuid_file): {}", path_, std::strerror(err));
    ranges_.clear();
    std::size_t line_no = 0, skipped = 0;
    for (std::string_view rest = text; !rest.empty();) {
        const std::size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        ++line_no;
        if (line.empty() || line.front() == '#')
            continue;
        const std::size_t c1 = line.find(':'), c2 = c1 == line.npos ? line.npos : line.find(':', c1 + 1);
        const auto skip = [&](const std::string &why) {
            ++skipped;
            spdlog::warn("{} line {} (config limits.subuid_file): {}; the line is skipped", path_, line_no, why);
        };
        if (c2 == line.npos || line.find(':', c2 + 1) != line.npos) {
            skip("not \"owner:first:count\"");
            continue;
        }
        const std::string owner_text(line.substr(0, c1));
        const auto first = number(line.substr(c1 + 1, c2 - c1 - 1));
        const auto count = number(line.substr(c2 + 1));
        // A uid is 32 bits and (uid_t)-1 is no uid.
        if (!first || !count || *count == 0 || *first + *count > 0xffffffffull) {
            skip("the range is not a first uid and a count inside the 32-bit uids");
            continue;
        }
        std::optional<uid_t> owner;
        if (const auto n = number(owner_text); n && *n < 0xffffffffull)
            owner = static_cast<uid_t>(*n);
        else
            owner = lookup_(owner_text);
        if (!owner) {
            skip("no user is called \"" + owner_text + "\"");
            continue;
        }
        if (*owner == 0)
            continue; // root has no share to charge (the header says why)
        ranges_.push_back({static_cast<uid_t>(*first), *count, *owner});
    }
    spdlog::info("read {} from {} (config limits.subuid_file){}", counted(ranges_.size(), "subordinate uid range"),
                 path_, skipped ? ", " + counted(skipped, "line") + " skipped" : std::string{});
}

} // namespace mcastd::frontend

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/state_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <variant>

namespace mcastd::restart {

namespace {

std::string errno_text(const std::string &what, int err) { return what + ": " + std::strerror(err); }

// write(2) until all of `text` is out; 0 or the errno.
int write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno != EINTR)
            return errno;
        if (n > 0)
            text.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

} // namespace

std::string current_boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

StateFile::StateFile(std::filesystem::path dir)
    : dir_(std::move(dir)), path_(dir_ / "state.json"), sets_path_(dir_ / "state.sets") {}

namespace {

std::optional<std::string> read_whole(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return std::move(text).str();
}

void move_aside(const std::filesystem::path &path) { // to PATH.rejected
    std::error_code ec;
    std::filesystem::rename(path, path.string() + ".rejected", ec);
}

// Why a decoded file (the state or the sets log) cannot be used, or "": it could not be
// decoded, or it was written during another boot than `boot_id` (empty: not checked).
template <class T> std::string distrust(const std::variant<T, std::string> &decoded, const std::string &boot_id) {
    if (const auto *why = std::get_if<std::string>(&decoded))
        return *why;
    const std::string &written = std::get<T>(decoded).boot_id;
    if (!boot_id.empty() && written != boot_id)
        return "written during another boot (" + written + "), whose memberships the SA no longer has";
    return {};
}

} // namespace

StateFile::Loaded StateFile::load(const std::string &boot_id) const {
    Loaded out;
    if (const auto text = read_whole(path_)) {
        auto decoded = decode(*text);
        out.set_aside = distrust(decoded, boot_id);
        if (out.set_aside.empty())
            out.state = std::move(std::get<SavedState>(decoded));
        else
            move_aside(path_);
    } // no file: a first start, a stop for good before this one, or a crash before the first write

    const auto text = read_whole(sets_path_);
    if (!text)
        return out;
    auto decoded = decode_sets(*text);
    out.sets_set_aside = distrust(decoded, boot_id);
    if (out.sets_set_aside.empty() && !out.set_aside.empty())
        out.sets_set_aside = "its state file was set aside";
    if (!out.sets_set_aside.empty()) {
        move_aside(sets_path_);
        return out;
    }
    SetsLog &log = std::get<SetsLog>(decoded);
    if (!out.state) {
        out.state.emplace();
        out.state->boot_id = log.boot_id;
        out.state->daemon = log.daemon;
    }
    add_uncertain(*out.state, log.sets);
    out.sets = log.sets.size();
    out.sets_skipped = std::move(log.skipped);
    return out; // the log stays: it holds what no state file has yet, until this instance writes one
}

std::optional<std::string> StateFile::write(const SavedState &state) const {
    const std::string tmp = path_.string() + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno_text("create " + tmp, errno);
    int err = 0;
    encode(state, [&](std::string &piece) {
        if (!err)
            err = write_all(fd, piece);
    });
    // No fsync: /run is a tmpfs, and what a crash of the daemon (not of the kernel) must find is
    // already in the page cache once write() returned.
    if (::close(fd) < 0 && !err)
        err = errno;
    if (err) {
        ::unlink(tmp.c_str());
        return errno_text("write " + tmp, err);
    }
    if (::rename(tmp.c_str(), path_.c_str()) < 0) {
        err = errno;
        ::unlink(tmp.c_str());
        return errno_text("replace " + path_.string(), err);
    }
    ::unlink(sets_path_.c_str()); // covered now; one left behind would only add uncertain bits
    return std::nullopt;
}

std::optional<std::string> StateFile::append(std::string_view header, std::span<const SavedSet> sets) const {
    const int fd = ::open(sets_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno_text("open " + sets_path_.string(), errno);
    struct stat st{};
    std::string text;
    if (::fstat(fd, &st) == 0 && st.st_size == 0)
        text = header;
    for (const SavedSet &s : sets)
        text += encode_set(s);
    int err = write_all(fd, text);
    if (::close(fd) < 0 && !err)
        err = errno;
    return err ? std::optional(errno_text("append to " + sets_path_.string(), err)) : std::nullopt;
}

void StateFile::remove() const {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    std::filesystem::remove(sets_path_, ec);
}

} // namespace mcastd::restart

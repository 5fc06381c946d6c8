// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/state_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <variant>
#include <vector>

#include "runtime/small_file.hpp"

namespace mcastd::restart {

namespace {

namespace fs = std::filesystem;

constexpr const char *kState = "state.json";
constexpr const char *kTemporary = "state.json.tmp";
constexpr const char *kSets = "state.sets"; // the sets log of the release before the change log
constexpr const char *kLog = "state.log";
constexpr const char *kLogTemporary = "state.log.tmp";

std::string errno_text(const std::string &what, int err) {
    // ELOOP from O_NOFOLLOW: "Too many levels of symbolic links" would say the wrong thing.
    return what + ": " + (err == ELOOP ? std::string("it is a symbolic link, which is not followed") : std::strerror(err));
}

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

// "state directory /run/x (owner uid 1001, mode 0775)"
std::string described(const fs::path &dir, const struct stat &st) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "state directory " + dir.string() + " (owner uid " + std::to_string(st.st_uid) + ", mode " + mode + ")";
}

// Opens `dir` as the state directory of a daemon running as `owner`: the descriptor, or -1 with
// `why` saying what is wrong.
int open_dir(const fs::path &dir, uid_t owner, std::string &why) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st{};
    if (fd < 0) {
        const int err = errno;
        if (::lstat(dir.c_str(), &st) != 0) {
            why = "state directory " + dir.string() +
                  (errno == ENOENT ? std::string(" does not exist") : ": " + std::string(std::strerror(errno)));
            return -1;
        }
        if (S_ISLNK(st.st_mode)) {
            std::error_code ec;
            const fs::path target = fs::read_symlink(dir, ec);
            why = described(dir, st) + " is a symbolic link" + (ec ? "" : " to " + target.string()) +
                  ", not a directory: it is not followed (name the directory itself)";
        } else if (!S_ISDIR(st.st_mode)) {
            why = described(dir, st) + " is not a directory";
        } else {
            why = described(dir, st) + " cannot be opened: " + std::strerror(err);
        }
        return -1;
    }
    if (::fstat(fd, &st) != 0) {
        why = "state directory " + dir.string() + ": fstat: " + std::strerror(errno);
        ::close(fd);
        return -1;
    }
    std::vector<std::string> wrong;
    if (st.st_uid != owner)
        wrong.push_back("is owned by uid " + std::to_string(st.st_uid) + ", not by the daemon's uid " +
                        std::to_string(owner));
    if ((st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH))
        wrong.emplace_back("is writable by its group and by others");
    else if (st.st_mode & S_IWGRP)
        wrong.emplace_back("is writable by its group");
    else if (st.st_mode & S_IWOTH)
        wrong.emplace_back("is writable by others");
    if (wrong.empty())
        return fd;
    ::close(fd);
    why = described(dir, st) + " " + wrong[0] + (wrong.size() > 1 ? ", and " + wrong[1].substr(3) : std::string()) +
          ": whoever can write there decides which memberships the daemon deletes at the SA and which sessions it "
          "hands back; use a directory owned by uid " + std::to_string(owner) + " that nobody else may write";
    return -1;
}

} // namespace

std::string current_boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

std::optional<std::string> state_dir_problem(const fs::path &dir, uid_t owner) {
    std::string why;
    const int fd = open_dir(dir, owner, why);
    if (fd < 0)
        return why;
    ::close(fd);
    return std::nullopt;
}

struct StateFile::Dir {
    int fd = -1;
    ~Dir() {
        if (fd >= 0)
            ::close(fd);
    }
};

StateFile::StateFile(fs::path dir, uid_t owner)
    : dir_(std::move(dir)), path_(dir_ / kState), sets_path_(dir_ / kSets), log_path_(dir_ / kLog) {
    auto d = std::make_shared<Dir>();
    std::string why;
    d->fd = open_dir(dir_, owner, why);
    if (d->fd < 0)
        throw std::runtime_error(why);
    fd_ = std::move(d);
}

int StateFile::dir_fd() const { return fd_->fd; }

namespace {

// A file of the state directory, read whole: its text, or why it cannot be used (`problem`),
// or neither when there is no such file.
struct Read {
    std::optional<std::string> text;
    std::string problem;
};

Read read_file(int dir, const char *name) {
    // O_NONBLOCK: a FIFO planted there must not hang the start.
    const int fd = ::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return {};
        return {std::nullopt, errno == ELOOP ? "it is a symbolic link, which is not followed" : std::strerror(errno)};
    }
    Read out;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        out.problem = "it is not a regular file";
    } else {
        std::string text;
        if (const int err = runtime::read_rest(fd, text))
            out.problem = std::string("read: ") + std::strerror(err);
        else
            out.text = std::move(text);
    }
    ::close(fd);
    return out;
}

// To NAME.rejected. rename(2) replaces whatever is there without following it.
void move_aside(int dir, const char *name) { ::renameat(dir, name, dir, (std::string(name) + ".rejected").c_str()); }

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

// A log beside the state file, decoded and trusted; nullopt when there is none or it was set
// aside (renamed, and why in `why`): unreadable, of another boot, or its state file was.
template <class Log, class Decode>
std::optional<Log> read_log(int dir, const char *name, Decode decode, const std::string &boot_id, bool state_set_aside,
                            std::string &why) {
    Read file = read_file(dir, name);
    if (!file.text && file.problem.empty())
        return std::nullopt;
    std::variant<Log, std::string> decoded = file.problem;
    if (file.text)
        decoded = decode(*file.text);
    why = distrust(decoded, boot_id);
    if (why.empty() && state_set_aside)
        why = "its state file was set aside";
    if (!why.empty()) {
        move_aside(dir, name);
        return std::nullopt;
    }
    return std::move(std::get<Log>(decoded));
}

// What a log goes on top of: the file's state, or (the log alone: a crash before the first
// state file) an empty one of the log's boot and daemon.
template <class Log> SavedState &base(std::optional<SavedState> &state, const Log &log) {
    if (!state) {
        state.emplace();
        state->boot_id = log.boot_id;
        state->daemon = log.daemon;
    }
    return *state;
}

} // namespace

StateFile::Loaded StateFile::load(const std::string &boot_id) const {
    Loaded out;
    const int dir = dir_fd();
    Read state = read_file(dir, kState);
    if (state.text) {
        auto decoded = decode(*state.text);
        out.set_aside = distrust(decoded, boot_id);
        if (out.set_aside.empty())
            out.state = std::move(std::get<SavedState>(decoded));
    } else {
        out.set_aside = std::move(state.problem);
    } // no file: a first start, a stop for good before this one, or a crash before the first write
    if (!out.set_aside.empty())
        move_aside(dir, kState);

    // The sets log of the release before (an upgrade): older than any change log beside it.
    if (auto sets = read_log<SetsLog>(dir, kSets, decode_sets, boot_id, !out.set_aside.empty(), out.sets_set_aside)) {
        add_uncertain(base(out.state, *sets), sets->sets);
        out.sets = sets->sets.size();
        out.sets_skipped = std::move(sets->skipped);
    }
    auto log = read_log<ChangeLog>(dir, kLog, decode_log, boot_id, !out.set_aside.empty(), out.log_set_aside);
    if (!log)
        return out;
    const std::uint64_t follows = out.state ? out.state->generation : 0;
    if (log->generation < follows) {
        // A compaction wrote the state file and ended before it replaced the log: the file has
        // all of it.
        out.log_covered = "it follows state file generation " + std::to_string(log->generation) + ", which " +
                          path_.filename().string() + " (generation " + std::to_string(follows) + ") covers";
        ::unlinkat(dir, kLog, 0);
        return out;
    }
    if (log->generation > follows) {
        out.log_set_aside = "it follows state file generation " + std::to_string(log->generation) + ", not " +
                            (out.state ? "generation " + std::to_string(follows) : std::string("a missing one"));
        move_aside(dir, kLog);
        return out;
    }
    replay(base(out.state, *log), log->changes);
    out.changes = log->changes.size();
    out.log_skipped = std::move(log->skipped);
    return out; // the log stays: it holds what no state file has yet, until this instance writes one
}

namespace {

// Writes `text` (by `fill`) to a new `tmp`, then renames it to `name`: 0 or the errno, with
// `what` the step that failed.
template <class F> int replace(int dir, const char *tmp, const char *name, F fill, std::string &what) {
    constexpr int kCreate = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    what = "create";
    int fd = ::openat(dir, tmp, kCreate, 0600);
    if (fd < 0 && errno == EEXIST) {
        // A temporary a crash left behind is replaced; a symbolic link is refused. O_EXCL also
        // keeps the write from going through a hard link to another file.
        struct stat st{};
        if (::fstatat(dir, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            return ELOOP;
        ::unlinkat(dir, tmp, 0);
        fd = ::openat(dir, tmp, kCreate, 0600);
    }
    if (fd < 0)
        return errno;
    what = "write";
    int err = fill(fd);
    // No fsync: /run is a tmpfs, and what a crash of the daemon (not of the kernel) must find is
    // already in the page cache once write() returned.
    if (::close(fd) < 0 && !err)
        err = errno;
    if (!err && ::renameat(dir, tmp, dir, name) < 0) { // replaces a symbolic link without following it
        what = "replace";
        err = errno;
    }
    if (err)
        ::unlinkat(dir, tmp, 0);
    return err;
}

} // namespace

std::optional<std::string> StateFile::write(const SavedState &state, Written *written) const {
    const int dir = dir_fd();
    Written out;
    std::string what;
    int err = replace(dir, kTemporary, kState, [&](int fd) {
        int e = 0;
        encode(state, [&](std::string &piece) {
            out.state_bytes += piece.size();
            if (!e)
                e = write_all(fd, piece);
        });
        return e;
    }, what);
    if (written)
        *written = out;
    if (err)
        return errno_text(what + " " + (what == "replace" ? path_.string() : (dir_ / kTemporary).string()), err);
    out.replaced = true;
    // The new generation's log; until it is in place, the old one (covered now) must not be
    // appended to: a crash would find its lines older than the file and drop them.
    const std::string header = encode_log_header(state.boot_id, state.daemon, state.generation);
    err = replace(dir, kLogTemporary, kLog, [&](int fd) { return write_all(fd, header); }, what);
    ::unlinkat(dir, kSets, 0); // covered now; one left behind would only add uncertain bits
    if (err) {
        ::unlinkat(dir, kLog, 0); // the next append starts the new generation's log
        if (written)
            *written = out;
        return errno_text(what + " " + log_path_.string(), err);
    }
    out.log_bytes = header.size();
    if (written)
        *written = out;
    return std::nullopt;
}

std::optional<std::string> StateFile::append(std::string_view header, std::string_view lines) const {
    const int fd = ::openat(dir_fd(), kLog, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno_text("open " + log_path_.string(), errno);
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        ::close(fd);
        return "open " + log_path_.string() + ": it is not a regular file of its own (a FIFO, a device, a hard link)";
    }
    int err = 0;
    if (st.st_size == 0) {
        std::string text(header);
        text += lines;
        err = write_all(fd, text);
    } else {
        err = write_all(fd, lines);
    }
    if (::close(fd) < 0 && !err)
        err = errno;
    return err ? std::optional(errno_text("append to " + log_path_.string(), err)) : std::nullopt;
}

void StateFile::remove() const {
    ::unlinkat(dir_fd(), kState, 0);
    ::unlinkat(dir_fd(), kSets, 0);
    ::unlinkat(dir_fd(), kLog, 0);
}

} // namespace mcastd::restart

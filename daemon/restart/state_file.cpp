#include "restart/state_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mcastd::restart {

namespace {

std::string errno_text(const std::string &what, int err) { return what + ": " + std::strerror(err); }

} // namespace

std::string current_boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

StateFile::StateFile(std::filesystem::path dir) : dir_(std::move(dir)), path_(dir_ / "state.json") {}

StateFile::Loaded StateFile::load(const std::string &boot_id) const {
    Loaded out;
    std::ifstream in(path_, std::ios::binary);
    if (!in)
        return out; // no file: a first start (or a stop for good before this one)
    std::ostringstream text;
    text << in.rdbuf();
    auto decoded = decode(text.str());
    if (auto *why = std::get_if<std::string>(&decoded)) {
        out.set_aside = *why;
    } else {
        auto &st = std::get<SavedState>(decoded);
        if (!boot_id.empty() && st.boot_id != boot_id)
            out.set_aside = "written during another boot (" + st.boot_id + "), whose memberships the SA no longer has";
        else
            out.state = std::move(st);
    }
    if (!out.set_aside.empty()) {
        std::error_code ec;
        std::filesystem::rename(path_, path_.string() + ".rejected", ec);
    }
    return out;
}

std::optional<std::string> StateFile::write(const SavedState &state) const {
    const std::string tmp = path_.string() + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno_text("create " + tmp, errno);
    int err = 0;
    encode(state, [&](std::string &piece) {
        std::size_t done = 0;
        while (!err && done < piece.size()) {
            const ssize_t n = ::write(fd, piece.data() + done, piece.size() - done);
            if (n < 0 && errno != EINTR)
                err = errno;
            else if (n > 0)
                done += static_cast<std::size_t>(n);
        }
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
    return std::nullopt;
}

void StateFile::remove() const {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
}

} // namespace mcastd::restart

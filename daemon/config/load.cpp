// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reading the config file: the one place config touches the file system.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "config.hpp"

namespace mcastd::config {

namespace {

// A config is a few kilobytes; anything this large is the wrong file (or /dev/zero).
constexpr off_t kMaxConfigBytes = 1 << 20;

Error read_error(const std::string &path, const char *what, int err) {
    return Error{Errc::internal, path + ": " + what + ": " + std::strerror(err), std::nullopt};
}

} // namespace

ConfigResult load_config(const std::string &path, bool path_is_default) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT && path_is_default) {
            DaemonConfig c;
            c.origin = "built-in defaults (no " + path + ")";
            return c;
        }
        return read_error(path, "cannot open", err);
    }
    struct stat st{};
    if (fstat(fd, &st) < 0) {
        const int err = errno;
        close(fd);
        return read_error(path, "cannot stat", err);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return Error{Errc::invalid_argument, path + ": not a regular file", std::nullopt};
    }
    if (st.st_size > kMaxConfigBytes) {
        close(fd);
        return Error{Errc::invalid_argument,
                     path + ": " + std::to_string(st.st_size) + " bytes, more than a config " +
                         "file may hold (" + std::to_string(kMaxConfigBytes) + ")",
                     std::nullopt};
    }
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = read(fd, text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            const int err = errno;
            close(fd);
            return read_error(path, "cannot read", err);
        }
        if (n == 0) // shrank while we read: parse what there is
            break;
        got += static_cast<std::size_t>(n);
    }
    close(fd);
    text.resize(got);
    return parse_config(text, path);
}

} // namespace mcastd::config

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/small_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace mcastd::runtime {

int read_small_file(int dir, const char *name, std::string &out) {
    const int fd = ::openat(dir, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    out.clear();
    const int err = read_rest(fd, out);
    ::close(fd);
    return err;
}

int read_rest(int fd, std::string &out, std::size_t max_bytes) {
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return 0;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > max_bytes)
            return E2BIG;
    }
}

} // namespace mcastd::runtime

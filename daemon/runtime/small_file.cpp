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
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            return err;
        }
        if (n == 0)
            break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return 0;
}

} // namespace mcastd::runtime

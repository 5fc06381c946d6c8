// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ctl {

namespace {

[[noreturn]] void fail(int err, const std::string &what) {
    throw std::system_error(err, std::generic_category(), what);
}

} // namespace

void write_file_atomically(const std::string &path, const std::string &text, mode_t mode) {
    // ".rdma-mcastctl.XXXXXX" beside the target: the same file system, and a name the textfile
    // collector skips (it reads *.prom only).
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    std::string temp = dir + ".rdma-mcastctl.XXXXXX";
    const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
    if (fd < 0)
        fail(errno, "cannot create a temporary file in " + (dir.empty() ? std::string(".") : dir));
    const auto abandon = [&](int err, const std::string &what) {
        ::close(fd);
        ::unlink(temp.c_str());
        fail(err, what);
    };
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            abandon(errno, "write " + temp);
        done += static_cast<std::size_t>(n);
    }
    // mkostemp made it 0600: readable by its owner only, and node_exporter runs as another user.
    if (::fchmod(fd, mode) < 0)
        abandon(errno, "chmod " + temp);
    if (::fsync(fd) < 0)
        abandon(errno, "fsync " + temp);
    if (::close(fd) < 0) {
        const int err = errno;
        ::unlink(temp.c_str());
        fail(err, "close " + temp);
    }
    if (::rename(temp.c_str(), path.c_str()) < 0) {
        const int err = errno;
        ::unlink(temp.c_str());
        fail(err, "rename " + temp + " to " + path);
    }
}

} // namespace ctl

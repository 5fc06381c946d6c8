// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-stuck-fuse: a user's FUSE file system whose server never answers the daemon's flush,
// to pass the daemon a descriptor whose close never ends. Needs root (it mounts) and /dev/fuse.
//
//   mcastd-stuck-fuse SOCKET MOUNTPOINT
//
// In a mount namespace of its own (the host never sees the mount) it mounts a file system of
// one file on MOUNTPOINT and serves it from /dev/fuse, speaking the kernel's FUSE protocol
// (linux/fuse.h) itself. A child process opens the file, sends a `status` to the daemon on
// SOCKET with the descriptor attached (SCM_RIGHTS), prints "passed" once answered, and closes
// its own copy (its flush is answered). Every flush from any other process is left unanswered,
// and said: "held-flush pid=PID". A close waits for its flush, uninterruptibly (the kernel
// forces FUSE flushes), so the daemon's close of the descriptor does not end while this runs.
// EOF on stdin exits; closing /dev/fuse then aborts the connection, which ends that close.
//
// Exit 0 on EOF, 77 when FUSE cannot be mounted here (no /dev/fuse, not root), 1 otherwise.
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "scm_rights.hpp"
#include "sim/daemon_harness.hpp"

namespace {

constexpr std::uint64_t kRoot = FUSE_ROOT_ID, kFile = 2;
constexpr const char *kFileName = "held";

int fuse_fd = -1;

void reply(std::uint64_t unique, int error, const void *body = nullptr, std::size_t size = 0) {
    fuse_out_header out{};
    out.len = static_cast<std::uint32_t>(sizeof out + size);
    out.error = error;
    out.unique = unique;
    std::vector<char> msg(sizeof out + size);
    std::memcpy(msg.data(), &out, sizeof out);
    if (size)
        std::memcpy(msg.data() + sizeof out, body, size);
    // ENOENT: the request was interrupted meanwhile; nothing to do.
    if (::write(fuse_fd, msg.data(), msg.size()) < 0 && errno != ENOENT)
        std::fprintf(stderr, "mcastd-stuck-fuse: reply to %llu: %s\n", static_cast<unsigned long long>(unique),
                     std::strerror(errno));
}

fuse_attr attr_of(std::uint64_t node) {
    fuse_attr a{};
    a.ino = node;
    a.mode = node == kRoot ? (S_IFDIR | 0755) : (S_IFREG | 0644);
    a.nlink = node == kRoot ? 2 : 1;
    a.blksize = 4096;
    return a;
}

// The child: passes the file to the daemon with a status, then closes its own copy.
[[noreturn]] void pass(const char *socket, const std::string &file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        std::fprintf(stderr, "mcastd-stuck-fuse: open %s: %s\n", file.c_str(), std::strerror(errno));
        ::_exit(1);
    }
    try {
        mcastd::sim::RawClient c(socket);
        c.hello();
        const std::string req = R"({"id":7,"op":"status"})";
        mcastd::test::ScmRightsMessage<1> m(req);
        m.put(std::span<const int>(&fd, 1));
        if (::sendmsg(c.fd(), &m.msg, MSG_NOSIGNAL) < 0)
            throw std::system_error(errno, std::generic_category(), "sendmsg");
        while (const auto answer = c.receive())
            if (answer->find("\"id\":7") != std::string::npos) {
                std::printf("passed %s\n", answer->c_str());
                std::fflush(stdout);
                ::close(fd); // this flush is answered
                ::_exit(0);
            }
        throw std::runtime_error("no answer to the status");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-stuck-fuse: %s\n", e.what());
        ::_exit(1);
    }
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s SOCKET MOUNTPOINT\n", argv[0]);
        return 2;
    }
    const std::string mountpoint = argv[2];
    if (::unshare(CLONE_NEWNS) < 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
        std::fprintf(stderr, "mcastd-stuck-fuse: a mount namespace: %s\n", std::strerror(errno));
        return 77;
    }
    fuse_fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fuse_fd < 0) {
        std::fprintf(stderr, "mcastd-stuck-fuse: /dev/fuse: %s\n", std::strerror(errno));
        return 77;
    }
    ::mkdir(mountpoint.c_str(), 0755);
    const std::string opts = "fd=" + std::to_string(fuse_fd) + ",rootmode=40000,user_id=0,group_id=0";
    if (::mount("mcastd-stuck", mountpoint.c_str(), "fuse.mcastd-stuck", MS_NOSUID | MS_NODEV, opts.c_str()) < 0) {
        std::fprintf(stderr, "mcastd-stuck-fuse: mount: %s\n", std::strerror(errno));
        return 77;
    }
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child < 0) {
        std::perror("mcastd-stuck-fuse: fork");
        return 1;
    }
    if (child == 0)
        pass(argv[1], mountpoint + "/" + kFileName);

    std::vector<char> buf(FUSE_MIN_READ_BUFFER + 65536);
    for (;;) {
        pollfd p[2] = {{fuse_fd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            std::perror("mcastd-stuck-fuse: poll");
            return 1;
        }
        if (p[1].revents) {
            char c;
            if (::read(STDIN_FILENO, &c, 1) <= 0) {
                ::waitpid(child, nullptr, 0);
                return 0; // closing /dev/fuse aborts the connection: every waiting flush ends
            }
        }
        if (!p[0].revents)
            continue;
        const ssize_t n = ::read(fuse_fd, buf.data(), buf.size());
        if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) {
            if (n < 0 && (errno == EINTR || errno == ENOENT))
                continue;
            std::fprintf(stderr, "mcastd-stuck-fuse: read /dev/fuse: %s\n", n < 0 ? std::strerror(errno) : "short");
            return 1;
        }
        fuse_in_header in;
        std::memcpy(&in, buf.data(), sizeof in);
        const char *arg = buf.data() + sizeof in;
        switch (in.opcode) {
        case FUSE_INIT: {
            fuse_init_out out{};
            out.major = FUSE_KERNEL_VERSION;
            out.minor = FUSE_KERNEL_MINOR_VERSION;
            out.max_write = 4096;
            out.max_background = 16;
            out.congestion_threshold = 12;
            out.time_gran = 1;
            reply(in.unique, 0, &out, sizeof out);
            break;
        }
        case FUSE_LOOKUP:
            if (in.nodeid == kRoot && std::strcmp(arg, kFileName) == 0) {
                fuse_entry_out out{};
                out.nodeid = kFile;
                out.attr = attr_of(kFile);
                reply(in.unique, 0, &out, sizeof out);
            } else {
                reply(in.unique, -ENOENT);
            }
            break;
        case FUSE_GETATTR: {
            fuse_attr_out out{};
            out.attr = attr_of(in.nodeid);
            reply(in.unique, 0, &out, sizeof out);
            break;
        }
        case FUSE_OPEN:
        case FUSE_OPENDIR: {
            fuse_open_out out{};
            out.fh = 1;
            reply(in.unique, 0, &out, sizeof out);
            break;
        }
        case FUSE_FLUSH:
            if (static_cast<pid_t>(in.pid) == child) {
                reply(in.unique, 0);
            } else {
                std::printf("held-flush pid=%u\n", in.pid);
                std::fflush(stdout);
            }
            break;
        case FUSE_RELEASE:
        case FUSE_RELEASEDIR:
            reply(in.unique, 0);
            break;
        case FUSE_FORGET:
        case FUSE_BATCH_FORGET:
        case FUSE_INTERRUPT: // the flush stays unanswered: the kernel waits on regardless
            break;
        default:
            reply(in.unique, -ENOSYS);
        }
    }
}

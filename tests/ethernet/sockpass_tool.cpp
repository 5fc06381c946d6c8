// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-eth-sockpass PATH 4|6
//
// Makes an unbound UDP socket (AF_INET or AF_INET6) in the network namespace it runs in and
// passes it with SCM_RIGHTS over a connection to the Unix stream socket PATH, then exits 0. A
// socket belongs to the namespace it was made in, whoever holds it later: the Ethernet bed
// checks with it that a process outside a host's namespace can join groups there through such
// a socket (doc/ethernet-bed.md §4). Exits 1 with errno's text on failure, 2 for bad arguments.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "ethernet/fd_passing.hpp"

namespace {

int fail(const std::string &what) {
    std::fprintf(stderr, "mcastd-eth-sockpass: %s: %s\n", what.c_str(), std::strerror(errno));
    return 1;
}

} // namespace

int main(int argc, char **argv) {
    const std::string family = argc == 3 ? argv[2] : "";
    if (argc != 3 || (family != "4" && family != "6") || std::strlen(argv[1]) >= sizeof(sockaddr_un{}.sun_path)) {
        std::fprintf(stderr, "usage: mcastd-eth-sockpass PATH 4|6\n");
        return 2;
    }
    const int udp = ::socket(family == "4" ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (udp < 0)
        return fail("socket(AF_INET" + std::string(family == "6" ? "6" : "") + ")");
    const int conn = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    std::strcpy(to.sun_path, argv[1]);
    if (conn < 0 || ::connect(conn, reinterpret_cast<const sockaddr *>(&to), sizeof to) < 0)
        return fail(std::string("connect ") + argv[1]);
    if (const int rc = mcastd::eth::send_fd(conn, udp); rc < 0) {
        errno = -rc;
        return fail(std::string("sendmsg SCM_RIGHTS to ") + argv[1]);
    }
    return 0;
}

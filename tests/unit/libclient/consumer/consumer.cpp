// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A C++17 program on the installed header-only wrappers: it must compile cleanly and, with no
// daemon at the given path, get a typed error that names the path.
#include <cstdio>
#include <cstring>

#include <rdmamcast/client.hpp>
#include <rdmamcast/verbs.hpp>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "/nonexistent/rdma-mcastd.sock";
    std::printf("librdmamcast %s\n", rdmamcast_version());
    rdmamcast::AttachSet attached; // needs no device until a QP is added
    (void)attached;
    try {
        rdmamcast::Client client(path);
        auto params = rdmamcast::JoinParams("mlx5_0", 1).create().qkey(0x1234);
        (void)params;
        std::printf("unexpectedly connected to %s\n", client.socket_path().c_str());
        return 1;
    } catch (const rdmamcast::Error &e) {
        std::printf("as expected: %s\n", e.what());
        return e.code() == RDMAMCAST_E_SYSTEM && std::strstr(e.what(), path) ? 0 : 1;
    }
}

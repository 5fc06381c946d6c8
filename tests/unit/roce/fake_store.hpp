// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A model of the service manager's fd store for the kernel memberships' sockets
// (roce::SocketStore), over the kernel model of fake_syscalls.hpp.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <map>

#include "fake_syscalls.hpp"
#include "roce/kernel_memberships.hpp"

namespace mcastd::test {

// The fd store: a copy of each socket stored, by id, until it is removed.
class FakeStore final : public roce::SocketStore {
public:
    explicit FakeStore(FakeSyscalls &sys) : sys_(sys) {}
    ~FakeStore() {
        for (const auto &[id, fd] : fds)
            ::close(fd);
    }
    void store(std::uint64_t socket, int fd) override {
        ASSERT_FALSE(fds.count(socket)) << "socket id " << socket << " stored twice";
        fds[socket] = sys_.duplicate(fd);
    }
    void adopted(std::uint64_t socket) override {
        EXPECT_TRUE(fds.count(socket)) << "socket " << socket << " adopted but never stored";
        ++adoptions;
    }
    void remove(std::uint64_t socket) override {
        auto it = fds.find(socket);
        ASSERT_NE(it, fds.end()) << "socket " << socket << " removed but never stored";
        ::close(it->second);
        fds.erase(it);
        ++removed;
    }
    // What the next instance gets: copies (the store keeps its own until they are removed).
    std::map<std::uint64_t, int> passed() {
        std::map<std::uint64_t, int> out;
        for (const auto &[id, fd] : fds)
            out[id] = sys_.duplicate(fd);
        return out;
    }
    // The service manager passes its copies and forgets the ones the new instance does not
    // store again: here the new instance re-stores adopted ids, so start from empty.
    std::map<std::uint64_t, int> fds;
    unsigned removed = 0, adoptions = 0;

private:
    FakeSyscalls &sys_;
};

} // namespace mcastd::test

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Shared by the runtime tests: a safety net so that a lost wakeup fails the test quickly
// instead of hanging until the ctest timeout. It is never how a test waits for something.
#pragma once

#include <gtest/gtest.h>

#include <chrono>

#include "runtime/event_loop.hpp"

namespace mcastd::runtime::test {

inline constexpr int kGuardExit = 99;

inline Timers::Id arm_guard(EventLoop &loop, Duration limit = std::chrono::seconds(10)) {
    return loop.timers().start(limit, [&loop] {
        ADD_FAILURE() << "the loop was still running when the guard timer fired";
        loop.exit(kGuardExit);
    });
}

} // namespace mcastd::runtime::test

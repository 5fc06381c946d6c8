// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a fuzz target asserts besides "no crash, no sanitizer report": properties that must
// hold for every input (a decoded value re-encodes to a fixed point, an error names a field
// the way PROTOCOL.md says). A violated one aborts, which libFuzzer and the standalone driver
// both report as a failing input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n", __FILE__, __LINE__,       \
                         #cond);                                                                   \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The whole of a small kernel file (/proc, sysfs): what the daemon reads of its clients'
// processes and of its devices' ports. One page or so; no size limit beyond what the file has.
// Beside it, the read loop of every file the daemon reads whole (the restart state, the
// subordinate uid ranges), each opened as its caller needs.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

namespace mcastd::runtime {

// Reads `name` (relative to the directory `dir`, or AT_FDCWD) into `out`. Returns 0, or the
// errno of the failed open or read: a sysfs attribute may open and then fail to read (an unused
// GID entry's type gives EINVAL).
int read_small_file(int dir, const char *name, std::string &out);

// Appends the rest of the open file `fd` to `out`. Returns 0 at its end; E2BIG once `out` holds
// more than `max_bytes` (it stops there, a read's worth past it); or the errno of a failed read
// (what came before it stays in `out`).
int read_rest(int fd, std::string &out, std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

} // namespace mcastd::runtime

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The whole of a small kernel file (/proc, sysfs): what the daemon reads of its clients'
// processes and of its devices' ports. One page or so; no size limit beyond what the file has.
#pragma once

#include <string>

namespace mcastd::runtime {

// Reads `name` (relative to the directory `dir`, or AT_FDCWD) into `out`. Returns 0, or the
// errno of the failed open or read: a sysfs attribute may open and then fail to read (an unused
// GID entry's type gives EINVAL).
int read_small_file(int dir, const char *name, std::string &out);

} // namespace mcastd::runtime

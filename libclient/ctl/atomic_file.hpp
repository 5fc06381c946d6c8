// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Replacing a file so that a reader never sees it half written: the text goes into a temporary
// file in the same directory, which is flushed and then renamed over the target (rename(2) is
// atomic within a file system). What node_exporter's textfile collector asks of a .prom file.
#pragma once

#include <sys/types.h>

#include <string>

namespace ctl {

// Writes `text` to `path` atomically, as a file of mode `mode` (umask not applied). On failure,
// throws std::system_error naming the path and the step, and leaves neither a temporary file
// nor a changed `path` behind.
void write_file_atomically(const std::string &path, const std::string &text, mode_t mode = 0644);

} // namespace ctl

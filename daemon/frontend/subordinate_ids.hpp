// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Subordinate uid ranges (subuid(5), config limits.subuid_file). A user may map the uids of its
// range into a user namespace of its own (newuidmap(1), as rootless containers do), and its
// processes then reach the daemon as those host uids, keeping their supplementary groups. Were
// each of them a uid of its own, a user with a range of 65,536 would have 65,536 shares of
// everything (doc/architecture.md §12). So a uid inside a user's range is charged to that user.
//
// The file is the source newuidmap itself trusts, so the ranges the daemon charges are the ones
// a user can actually use. It is read again whenever it changed (useradd adds a range to it), as
// a client connects. A range of root's is left alone: root has no share, and charging root would
// lift every limit from the range's uids; they keep shares of their own, as uids outside any
// range do.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frontend/user_names.hpp"

namespace mcastd::frontend {

class SubordinateIds {
public:
    using Lookup = std::function<std::optional<uid_t>(const std::string &)>;

    explicit SubordinateIds(std::string path = {}, Lookup lookup = passwd_uid)
        : path_(std::move(path)), lookup_(std::move(lookup)) {}

    // The file to read; "" reads none, and every uid is its own account.
    void set_file(const std::string &path);
    // The uid whose share `uid`'s use takes: the owner of the first range listed that holds
    // `uid`, or `uid` itself. Reads the file again first when it changed.
    uid_t account_of(uid_t uid);
    // The ranges read (for the tests and the log).
    std::size_t ranges() const { return ranges_.size(); }

private:
    struct Range {
        uid_t first;
        std::uint64_t count;
        uid_t owner;
    };
    void refresh();
    void read(int fd);

    std::string path_;
    Lookup lookup_;
    std::vector<Range> ranges_;
    // What the file was when it was read: device, inode, size, modification and change times.
    std::optional<struct stat> seen_;
    std::string last_error_; // logged once until it changes
};

} // namespace mcastd::frontend

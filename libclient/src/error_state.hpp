// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The error a handle reports through rdmamcast_last_error(): the public struct plus the
// strings it points into, and the mapping from protocol errors to codes and errnos.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"
#include "protocol.hpp"
#include "rdmamcast/client.h"

namespace rdmamcast::detail {

// Daemon error code -> the C enum and the errno a call returns for it.
rdmamcast_errc to_c_errc(mcastd::Errc code);
int errno_of(rdmamcast_errc code);

class ErrorState {
public:
    ErrorState() { clear(); }
    ErrorState(const ErrorState &) = delete;
    ErrorState &operator=(const ErrorState &) = delete;

    void clear();

    // Each returns the negative value the failing call should return.
    // A failure the daemon reported.
    int set_failure(const mcastd::proto::Failure &failure);
    // A failure of the library's own, with `err` < 0 and a message naming the cause.
    int set(rdmamcast_errc code, int err, std::string message, std::string field = {});
    // A failed system call: code DISCONNECTED for errnos that mean the connection is gone,
    // else SYSTEM. The message is "<context>: <strerror>".
    int set_errno(int err, const std::string &context);

    // Copies another state (the handle's, when rdmamcast_connect() fails after connecting).
    void assign(const ErrorState &other);
    // Adds context to the message of the error already set.
    void append_message(const std::string &more);

    const rdmamcast_error *get() const { return &pub_; }

private:
    void publish();

    rdmamcast_error pub_{};
    std::string code_name_, message_, field_, sa_status_name_, rule_, quota_;
    std::vector<unsigned> versions_;
    bool clean_ = false; // clear() has run and nothing was published since
};

bool is_disconnect(int err);

} // namespace rdmamcast::detail

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "error_state.hpp"

#include <cerrno>
#include <cstring>

#include "common/sa_status.hpp"

namespace rdmamcast::detail {

namespace {

struct CodeInfo {
    rdmamcast_errc code;
    int err; // positive errno
    const char *name;
    const char *sentence;
};

// One table for names, errnos and sentences, so the three cannot drift apart. The daemon's
// codes come first in Errc order (PROTOCOL.md's), which to_c_errc relies on.
constexpr CodeInfo kCodes[] = {
    {RDMAMCAST_E_INVALID_ARGUMENT, EINVAL, "invalid-argument",
     "a request or argument is malformed or out of range"},
    {RDMAMCAST_E_NO_SUCH_DEVICE, ENODEV, "no-such-device",
     "the daemon has no InfiniBand device of that name"},
    {RDMAMCAST_E_NO_SUCH_PORT, ENXIO, "no-such-port",
     "the device has no such port, or the daemon does not serve it"},
    {RDMAMCAST_E_PORT_NOT_ACTIVE, ENETDOWN, "port-not-active",
     "the port is not ACTIVE with a subnet manager"},
    {RDMAMCAST_E_CONFLICT, EEXIST, "conflict", "the request contradicts the group's record"},
    {RDMAMCAST_E_SA_ERROR, EREMOTEIO, "sa-error", "the SA answered with a non-zero status"},
    {RDMAMCAST_E_SA_TIMEOUT, ETIMEDOUT, "sa-timeout",
     "the SA did not answer within the daemon's retry budget"},
    {RDMAMCAST_E_DENIED, EACCES, "denied", "the daemon's policy refuses the caller or the group"},
    {RDMAMCAST_E_TOO_LARGE, EMSGSIZE, "too-large", "the request was longer than the daemon accepts"},
    {RDMAMCAST_E_UNSUPPORTED_VERSION, EPROTONOSUPPORT, "unsupported-version",
     "the daemon serves none of the protocol versions this library speaks"},
    {RDMAMCAST_E_NOT_FOUND, ENOENT, "not-found", "no membership with that id on this connection"},
    {RDMAMCAST_E_CANCELLED, ECANCELED, "cancelled", "the join was withdrawn before it completed"},
    {RDMAMCAST_E_LIMIT, ENOSPC, "limit", "a daemon limit was reached"},
    {RDMAMCAST_E_INTERNAL, EIO, "internal", "the daemon hit a bug or an unexpected system error"},
    {RDMAMCAST_E_UNKNOWN, EIO, "unknown", "the daemon reported an error this library does not know"},
    {RDMAMCAST_E_SYSTEM, EIO, "system", "a system call failed"},
    {RDMAMCAST_E_PROTOCOL, EPROTO, "protocol", "the daemon sent a message this library cannot decode"},
    {RDMAMCAST_E_DISCONNECTED, ECONNRESET, "disconnected", "the connection to the daemon is closed"},
    {RDMAMCAST_E_ABI, EINVAL, "abi",
     "the program was built against a newer librdmamcast than the one it runs with"},
};

const CodeInfo *find(rdmamcast_errc code) {
    for (const auto &c : kCodes)
        if (c.code == code)
            return &c;
    return nullptr;
}

} // namespace

rdmamcast_errc to_c_errc(mcastd::Errc code) {
    static_assert(static_cast<int>(mcastd::Errc::invalid_argument) + 1 == RDMAMCAST_E_INVALID_ARGUMENT);
    static_assert(static_cast<int>(mcastd::Errc::sa_error) + 1 == RDMAMCAST_E_SA_ERROR);
    static_assert(static_cast<int>(mcastd::Errc::internal) + 1 == RDMAMCAST_E_INTERNAL);
    return static_cast<rdmamcast_errc>(static_cast<int>(code) + 1);
}

int errno_of(rdmamcast_errc code) {
    const CodeInfo *c = find(code);
    return c ? c->err : EIO;
}

bool is_disconnect(int err) {
    return err == -ECONNRESET || err == -EPIPE || err == -ENOTCONN;
}

void ErrorState::clear() {
    // Every call of the API clears its handle's error first; most find it clear already.
    if (clean_)
        return;
    code_name_.clear();
    message_.clear();
    field_.clear();
    sa_status_name_.clear();
    versions_.clear();
    rule_.clear();
    quota_.clear();
    pub_ = rdmamcast_error{};
    publish();
    clean_ = true;
}

void ErrorState::publish() {
    clean_ = false;
    pub_.code_name = code_name_.c_str();
    pub_.message = message_.c_str();
    pub_.field = field_.c_str();
    pub_.sa_status_name = sa_status_name_.c_str();
    pub_.num_versions = versions_.size();
    pub_.versions = versions_.empty() ? nullptr : versions_.data();
    pub_.rule = rule_.c_str();
    pub_.quota = quota_.c_str();
}

void ErrorState::assign(const ErrorState &other) {
    if (this == &other)
        return;
    pub_ = other.pub_;
    code_name_ = other.code_name_;
    message_ = other.message_;
    field_ = other.field_;
    sa_status_name_ = other.sa_status_name_;
    versions_ = other.versions_;
    rule_ = other.rule_;
    quota_ = other.quota_;
    publish();
}

void ErrorState::append_message(const std::string &more) {
    message_ += more;
    publish();
}

int ErrorState::set_failure(const mcastd::proto::Failure &failure) {
    clear();
    pub_.code = to_c_errc(failure.error.code);
    pub_.err = -errno_of(pub_.code);
    code_name_ = mcastd::errc_name(failure.error.code);
    message_ = failure.error.message;
    field_ = failure.field;
    if (failure.error.sa_status) {
        pub_.has_sa_status = true;
        pub_.sa_status = *failure.error.sa_status;
        sa_status_name_ = mcastd::sa_status_name(*failure.error.sa_status);
    }
    versions_ = failure.versions;
    if (const auto &p = failure.error.policy) {
        rule_ = p->rule;
        quota_ = p->quota;
        pub_.limit = p->quota.empty() ? 0 : p->limit;
    }
    publish();
    return pub_.err;
}

int ErrorState::set(rdmamcast_errc code, int err, std::string message, std::string field) {
    clear();
    pub_.code = code;
    pub_.err = err;
    code_name_ = rdmamcast_errc_name(code);
    message_ = std::move(message);
    field_ = std::move(field);
    publish();
    return err;
}

int ErrorState::set_errno(int err, const std::string &context) {
    return set(is_disconnect(err) ? RDMAMCAST_E_DISCONNECTED : RDMAMCAST_E_SYSTEM, err,
               context + ": " + std::strerror(-err));
}

} // namespace rdmamcast::detail

extern "C" {

const char *rdmamcast_errc_name(rdmamcast_errc code) {
    const auto *c = rdmamcast::detail::find(code);
    return c ? c->name : "";
}

const char *rdmamcast_strerror(rdmamcast_errc code) {
    if (code == RDMAMCAST_E_NONE)
        return "success";
    const auto *c = rdmamcast::detail::find(code);
    return c ? c->sentence : "unknown error code";
}

} // extern "C"

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A fake sa::MadTransport for unit tests: it records every send and lets the test play the
// fabric (answer, bounce, stay silent) by calling deliver() or bounce().
//
// Like the kernel and umad2sim, it can rewrite the upper 32 TID bits of what it delivers
// (rewrite_tid_high), so tests exercise matching on the low 32 bits.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <stdexcept>
#include <vector>

#include "sa/mad_transport.hpp"

namespace mcastd::test {

class FakeMadTransport final : public sa::MadTransport {
public:
    struct Sent {
        PortIndex port = 0;
        sa::MadBuf mad{};
        sa::MadAddress addr;
        unsigned timeout_ms = 0;
        int result = 0; // what send() returned

        std::uint64_t tid() const {
            std::uint64_t v = 0;
            for (int i = 8; i < 16; ++i)
                v = v << 8 | mad[static_cast<std::size_t>(i)];
            return v;
        }
        std::uint8_t mgmt_class() const { return mad[1]; }
        std::uint8_t method() const { return mad[3]; }
    };

    int send(PortIndex port, std::span<const std::uint8_t> mad, const sa::MadAddress &addr,
             unsigned timeout_ms) override {
        Sent s;
        s.port = port;
        if (mad.size() != s.mad.size())
            throw std::logic_error("FakeMadTransport: send of a MAD that is not 256 bytes");
        std::memcpy(s.mad.data(), mad.data(), mad.size());
        s.addr = addr;
        s.timeout_ms = timeout_ms;
        if (!results_.empty()) {
            s.result = results_.front();
            results_.pop_front();
        }
        sent_.push_back(s);
        return s.result;
    }

    void set_receiver(Receiver r) override { receiver_ = std::move(r); }
    bool has_receiver() const { return static_cast<bool>(receiver_); }

    // The next sends return these values (0 or a negative errno), in order; then 0 again.
    void fail_next_sends(std::vector<int> results) { results_.assign(results.begin(), results.end()); }

    // Hands a MAD to the receiver as the transport's receive thread would (via the loop).
    void deliver(PortIndex port, std::span<const std::uint8_t> mad, int status = 0) {
        if (!receiver_)
            throw std::logic_error("FakeMadTransport: no receiver");
        std::vector<std::uint8_t> copy(mad.begin(), mad.end());
        if (rewrite_tid_high && copy.size() >= 16)
            for (std::size_t i = 8; i < 12; ++i)
                copy[i] = static_cast<std::uint8_t>(tid_high_pattern >> (8 * (11 - i)));
        receiver_(port, copy, status);
    }

    // Returns a sent MAD to the receiver unchanged with a non-zero status, as umad2sim does
    // with an undeliverable MAD (doc/testbed.md §5, quirk 5).
    void bounce(const Sent &s, int status = 110) { deliver(s.port, s.mad, status); }

    const std::vector<Sent> &sent() const { return sent_; }
    const Sent &last() const {
        if (sent_.empty())
            throw std::logic_error("FakeMadTransport: nothing sent");
        return sent_.back();
    }
    void clear_sent() { sent_.clear(); }

    // The upper TID bits the "kernel" writes into delivered MADs.
    bool rewrite_tid_high = true;
    std::uint32_t tid_high_pattern = 0xdeadbeef;

private:
    Receiver receiver_;
    std::vector<Sent> sent_;
    std::deque<int> results_;
};

} // namespace mcastd::test

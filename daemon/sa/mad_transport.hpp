// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Raw MAD send/receive per port. The libibumad implementation (umad_transport.hpp) owns the
// umad fds and one receive thread per port; tests use a fake. Everything above this line
// (transactions, codecs) is single-threaded on the event loop.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>

#include "core/sa_service.hpp" // PortIndex

namespace mcastd::sa {

inline constexpr std::size_t kMadSize = 256;
using MadBuf = std::array<std::uint8_t, kMadSize>;

// Where a MAD goes. For SA MADs: the SM's LID on QP1 with the QP1 Q_Key; for a directed-route
// SMP to the local port: the permissive LID on QP0.
struct MadAddress {
    std::uint16_t dlid = 0;
    std::uint32_t dqp = 1;
    std::uint8_t sl = 0;
    std::uint32_t qkey = 0x80010000; // UMAD_QKEY
    std::uint16_t pkey_index = 0;

    bool operator==(const MadAddress &) const = default;
};

class MadTransport {
public:
    // status is umad_status() of the received buffer: 0 for a MAD from the wire, non-zero
    // (110 = ETIMEDOUT) when one of our own sends came back undelivered.
    using Receiver = std::function<void(PortIndex port, std::span<const std::uint8_t> mad, int status)>;

    virtual ~MadTransport() = default;

    // Sends one MAD (the management class in mad[1] picks the agent). `timeout_ms` is handed
    // to the kernel only so that it matches the response to this send; retries are ours.
    // Returns 0 or a negative errno.
    virtual int send(PortIndex port, std::span<const std::uint8_t> mad, const MadAddress &addr,
                     unsigned timeout_ms) = 0;

    // Called on the event loop thread for every received MAD.
    virtual void set_receiver(Receiver r) = 0;
};

} // namespace mcastd::sa

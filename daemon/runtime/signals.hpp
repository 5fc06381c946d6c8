// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Signal mask helpers for a process whose signals are read from a signalfd (sd-event).
//
// sd-event can only watch a signal that is blocked (libsystemd 252 refuses the rest with
// EBUSY), and a signalfd only sees a process-directed signal if *every* thread blocks it:
// otherwise the kernel may deliver it to a thread where it is unblocked and run the default
// action (for SIGTERM: kill the process without leaving any group). So:
//   1. main() calls block_signals(kDaemonSignals) before it starts any thread;
//   2. every worker thread is created under a BlockAllSignals guard, so it starts with all
//      signals blocked and only the loop thread ever takes them (through the signalfd).
#pragma once

#include <csignal>
#include <initializer_list>

namespace mcastd::runtime {

// SIGTERM (stop, leaving every group), SIGINT (the same, interactively), SIGHUP (reload),
// SIGUSR2 (restart, keeping every membership: the unit's RestartKillSignal=).
inline constexpr std::initializer_list<int> kDaemonSignals = {SIGTERM, SIGINT, SIGHUP, SIGUSR2};

// Adds `sigs` to the calling thread's blocked set; threads created afterwards inherit it.
// Throws std::system_error naming the failing call.
void block_signals(std::initializer_list<int> sigs);

// Blocks every signal in the calling thread for the guard's lifetime and restores the previous
// mask afterwards. Create threads (std::thread) inside such a scope: the new thread inherits
// the fully blocked mask from its first instruction, with no window in which a signal could
// land on it. Also used around library calls that may spawn helper threads (libumad2sim).
class BlockAllSignals {
public:
    BlockAllSignals();
    ~BlockAllSignals();
    BlockAllSignals(const BlockAllSignals &) = delete;
    BlockAllSignals &operator=(const BlockAllSignals &) = delete;

private:
    sigset_t saved_;
};

} // namespace mcastd::runtime

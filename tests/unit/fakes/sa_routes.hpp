// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Where a test's SA MADs go: a table of SA addresses per port that MadTransactions asks at
// every try, as the daemon's port registry answers it (HostPorts). set() and clear() change
// the table and tell the transactions, as the Service's sa_moved does.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "sa/transactions.hpp"

namespace mcastd::test {

class SaRoutes {
public:
    explicit SaRoutes(sa::MadTransactions &txns) : txns_(txns) {
        // The table outlives whichever of the two goes first.
        txns.set_sa_route([table = table_](PortIndex port) -> std::optional<sa::MadAddress> {
            const auto it = table->find(port);
            return it == table->end() ? std::nullopt : std::optional(it->second);
        });
    }
    void set(PortIndex port, const sa::MadAddress &addr) {
        (*table_)[port] = addr;
        txns_.sa_route_changed(port);
    }
    void clear(PortIndex port) {
        table_->erase(port);
        txns_.sa_route_changed(port);
    }

private:
    sa::MadTransactions &txns_;
    std::shared_ptr<std::map<PortIndex, sa::MadAddress>> table_ = std::make_shared<std::map<PortIndex, sa::MadAddress>>();
};

} // namespace mcastd::test

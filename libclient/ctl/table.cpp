// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "table.hpp"

#include <algorithm>

namespace ctl {

std::string Table::render(const std::string &indent) const {
    std::vector<std::size_t> width;
    for (const auto &row : rows_) {
        if (row.size() > width.size())
            width.resize(row.size());
        for (std::size_t i = 0; i < row.size(); ++i)
            width[i] = std::max(width[i], row[i].size());
    }
    std::string out;
    for (const auto &row : rows_) {
        std::string line = indent;
        for (std::size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size())
                line.append(width[i] - row[i].size() + 2, ' ');
        }
        out += line + '\n';
    }
    return out;
}

} // namespace ctl

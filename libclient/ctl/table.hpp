// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Aligned text tables for humans: columns padded to their widest cell, two spaces apart.
#pragma once

#include <string>
#include <vector>

namespace ctl {

class Table {
public:
    explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    // Every line starts with `indent`; the last column is not padded (no trailing blanks).
    std::string render(const std::string &indent = "") const;

private:
    std::vector<std::vector<std::string>> rows_;
};

} // namespace ctl

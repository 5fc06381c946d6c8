// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Runs a libFuzzer target over files, without libFuzzer: the regression mode of tests/fuzz,
// built with any compiler. Arguments are files or directories (every regular file in them).
// Each input is copied into a buffer of exactly its size, so that a sanitized build catches a
// read past the end just as libFuzzer would.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);

namespace fs = std::filesystem;

int main(int argc, char **argv) {
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        std::error_code ec;
        if (fs::is_directory(argv[i], ec)) {
            for (const auto &e : fs::directory_iterator(argv[i]))
                if (e.is_regular_file())
                    inputs.push_back(e.path());
        } else {
            inputs.emplace_back(argv[i]);
        }
    }
    if (inputs.empty()) { // an empty corpus would make a test that tests nothing pass
        std::fprintf(stderr, "usage: %s FILE|DIR...: no inputs\n", argc > 0 ? argv[0] : "fuzz");
        return 2;
    }
    std::sort(inputs.begin(), inputs.end());
    for (const auto &path : inputs) {
        std::ifstream in(path, std::ios::binary);
        std::error_code ec;
        const auto size = static_cast<std::size_t>(fs::file_size(path, ec));
        if (!in || ec) {
            std::fprintf(stderr, "%s: cannot read\n", path.c_str());
            return 2;
        }
        auto buf = std::make_unique<std::uint8_t[]>(size);
        in.read(reinterpret_cast<char *>(buf.get()), static_cast<std::streamsize>(size));
        std::fprintf(stderr, "running %s (%zu bytes)\n", path.c_str(), size);
        LLVMFuzzerTestOneInput(buf.get(), size);
    }
    std::fprintf(stderr, "%zu inputs ran without a failure\n", inputs.size());
    return 0;
}

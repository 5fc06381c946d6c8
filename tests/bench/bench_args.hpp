// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The benchmarks' command lines, all alike: --help (or -h) prints the usage and exits 0; an
// argument the bench does not take is named on stderr beside the usage, exit 2.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace mcastd::bench {

class CommandLine {
public:
    // `usage` is the arguments (none: empty), a newline, and a line on what the bench measures.
    CommandLine(int argc, char **argv, const char *name, const char *usage) : name_(name), usage_(usage) {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--help" || a == "-h") {
                print_usage(stdout);
                std::exit(0);
            }
            args.push_back(a);
        }
    }

    [[noreturn]] void bad(const std::string &arg) const {
        std::fprintf(stderr, "%s: bad argument '%s'\n", name_, arg.c_str());
        print_usage(stderr);
        std::exit(2);
    }

    // A whole number within [lo, hi], or bad().
    unsigned long count(const std::string &arg, unsigned long lo, unsigned long hi) const {
        char *end = nullptr;
        const unsigned long n = std::strtoul(arg.c_str(), &end, 10);
        if (arg.empty() || arg[0] == '-' || *end != '\0' || n < lo || n > hi)
            bad(arg);
        return n;
    }

    // For a bench that takes no arguments.
    void none() const {
        if (!args.empty())
            bad(args.front());
    }

    std::vector<std::string> args; // what is left after --help

private:
    void print_usage(std::FILE *to) const { std::fprintf(to, "usage: %s%s%s", name_, *usage_ == '\n' ? "" : " ", usage_); }

    const char *name_;
    const char *usage_;
};

} // namespace mcastd::bench

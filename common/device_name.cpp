// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/device_name.hpp"

#include "common/utf8.hpp"

namespace mcastd {

namespace {

// Why `name` is not a `what` of at most `max` printable ASCII bytes without '/' and `also`.
std::optional<std::string> name_problem(std::string_view name, const char *what, std::size_t max, char also,
                                        const char *rule) {
    const auto wrong = [&](const std::string &why) {
        return "\"" + escape_bytes(name) + "\" is not " + what + ": " + why + " (" + rule + ")";
    };
    if (name.empty())
        return wrong("it is empty");
    if (name.size() > max)
        return wrong("it is " + std::to_string(name.size()) + " bytes long");
    if (name == "." || name == "..")
        return wrong("it names a directory");
    for (std::size_t i = 0; i < name.size(); ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c == '/' || (also && c == static_cast<unsigned char>(also)))
            return wrong("byte " + std::to_string(i) + " is '" + static_cast<char>(c) + "'");
        if (c < 0x21 || c > 0x7e)
            return wrong("byte " + std::to_string(i) + " is not printable ASCII");
    }
    return std::nullopt;
}

} // namespace

std::optional<std::string> device_name_problem(std::string_view name) {
    static const std::string rule = "a device name is 1.." + std::to_string(kMaxDeviceName) +
                                    " printable ASCII characters without '/' or spaces, as in sysfs";
    return name_problem(name, "an RDMA device name", kMaxDeviceName, 0, rule.c_str());
}

std::optional<std::string> interface_name_problem(std::string_view name) {
    static const std::string rule = "an interface name is 1.." + std::to_string(kMaxInterfaceName) +
                                    " printable ASCII characters without '/', ':' or spaces, as the kernel allows";
    return name_problem(name, "a network interface name", kMaxInterfaceName, ':', rule.c_str());
}

} // namespace mcastd

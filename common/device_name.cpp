// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/device_name.hpp"

#include "common/utf8.hpp"

namespace mcastd {

std::optional<std::string> device_name_problem(std::string_view name) {
    const auto wrong = [&](const std::string &why) {
        return "\"" + escape_bytes(name) + "\" is not an RDMA device name: " + why + " (a device name is 1.." +
               std::to_string(kMaxDeviceName) + " printable ASCII characters without '/' or spaces, as in sysfs)";
    };
    if (name.empty())
        return wrong("it is empty");
    if (name.size() > kMaxDeviceName)
        return wrong("it is " + std::to_string(name.size()) + " bytes long");
    if (name == "." || name == "..")
        return wrong("it names a directory");
    for (std::size_t i = 0; i < name.size(); ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c == '/')
            return wrong("byte " + std::to_string(i) + " is '/'");
        if (c < 0x21 || c > 0x7e)
            return wrong("byte " + std::to_string(i) + " is not printable ASCII");
    }
    return std::nullopt;
}

} // namespace mcastd

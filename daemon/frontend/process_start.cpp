// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/process_start.hpp"

#include "common/utf8.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace mcastd::frontend {

std::uint64_t process_start_time(pid_t pid) {
    if (pid <= 0)
        return 0;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat))
        return 0;
    // The command name (field 2) is in parentheses and may hold spaces or ')': skip past the
    // last ')', then field 3 is the first after it and field 22 the twentieth.
    const auto close = stat.rfind(')');
    if (close == std::string::npos)
        return 0;
    std::istringstream fields(stat.substr(close + 1));
    std::string f;
    for (int i = 3; i <= 22; ++i)
        if (!(fields >> f))
            return 0;
    try {
        return std::stoull(f);
    } catch (const std::exception &) {
        return 0;
    }
}

std::string process_cgroup(pid_t pid) {
    if (pid <= 0)
        return {};
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    std::string line, v1;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) == 0)
            return line.substr(3);
        if (const auto at = line.find(":name=systemd:"); at != std::string::npos)
            v1 = line.substr(at + 14);
    }
    return v1;
}

std::string clean_comm(std::string_view comm) { return comm.empty() ? "?" : printable_utf8(comm); }

std::string process_comm(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string comm;
    if (pid <= 0 || !in || !std::getline(in, comm))
        return "?";
    return clean_comm(comm);
}

bool process_alive(pid_t pid, std::uint64_t start_time) {
    const std::uint64_t now = process_start_time(pid);
    return now != 0 && (start_time == 0 || now == start_time);
}

} // namespace mcastd::frontend

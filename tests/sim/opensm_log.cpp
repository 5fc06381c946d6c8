// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sim/opensm_log.hpp"

#include <map>
#include <optional>
#include <sstream>

namespace mcastd::sim {

std::vector<SaRequest> sa_requests(const std::string &log) {
    std::vector<SaRequest> out;
    std::map<std::string, std::string> pending; // thread id -> method
    std::istringstream in(log);
    std::string method;
    bool in_dump = false;
    std::optional<Gid> mgid;
    for (std::string line; std::getline(in, line);) {
        const auto lb = line.find('[');
        const auto rb = line.find(']');
        const bool header = !line.empty() && line[0] != '\t' && lb != std::string::npos && rb != std::string::npos;
        if (header) {
            in_dump = false;
            const std::string t = line.substr(lb + 1, rb - lb - 1);
            if (line.find("mcmr_rcv_join_mgrp: Dump of") != std::string::npos)
                pending[t] = "Set";
            else if (line.find("mcmr_rcv_leave_mgrp: Dump of") != std::string::npos)
                pending[t] = "Delete";
            else if (line.find("mcmr_query_mgrp: Dump of") != std::string::npos)
                pending[t] = "Get";
            else if (line.find("MCMember Record dump:") != std::string::npos && pending.count(t)) {
                in_dump = true;
                method = pending[t];
                pending.erase(t);
                mgid.reset();
            }
            continue;
        }
        if (!in_dump)
            continue;
        const auto dots = line.find_last_of('.');
        if (dots == std::string::npos)
            continue;
        const std::string value = line.substr(dots + 1);
        if (line.find("MGID.") != std::string::npos)
            mgid = parse_gid(value);
        else if (line.find("PortGid.") != std::string::npos && mgid) {
            if (auto port = parse_gid(value))
                out.push_back({method, *mgid, *port});
            in_dump = false;
        }
    }
    return out;
}

} // namespace mcastd::sim

// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "system/lab/daemon_unit.hpp"

#include "sanitized.hpp"

namespace mcastd::lab {

std::string unit_quoted(const std::string &assignment) {
    std::string q = "\"";
    for (char c : assignment) {
        if (c == '"' || c == '\\')
            q += '\\';
        q += c == '%' ? std::string("%%") : std::string(1, c);
    }
    return q + "\"";
}

namespace {

// `environment`: the drop-in's Environment= lines (the fabric's, or none).
void install(Lab &lab, const std::string &environment, const DaemonUnit &unit) {
    // The units start only where the kernel has an RDMA device; the simulated fabric (or a fake
    // device under --sysfs-root) stands in for one, so the condition is reset (an empty
    // assignment), for the socket as well.
    const std::string no_device_condition = "[Unit]\nConditionDirectoryNotEmpty=\n";
    lab.write_unit("rdma-mcastd.socket.d/fabric.conf",
                   "# The simulated fabric is the lab's RDMA device (tests/system/lab/daemon_unit.cpp).\n" +
                       no_device_condition);
    std::string conf = "# The lab's changes to the shipped unit (tests/system/lab/daemon_unit.cpp).\n" +
                       no_device_condition + "[Service]\n";
    // Attached to the node. umad2sim writes a sys-<pid> tree into the working directory (and
    // leaves it behind after a kill -9): one of its own, not the state directory.
    conf += environment;
    conf += "WorkingDirectory=" + std::string(kDaemonCwd) + "\n";
    conf += "ReadWritePaths=" + std::string(kDaemonCwd) + "\n";
    if (!unit.daemon.empty()) {
        // The build tree, when the checkout is under /tmp (CI's clone): PrivateTmp= would hide it.
        conf += "BindReadOnlyPaths=" + unit.daemon.parent_path().string() + "\n";
        conf += "ExecStart=\nExecStart=" + unit.daemon.string() + " --config " + std::string(kDaemonConfig) +
                (unit.daemon_args.empty() ? "" : " " + unit.daemon_args) + "\n";
        lab.write_file(kDaemonConfig, unit.config_json);
    }
    conf += unit.extra_service;
    lab.write_unit("rdma-mcastd.service.d/lab.conf", conf);
    std::filesystem::create_directories(lab.host_path(kDaemonCwd));
}

} // namespace

void install_daemon_unit(Lab &lab, const sim::Fabric &fabric, const DaemonUnit &unit) {
    std::string environment;
    for (const auto &[k, v] : fabric.node_env(unit.node)) {
        std::string value = v;
        if (testing_build::kSanitized && k == "ASAN_OPTIONS") // the unit's SystemCallFilter=
            value += std::string(":") + testing_build::kAsanOptionsUnderSyscallFilter;
        environment += "Environment=" + unit_quoted(k + "=" + value) + "\n";
    }
    install(lab, environment, unit);
}

void install_daemon_unit(Lab &lab, const DaemonUnit &unit) { install(lab, "", unit); }

} // namespace mcastd::lab

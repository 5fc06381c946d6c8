# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by scripts/test and scripts/demo: installs the Debian 12 packages the build and the
# tests need, only those that are missing. Needs root or sudo for apt-get.
MCASTD_PACKAGES=(
    build-essential cmake ninja-build pkg-config
    libibumad-dev libibverbs-dev libsystemd-dev libspdlog-dev nlohmann-json3-dev
    libgtest-dev libgmock-dev
    ibsim-utils libumad2sim0 opensm infiniband-diags
    groff-base  # the man page lint in the library's install test
    abigail-tools  # abidw/abidiff: librdmamcast's ABI against its baseline (LibAbi.*)
    dbus-daemon  # tests/system/dbus: a private bus
    systemd      # busctl, systemd-analyze, systemd-socket-activate, systemd-journald, journalctl
    iproute2     # ip, bridge: the Ethernet bed (tests/ethernet)
    prometheus   # promtool: rdma-mcastctl metrics judged by Prometheus' own checker (test_metrics_sim)
)

mcastd_install_deps() {
    local missing=() p
    for p in "${MCASTD_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    echo "Installing missing packages: ${missing[*]}" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

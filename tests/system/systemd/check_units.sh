#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The shipped units under systemd-analyze, no PID 1 needed.
#
#   check_units.sh verify   SRC_DIR BUILD_DIR   every unit verifies with no message at all
#   check_units.sh security SERVICE_FILE MAX    the exposure rating is MAX or better (lower)
#
# verify takes every *.service, *.socket and *.timer in SRC_DIR (other helpers' units included) and
# BUILD_DIR (units configured from *.in, with ExecStart= naming the built daemon, since verify
# checks that the binary exists). D-Bus activation files are also called *.service but are not
# units: they are recognised by their [D-BUS Service] section and skipped.
set -euo pipefail

verify() {
    local units=() f
    for f in "$1"/*.service "$1"/*.socket "$1"/*.timer "$2"/*.service "$2"/*.socket "$2"/*.timer; do
        [ -f "$f" ] || continue
        grep -q '^\[D-BUS Service\]' "$f" && continue
        units+=("$f")
    done
    [ "${#units[@]}" -ge 2 ] || { echo "found only: ${units[*]}" >&2; return 1; }
    echo "verifying: ${units[*]}"
    local out rc=0
    out=$(systemd-analyze verify --man=no "${units[@]}" 2>&1) || rc=$?
    # Unknown keys and bad values are only warnings (rc 0): any message at all fails.
    if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
        printf 'systemd-analyze verify: rc %d\n%s\n' "$rc" "$out" >&2
        return 1
    fi
}

security() {
    local service=$1 max=$2 out level
    out=$(systemd-analyze security --offline=true --no-pager "$service" 2>&1) || true
    level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
    [ -n "$level" ] || { printf 'no exposure level in:\n%s\n' "$out" >&2; return 1; }
    echo "exposure level of $(basename "$service"): $level (bar: $max)"
    if ! awk -v l="$level" -v m="$max" 'BEGIN { exit !(l <= m) }'; then
        grep '✗' <<<"$out" >&2 || true
        return 1
    fi
}

case "${1:-}" in
verify) verify "$2" "$3" ;;
security) security "$2" "$3" ;;
*) echo "usage: $0 verify SRC_DIR BUILD_DIR | security SERVICE_FILE MAX" >&2; exit 2 ;;
esac

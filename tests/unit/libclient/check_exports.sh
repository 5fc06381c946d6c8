#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# librdmamcast.so's ABI surface: only rdmamcast_* is exported (no C++ symbols), in version node
# RDMAMCAST_1.0 except for the functions later nodes added (listed below), the SONAME is
# librdmamcast.so.1, and at run time it needs nothing beyond libc, the C++ runtime and
# libibverbs (plus sanitizer runtimes in such builds).
set -eu
lib=$1

# The functions of each later node ('|'-separated lists); every other rdmamcast_* is in 1.0.
v1_1='rdmamcast_set_reconnect'
v1_2='rdmamcast_evict_uid|rdmamcast_evict_membership'
v1_3='rdmamcast_join_start|rdmamcast_join_cancel'
v1_4='rdmamcast_list_own|rdmamcast_disconnect_uid'
v1_5='rdmamcast_last_error_sized|rdmamcast_next_event_sized|rdmamcast_list_sized|rdmamcast_list_own_sized|rdmamcast_status_sized'
v1_6='rdmamcast_membership_netdev'

exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
bad=$(printf '%s\n' "$exported" |
    grep -v -E "^(rdmamcast_[a-z0-9_]+@@RDMAMCAST_1\.0|($v1_1)@@RDMAMCAST_1\.1|($v1_2)@@RDMAMCAST_1\.2|($v1_3)@@RDMAMCAST_1\.3|($v1_4)@@RDMAMCAST_1\.4|($v1_5)@@RDMAMCAST_1\.5|($v1_6)@@RDMAMCAST_1\.6|RDMAMCAST_1\.[0123456])\$" || true)
# A later node's function must not also (or instead) be in 1.0.
bad="$bad$(printf '%s\n' "$exported" | grep -E "^($v1_1|$v1_2|$v1_3|$v1_4|$v1_5|$v1_6)@@RDMAMCAST_1\.0\$" || true)"
if [ -n "$bad" ]; then
    echo "unexpected exported symbols:"
    printf '%s\n' "$bad"
    exit 1
fi
for node in 1.1 1.2 1.3 1.4 1.5 1.6; do
    case $node in 1.1) names=$v1_1 ;; 1.2) names=$v1_2 ;; 1.3) names=$v1_3 ;; 1.4) names=$v1_4 ;; 1.5) names=$v1_5 ;; 1.6) names=$v1_6 ;; esac
    for f in $(printf '%s\n' "$names" | tr '|' ' '); do
        if ! printf '%s\n' "$exported" | grep -q -x "$f@@RDMAMCAST_$node"; then
            echo "$f is not exported in RDMAMCAST_$node"
            exit 1
        fi
    done
done
count=$(printf '%s\n' "$exported" | grep -c '^rdmamcast_' || true)
if [ "$count" -lt 20 ]; then
    echo "only $count rdmamcast_* symbols exported"
    exit 1
fi

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" != librdmamcast.so.1 ]; then
    echo "SONAME is '$soname', expected librdmamcast.so.1"
    exit 1
fi

unexpected=$(readelf -d "$lib" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
    grep -v -E '^(libstdc\+\+\.so\.6|libgcc_s\.so\.1|libc\.so\.6|libm\.so\.6|ld-linux[-.a-z0-9_]*\.so\.[0-9]+|libibverbs\.so\.1|libasan\.so\.[0-9]+|libubsan\.so\.[0-9]+)$' || true)
if [ -n "$unexpected" ]; then
    echo "unexpected run-time dependencies:"
    printf '%s\n' "$unexpected"
    exit 1
fi
echo "ok: $count symbols, SONAME $soname"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The installed librdmamcast, used the way other projects use it.
#   install_consumer_test.sh install BUILD_DIR PREFIX     install the library's components
#   install_consumer_test.sh pkg-config SOURCE_DIR PREFIX  build consumers via pkg-config
#   install_consumer_test.sh find-package SOURCE_DIR PREFIX  ... via find_package(RdmaMcast)
# CMAKE, CC, CXX and GENERATOR come from the environment (ctest sets them).
set -eu
mode=$1 dir=$2 prefix=$3
: "${CMAKE:=cmake}" "${CC:=cc}" "${CXX:=c++}" "${GENERATOR:=Ninja}"

libdir() { # the directory holding librdmamcast.so.1, wherever GNUInstallDirs put it
    dirname "$(find "$prefix" -name 'librdmamcast.so.1' | head -n 1)"
}

case $mode in
install)
    rm -rf "$prefix"
    for component in rdmamcast-runtime rdmamcast-dev rdma-mcastctl; do
        "$CMAKE" --install "$dir" --prefix "$prefix" --component "$component"
    done
    lib=$(libdir)
    for f in "$lib/librdmamcast.so.1" "$lib/librdmamcast.so" "$lib/pkgconfig/rdmamcast.pc" \
        "$lib/cmake/RdmaMcast/RdmaMcastConfig.cmake" \
        "$lib/cmake/RdmaMcast/RdmaMcastConfigVersion.cmake" \
        "$lib/cmake/RdmaMcast/RdmaMcastTargets.cmake" \
        "$prefix/include/rdmamcast/client.h" "$prefix/include/rdmamcast/client.hpp" \
        "$prefix/include/rdmamcast/verbs.h" "$prefix/include/rdmamcast/verbs.hpp" \
        "$prefix/bin/rdma-mcastctl" \
        "$prefix/share/man/man1/rdma-mcastctl.1" "$prefix/share/man/man7/rdmamcast.7" \
        "$prefix/share/man/man3/rdmamcast_join.3" "$prefix/share/man/man3/rdmamcast_leave.3"; do
        [ -e "$f" ] || { echo "missing after install: $f"; exit 1; }
    done
    # Nothing of the daemon's internals is installed with the library.
    if find "$prefix/include" -name '*.hpp' ! -path '*/rdmamcast/*' | grep -q .; then
        echo "internal headers were installed"; exit 1
    fi
    LD_LIBRARY_PATH=$lib "$prefix/bin/rdma-mcastctl" --version
    if command -v groff >/dev/null 2>&1; then
        groff -man -Tutf8 -ww -z "$prefix/share/man/man1/rdma-mcastctl.1"
    fi
    ;;
pkg-config)
    lib=$(libdir)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    export PKG_CONFIG_PATH="$lib/pkgconfig"
    # The .pc file is relocatable: its prefix must resolve to where we installed.
    pc_prefix=$(cd "$(pkg-config --variable=prefix rdmamcast)" && pwd -P)
    [ "$pc_prefix" = "$(cd "$prefix" && pwd -P)" ] || { echo "pc prefix $pc_prefix"; exit 1; }
    [ "$(pkg-config --modversion rdmamcast)" != "" ]
    # shellcheck disable=SC2046 # word splitting of pkg-config output is intended
    "$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/mcast_example" \
        "$dir/libclient/examples/mcast_example.c" $(pkg-config --cflags --libs rdmamcast libibverbs)
    # shellcheck disable=SC2046
    "$CXX" -std=c++17 -Wall -Wextra -Wpedantic -Werror -o "$work/consumer" \
        "$dir/tests/unit/libclient/consumer/consumer.cpp" $(pkg-config --cflags --libs rdmamcast)
    # Built against these headers, a program reaches the structures the library allocates
    # through the entry points that take its sizes (RDMAMCAST_1.5, libclient/ABI.md), never
    # through those kept for programs built before them.
    for program in consumer mcast_example; do
        nm -D --undefined-only "$work/$program" | grep -q ' rdmamcast_last_error_sized@RDMAMCAST_1\.5$' ||
            { echo "$program does not call rdmamcast_last_error_sized@RDMAMCAST_1.5"; exit 1; }
        if nm -D --undefined-only "$work/$program" |
            grep -E ' rdmamcast_(last_error|next_event|list|list_own|status)@'; then
            echo "$program calls the entry points of programs built before RDMAMCAST_1.5"; exit 1
        fi
    done
    export LD_LIBRARY_PATH="$lib"
    "$work/consumer" /nonexistent/rdma-mcastd.sock
    # No daemon there: the example reports it and fails; a usage error is exit 2.
    if "$work/mcast_example" --socket /nonexistent/rdma-mcastd.sock --device mlx5_0 --port 1 --create; then
        echo "mcast_example succeeded without a daemon"; exit 1
    fi
    rc=0; "$work/mcast_example" >/dev/null 2>&1 || rc=$?
    [ "$rc" = 2 ] || { echo "mcast_example without arguments exited $rc"; exit 1; }
    ;;
find-package)
    lib=$(libdir)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$CMAKE" -S "$dir/tests/unit/libclient/consumer" -B "$work" -G "$GENERATOR" \
        -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
        -DCMAKE_PREFIX_PATH="$prefix" -DRDMAMCAST_EXAMPLE="$dir/libclient/examples/mcast_example.c"
    "$CMAKE" --build "$work"
    LD_LIBRARY_PATH="$lib" "$work/consumer" /nonexistent/rdma-mcastd.sock
    ;;
*)
    echo "unknown mode $mode"; exit 2
    ;;
esac

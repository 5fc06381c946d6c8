#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# librdmamcast's ABI against the committed baseline (libclient/ABI.md).
#   abi.sh dump LIBRARY OUT        write LIBRARY's ABI (abidw) to OUT, as the baseline is kept
#   abi.sh check LIBRARY BASELINE  fail on any difference from BASELINE but added functions
# The representation leaves out what depends on the build rather than on the headers: paths
# (corpus, compilation directory, source locations), DT_NEEDED, and the private types behind
# the opaque handles (only types of <rdmamcast/*.h> are kept in full). Exit 77: cannot check
# here (no abigail-tools, no debug info, another architecture than the baseline's).
set -eu
mode=$1 lib=$2 file=$3
here=$(cd "$(dirname "$0")" && pwd)
headers=$(cd "$here/../include/rdmamcast" && pwd)
spdx='<!-- SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB -->'

for tool in abidw abidiff readelf; do
    command -v "$tool" >/dev/null 2>&1 ||
        { echo "skipped: $tool is missing (Debian: apt install abigail-tools binutils)"; exit 77; }
done
readelf -S --wide "$lib" | grep -q '\.debug_info' ||
    { echo "skipped: $lib has no debug information (build with -g, e.g. RelWithDebInfo)"; exit 77; }

# dump LIBRARY OUT. The SPDX comment goes inside the root element: abidiff recognises an ABI
# file by its first tag.
dump() {
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs --no-elf-needed \
        --type-id-style hash --exported-interfaces-only \
        --headers-dir "$headers" --drop-private-types --out-file "$2.tmp" "$1"
    sed "1a $spdx" "$2.tmp" >"$2"
    rm -f "$2.tmp"
}

case $mode in
dump)
    dump "$lib" "$file"
    ;;
check)
    arch=$(sed -n "1s/.* architecture='\([^']*\)'.*/\1/p" "$file")
    work=$(mktemp -d "${TMPDIR:-/tmp}/abi.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    dump "$lib" "$work/current.abi"
    now=$(sed -n "1s/.* architecture='\([^']*\)'.*/\1/p" "$work/current.abi")
    [ "$now" = "$arch" ] || { echo "skipped: the baseline is of $arch, this library of $now"; exit 77; }
    rc=0
    abidiff --no-added-syms --suppressions "$here/suppressions.abignore" \
        "$file" "$work/current.abi" >"$work/report" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        cat "$work/report"
        cat <<MSG

librdmamcast's ABI differs from the baseline ${file#"$(dirname "$here")/"} in more than added
functions (abidiff exit $rc). Programs built against the old headers may break: a structure the
library fills grew, shrank or moved a field, a function changed or went away.
  - Not intended: change the code back.
  - Intended: make it safe first (libclient/ABI.md): a structure of the library's only grows at
    its end and its _sized callers refuse a larger one; a fixed one only uses its reserved
    space; a new or changed function goes into a new node of libclient/src/librdmamcast.map (and
    debian/librdmamcast1.symbols); a break needs a new SONAME. Then record the new ABI:
        scripts/abi-baseline [BUILD_DIR]
    and commit libclient/abi/librdmamcast.so.1.abi with the change that explains it.
MSG
        exit 1
    fi
    added=$(abidiff --suppressions "$here/suppressions.abignore" "$file" "$work/current.abi" |
        sed -n 's/^ *\[A\] .*{\(.*\)}$/\1/p')
    if [ -n "$added" ]; then
        echo "ok, with functions the baseline does not have yet (scripts/abi-baseline records them):"
        printf '  %s\n' $added
    else
        echo "ok: the ABI is the baseline's"
    fi
    ;;
*)
    echo "usage: abi.sh dump|check LIBRARY FILE"; exit 2
    ;;
esac

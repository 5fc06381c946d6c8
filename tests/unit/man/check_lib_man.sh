#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# librdmamcast's man pages, as installed: every function the library exports (nm -D) and every
# function its installed headers declare (RDMAMCAST_EXPORT, and the static inline helpers) has
# a man3 page or alias; every man3 name is such a function (no page for an API that is not
# there); every alias points at a page that exists; rdmamcast(7) is there; and groff -ww has
# nothing to say about any of them, aliases included (resolved from the man directory, as
# man(1) does).
#   check_lib_man.sh CMAKE BUILD_DIR LIBRARY
set -eu
cmake=$1 build=$2 lib=$3

work=$(mktemp -d "${TMPDIR:-/tmp}/libman.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work" --component rdmamcast-dev >/dev/null
man=$(find "$work" -type d -name man3 -path '*/man/man3' | head -n 1)
[ -n "$man" ] || { echo "no man3 directory installed"; exit 1; }
man=$(dirname "$man")
include=$(find "$work" -type d -name rdmamcast -path '*/include/*' | head -n 1)
[ -n "$include" ] || { echo "no headers installed"; exit 1; }

status=0
fail() { echo "$*"; status=1; }

[ -f "$man/man7/rdmamcast.7" ] || fail "rdmamcast(7) is not installed"

nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep '^rdmamcast_' |
    sort -u >"$work/exported"
[ -s "$work/exported" ] || fail "$lib exports no rdmamcast_* function"
# A declaration's name follows RDMAMCAST_EXPORT (or static inline) on its first line.
sed -n -E 's/^(RDMAMCAST_EXPORT|static inline) [^(]*[ *](rdmamcast_[a-z0-9_]+)\(.*/\2/p' \
    "$include"/*.h | sort -u >"$work/declared"
[ -s "$work/declared" ] || fail "the headers in $include declare no rdmamcast_* function"
sort -u "$work/exported" "$work/declared" >"$work/functions"
(cd "$man/man3" && ls) | sed -n 's/\.3$//p' | sort -u >"$work/pages"

for f in $(comm -23 "$work/functions" "$work/pages"); do
    fail "$f has no man page: add it to a page's NAME section (libclient/man)"
done
for f in $(comm -13 "$work/functions" "$work/pages"); do
    fail "man3/$f.3 documents no function of the library"
done

for page in "$man"/man3/*.3 "$man"/man7/*.7; do
    rel=${page#"$man"/}
    target=$(sed -n 's/^\.so //p' "$page")
    if [ -n "$target" ]; then
        [ -f "$man/$target" ] || fail "$rel: .so $target, which is not installed"
        [ "$(wc -l <"$page")" -eq 1 ] || fail "$rel: an alias is one .so line"
        # The page it points at names it, so that whatis and apropos find it there too.
        sed -n '/^\.SH NAME/,/\\-/p' "$man/$target" | tr ',' '\n' | sed 's/^ *//; s/ .*//' |
            grep -q -x "$(basename "$rel" .3)" || fail "$rel: $target does not name it"
    fi
    if command -v groff >/dev/null 2>&1; then
        out=$(cd "$man" && groff -man -Tutf8 -ww -z "$rel" 2>&1)
        [ -z "$out" ] || fail "$rel:
$out"
    fi
done

[ $status -eq 0 ] && echo "ok: $(wc -l <"$work/functions") functions, $(wc -l <"$work/pages") man3 names"
exit $status

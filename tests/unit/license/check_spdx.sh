#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Every file of the source tree states its license: an SPDX-License-Identifier line with the
# project's expression within its first 10 lines, or a listing in .reuse/dep5 (files that cannot
# carry a comment). The license texts (LICENSES/, COPYING) are what the others point at.
#   check_spdx.sh SOURCE_DIR
# The files are git's tracked ones in a checkout, else every file below SOURCE_DIR but build
# trees (the unit tier also runs from a `git archive` copy when the package builds).
set -uf  # no pathname expansion: the globs of .reuse/dep5 are patterns here
src=$1
expr='SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB'
cd "$src" || exit 1
[ -f .reuse/dep5 ] || { echo ".reuse/dep5 is missing"; exit 1; }
for f in COPYING LICENSES/GPL-2.0-only.txt LICENSES/Linux-OpenIB.txt; do
    [ -s "$f" ] || { echo "$f is missing"; exit 1; }
done
# dep5's Files: globs, one per line.
globs=$(awk '/^Files:/ { sub(/^Files:[ \t]*/, ""); on = 1 } /^[A-Za-z-]+:/ && !/^Files:/ { on = 0 }
             on { for (i = 1; i <= NF; i++) print $i }' .reuse/dep5)
if [ -d .git ] && command -v git >/dev/null 2>&1; then
    list=$(git ls-files)
else
    list=$(find . -path ./.git -prune -o -path './build*' -prune -o -path './obj-*' -prune \
                -o -path ./debian/.debhelper -prune -o -type f -print | sed 's|^\./||' |
           grep -vE '^debian/(files|debhelper-build-stamp|.*\.substvars|.*\.debhelper\.log|tmp/|rdma-mcastd/|librdmamcast[^/]*/)')
fi
bad=0
for f in $list; do
    case $f in LICENSES/*|COPYING|.reuse/dep5) continue ;; esac
    covered=0
    for g in $globs; do
        # shellcheck disable=SC2254 (the glob is meant)
        case $f in $g) covered=1; break ;; esac
    done
    [ $covered = 1 ] && continue
    if ! head -n 10 "$f" | grep -qF "$expr"; then
        # The symbols file keeps its header line first; its comment may be anywhere.
        grep -qF "$expr" "$f" 2>/dev/null && [ "$f" = debian/librdmamcast1.symbols ] && continue
        echo "$f: no '$expr' line in its first 10 lines (add one in the file's comment syntax, or list it in .reuse/dep5 if it cannot carry one)"
        bad=1
    fi
done
[ $bad = 0 ] && echo "every file carries '$expr' or is listed in .reuse/dep5"
exit $bad

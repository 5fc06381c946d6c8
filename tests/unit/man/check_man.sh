#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Lints man pages with groff: any warning (-ww) or error fails, naming the page and line.
# groff exits 0 on warnings, so its output is what is checked. Without groff: skipped (77).
#   check_man.sh PAGE...
set -u
command -v groff >/dev/null 2>&1 || { echo "groff not installed: skipped"; exit 77; }
status=0
for page in "$@"; do
    out=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
    if [ -n "$out" ]; then
        printf '%s:\n%s\n' "$page" "$out"
        status=1
    fi
done
exit $status

#!/usr/bin/env bash
# How thin the C boundary is (ARCHITECTURE.md, "Layers"): the lines of
# mpi-core/src/capi/ as a share of mpi-core/src/, and the largest files.
# Usage: tests/arch/capi-share.sh [--check]   (--check fails when capi/ is
# a quarter or more of the library, or a capi/ file is over 1,000 lines)
set -euo pipefail
cd "$(dirname "$0")/../../mpi-core/src"
lines() { find "$@" -name '*.rs' -print0 | xargs -0 cat | wc -l; }
all=$(lines .)
capi=$(lines capi)
echo "mpi-core/src: $all lines; capi/: $capi lines ($((100 * capi / all))%)"
echo "largest files in capi/:"
find capi -name '*.rs' -print0 | xargs -0 wc -l | grep -v ' total$' | sort -rn | head -5 | sed 's/^/  /'
echo "largest files in mpi-core/src:"
find . -name '*.rs' -print0 | xargs -0 wc -l | grep -v ' total$' | sort -rn | head -5 | sed 's/^/  /'
if [ "${1:-}" = --check ]; then
  big=$(find capi -name '*.rs' -print0 | xargs -0 wc -l | grep -v ' total$' | awk '$1 > 1000 {print $2}')
  [ $((4 * capi)) -lt "$all" ] || { echo "capi/ is a quarter or more of mpi-core/src" >&2; exit 1; }
  [ -z "$big" ] || { echo "capi/ files over 1,000 lines: $big" >&2; exit 1; }
fi

#!/usr/bin/env bash
# Instructions per call on the small-message path (tests/bench/msgrate.c)
# for this project's MPI and Open MPI, counted by callgrind: the figure that
# stays the same on a loaded machine, where times do not. Prints, per
# library, the instructions of one MPI_Isend and one MPI_Irecv (inclusive)
# and of MPI_Waitall per request it completes (inclusive; the waiting
# itself adds to it, so compare the sender's, which rarely waits).
# Needs: apt packages valgrind openmpi-bin libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
ITERS=${ITERS:-2000}
[ -n "${NOBUILD:-}" ] || cargo build --release -q -p mpi-core -p mpi-launcher
command -v valgrind >/dev/null || { echo "msgrate.sh needs valgrind (apt install valgrind)" >&2; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$ROOT/target/release/mpicc" -O2 -o "$W/ours" tests/bench/msgrate.c
mpicc.openmpi -O2 -o "$W/ompi" tests/bench/msgrate.c
cat >"$W/vg" <<'SH'
#!/bin/sh
r=${PMI_RANK:-$OMPI_COMM_WORLD_RANK}
exec valgrind -q --tool=callgrind --callgrind-out-file="$CG_OUT.$r" "$@"
SH
chmod +x "$W/vg"
CG_OUT=$W/ours timeout 600 "$ROOT/target/release/mpirun" -n 2 "$W/vg" "$W/ours" "$ITERS" >/dev/null
CG_OUT=$W/ompi timeout 600 mpirun.openmpi --allow-run-as-root -x CG_OUT -n 2 "$W/vg" "$W/ompi" "$ITERS" >/dev/null 2>&1
msgs=$((ITERS * 64))
per() { # file function
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null | awk -v f="$2" -v n="$msgs" '
    { name = $0; sub(/.*:/, "", name); sub(/ .*/, "", name) }
    name == f { gsub(",", "", $1); printf "%.0f", $1 / n; found = 1; exit }
    END { if (!found) printf "-" }'
}
echo "| library | MPI_Isend | MPI_Waitall per request (sender) | MPI_Irecv | MPI_Waitall per request (receiver) |"
echo "|---|---|---|---|---|"
for l in ours ompi; do
  echo "| $l | $(per "$W/$l.0" PMPI_Isend) | $(per "$W/$l.0" PMPI_Waitall) | $(per "$W/$l.1" PMPI_Irecv) | $(per "$W/$l.1" PMPI_Waitall) |"
done

# Sourced by the benchmark scripts: $here (this folder), $lib (the shim to
# preload: $MPITRACE_LIB or the release build, which must exist), $work (a
# scratch folder removed on exit); LD_LIBRARY_PATH unset (cargo's points
# at this project's libmpi.so.12; the benchmarks run on Debian's MPICH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lib=${MPITRACE_LIB:-$here/../../target/release/libmpitrace.so}
[ -f "$lib" ] || { echo "$lib: not built (cargo build --release -p pmpi-shim)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH

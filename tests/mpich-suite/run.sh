#!/usr/bin/env bash
# MPICH's own conformance suite (test/mpi of MPICH 4.0.2) run against this
# library and against Debian's MPICH 4.0.2, then compared.
# See mpi-core/CONFORMANCE.md. Not run by CI (it downloads MPICH's sources
# and takes one to two hours on two cores).
#
# usage: tests/mpich-suite/run.sh [--no-build] [--retry-only] [--only ours|mpich] [WORKDIR]
#
#   --no-build    use the build trees already in WORKDIR and this
#                 repository's target/debug as it is
#   --retry-only  do not run the whole suite: run again, alone, the tests
#                 that failed in WORKDIR/<side>.tap (<side>-retry.tap)
#   --only SIDE   one side only (the comparison needs both TAP files)
#
# WORKDIR (default ${MPICH_SUITE_DIR:-/tmp/mpich-suite}) receives the tarball,
# the sources, the two build trees (ours/, mpich/) and the results
# (<side>.tap and .log, <side>-retry.tap and .log, diff.txt). Outside the
# repository: MPICH's tests are run from the downloaded tree, never copied
# into it. After a side's run its failures run again one at a time
# (<side>-retry.tap): on a loaded machine a test can miss its time limit,
# and a test counts as passed if it passes alone.
# Needs curl, xz, perl, make, cc, and mpicc.mpich/mpiexec.mpich (apt: mpich).
# MPITEST_TIMEOUT (default 120 s) is the limit of a test without a timeLimit
# of its own in its testlist.
set -euo pipefail

VERSION=4.0.2
URL=http://deb.debian.org/debian/pool/main/m/mpich/mpich_${VERSION}.orig.tar.xz
SHA256=b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860

build=1
full=1
only=""
work=""
while [ $# -gt 0 ]; do
    case "$1" in
    --no-build) build=0 ;;
    --retry-only) full=0 ;;
    --only)
        [ $# -ge 2 ] || { echo "--only needs ours or mpich" >&2; exit 2; }
        only="$2"
        shift
        ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) work="$1" ;;
    esac
    shift
done
work="${work:-${MPICH_SUITE_DIR:-/tmp/mpich-suite}}"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="$repo/target/debug"
die() { echo "mpich-suite: $*" >&2; exit 1; }
case "$only" in "" | ours | mpich) ;; *) die "--only takes ours or mpich" ;; esac

for tool in curl xz perl make sha256sum timeout mpicc.mpich mpiexec.mpich; do
    command -v "$tool" > /dev/null || die "'$tool' is not installed (MPICH's tools: apt-get install mpich)"
done
mkdir -p "$work"
cd "$work"

# 1. The sources.
tarball="mpich_${VERSION}.orig.tar.xz"
src="$work/mpich-$VERSION/test/mpi"
if [ ! -d "$src" ]; then
    if [ ! -f "$tarball" ] || ! echo "$SHA256  $tarball" | sha256sum -c --quiet 2> /dev/null; then
        rm -f "$tarball"
        echo "mpich-suite: downloading $URL"
        curl -fsSL --retry 2 -o "$tarball.part" "$URL" \
            || die "cannot download $URL (no network?); place $tarball in $work and run again"
        mv "$tarball.part" "$tarball"
    fi
    echo "$SHA256  $tarball" | sha256sum -c --quiet || die "$tarball: wrong sha256 (expected $SHA256)"
    tar xf "$tarball"
fi

# 2. Our library, then the two builds of the suite.
if [ "$build" = 1 ]; then
    (cd "$repo" && cargo build -q) || die "cargo build failed"
fi
[ -x "$bin/mpicc" ] && [ -x "$bin/mpirun" ] || die "no $bin/mpicc or $bin/mpirun (cargo build first)"

# The suite's programs load the library from $bin (their RUNPATH); a copy
# taken now comes first (LD_LIBRARY_PATH) so that a rebuild during the hours
# of the run does not change what runs. runtests passes each test's limit in
# MPIEXEC_TIMEOUT, which hydra reads and our mpirun does not: timeout(1)
# enforces it for both (on the launcher's process group, so its ranks go too).
rm -rf lib && mkdir lib
cp "$bin/libmpi.so.12" "$bin/mpirun" lib/
ln -s libmpi.so.12 lib/libmpi.so
ln -s libmpi.so.12 lib/libmpich.so.12
cat > ours-mpiexec << EOF
#!/bin/sh
LD_LIBRARY_PATH="$work/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec timeout -k 10 "\${MPIEXEC_TIMEOUT:-180}" "$work/lib/mpirun" "\$@"
EOF
cat > mpich-mpiexec << 'EOF'
#!/bin/sh
exec timeout -k 10 "$(( ${MPIEXEC_TIMEOUT:-180} + 10 ))" mpiexec.mpich "$@"
EOF
chmod +x ours-mpiexec mpich-mpiexec

# Runs the tests of list NAME (a testlist per directory) of side $1 into
# $2.tap and $2.log, one test at a time (runtests is serial).
run_list() {
    local which="$1" out="$2" list="$3"
    (cd "$work/$which" && MPITEST_TIMEOUT="${MPITEST_TIMEOUT:-120}" ./runtests -srcdir="$src" -tests="$list" \
        -mpiexec="$work/$which-mpiexec" -showprogress -tapfile="$work/$out.tap" > "$work/$out.log" 2>&1) || true
}

which_ones="ours mpich"
[ -n "$only" ] && which_ones="$only"
for which in $which_ones; do
    case "$which" in
    ours) cc="$bin/mpicc" ;;
    mpich) cc="$(command -v mpicc.mpich)" ;;
    esac
    dir="$work/$which"
    if [ "$build" = 1 ] || [ ! -f "$dir/runtests" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        echo "mpich-suite: configuring and building the suite with $cc (log: $dir/make.log)"
        # MPICC= matters: configure would otherwise take whatever mpicc is
        # on the path. Fortran and C++ bindings are not part of this
        # library; dtpools' thousands of generated datatype tests are left
        # out for time.
        (cd "$dir" && "$src/configure" MPICC="$cc" CC="$cc" --disable-fortran --disable-cxx \
            --disable-dtpools --enable-threads=multiple > configure.log 2>&1) \
            || die "configure failed, see $dir/config.log"
        # -k: a program that does not build is reported by runtests as a failure.
        (cd "$dir" && make -k -j"${JOBS:-2}" > make.log 2>&1) || true
    fi
    if [ "$full" = 1 ]; then
        echo "mpich-suite: running the suite on $which (log: $work/$which.log)"
        rm -f "$work/$which-retry.tap"
        run_list "$which" "$which" testlist
    fi
    [ -f "$work/$which.tap" ] || die "no $work/$which.tap (run without --retry-only first)"
    # runtests stops a run after five timeouts that are more than half of
    # its tests, which a list of failures easily is: the rest goes on in
    # another round, until every failure has run again.
    rm -f "$work/$which-retry.tap" "$work/$which-retry.log"
    touch "$work/$which-retry.tap"
    while n=$(perl "$here/tap.pl" lists "$work/$which.tap" "$dir" "$src" retry.list "$work/$which-retry.tap") \
        && [ "$n" -gt 0 ]; do
        echo "mpich-suite: running $n failures of $which again, alone (log: $work/$which-retry.log)"
        run_list "$which" "$which-retry-round" retry.list
        cat "$work/$which-retry-round.log" >> "$work/$which-retry.log"
        # (Its tests with their diagnostics; a round that ran none ends it.)
        grep -qE '^(not )?ok ' "$work/$which-retry-round.tap" || break
        grep -vE '^(TAP version|1\.\.)' "$work/$which-retry-round.tap" >> "$work/$which-retry.tap"
    done
    rm -f "$work/$which-retry-round.tap" "$work/$which-retry-round.log"
done

# 3. The comparison, on the tests both ran (a test is "dir/program np", the
# k-th such line of the testlists when one program runs with several args).
[ -f ours.tap ] && [ -f mpich.tap ] || { echo "mpich-suite: one side only, no comparison"; exit 0; }
perl "$here/tap.pl" compare ours.tap,ours-retry.tap mpich.tap,mpich-retry.tap | tee diff.txt

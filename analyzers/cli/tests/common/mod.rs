//! What the end-to-end tests of `mpitrace` share: where the binaries are,
//! and building the packages whose libraries and programs they run next to
//! `mpitrace` (cargo builds no other package's cdylib or binary for a test).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

/// target/<profile>/, where mpitrace, libmpitrace.so, mpicc and mpirun are.
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_mpitrace")).parent().unwrap().to_path_buf()
}

/// `cargo build` of `pkgs` in the profile of this test's `mpitrace`.
fn cargo_build(pkgs: &[&str]) {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q"]).current_dir(env!("CARGO_MANIFEST_DIR"));
    for p in pkgs {
        cmd.args(["-p", p]);
    }
    if bin_dir().ends_with("release") {
        cmd.arg("--release");
    }
    assert!(cmd.status().expect("cargo").success(), "building {pkgs:?} failed");
}

/// Builds libmpitrace.so next to mpitrace, once.
pub fn build_shim() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| cargo_build(&["pmpi-shim"]));
}

/// Builds this project's MPI library and mpirun next to mpitrace, once.
pub fn build_ours() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| cargo_build(&["mpi-core", "mpi-launcher"]));
}

/// Builds this project's MPI-5 standard ABI library (`libmpi_abi.so`, its
/// `mpicc_abi`) with the MPI library and mpirun next to mpitrace, once.
pub fn build_std_abi() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| cargo_build(&["mpi-core", "mpi-stdabi", "mpi-launcher"]));
}

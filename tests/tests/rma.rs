//! One-sided communication (chapter 11): windows of every flavor, RMA
//! operations and every synchronization mode, as C programs on 1..8 ranks
//! (oversubscribed on this machine's cores) under the project's mpirun,
//! each under a timeout; and a window program built with MPICH's compiler.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(120);

fn each_size(name: &str, sizes: &[usize], expect: &str) {
    system_tests::each_size_says_ranks(name, sizes, expect, T);
}

/// Put/Get rings, Accumulate SUM onto rank 0, vector types on either side,
/// Rput/Rget, 800 KB transfers (rendezvous) on an `MPI_Win_allocate` window;
/// with direct transfers (CMA) and with every operation as a message.
#[test]
fn fence_put_get_accumulate() {
    each_size("rma_fence", &[1, 2, 3, 4, 5, 8], "rma_fence OK");
    let exe = compile("rma_fence", Compiler::Ours);
    for n in [2, 3, 8] {
        for env in [("MPICORE_RMA_NO_CMA", "1"), ("MPICORE_RMA_NO_SHM", "1")] {
            run(Launcher::Ours, n, &exe, &[], &[env], T).assert_ok(&format!("rma_fence OK on {n} ranks"));
        }
    }
}

/// Fetch_and_op tickets all distinct, Compare_and_swap with one winner per
/// round, every predefined operation, MPI_REPLACE and MPI_NO_OP,
/// Get_accumulate old values a permutation, MAXLOC on MPI_2INT; in place
/// in a shared segment (`MPI_Win_allocate` on one host) and as messages
/// applied by the target.
#[test]
fn atomic_operations() {
    each_size("rma_atomics", &[1, 2, 3, 4, 7, 8], "rma_atomics OK");
    let exe = compile("rma_atomics", Compiler::Ours);
    for n in [2, 3, 8] {
        run(Launcher::Ours, n, &exe, &[], &[("MPICORE_RMA_NO_SHM", "1")], T)
            .assert_ok(&format!("rma_atomics OK on {n} ranks"));
    }
}

/// PSCW pairs and a star polled with MPI_Win_test, exclusive-lock
/// increments from every rank (exact total), lock_all + flush, shared locks,
/// `MPI_MODE_NOCHECK`; with direct transfers and as messages.
#[test]
fn pscw_and_passive_target() {
    each_size("rma_sync", &[1, 2, 3, 4, 6, 8], "rma_sync OK");
    let exe = compile("rma_sync", Compiler::Ours);
    for n in [2, 5] {
        run(Launcher::Ours, n, &exe, &[], &[("MPICORE_RMA_NO_CMA", "1")], T)
            .assert_ok(&format!("rma_sync OK on {n} ranks"));
    }
}

/// MPI_Win_allocate_shared: direct loads of the neighbours' memory,
/// Put/Get/Accumulate on it; dynamic windows with attach/detach.
#[test]
fn shared_and_dynamic_windows() {
    each_size("rma_shared", &[1, 2, 3, 4, 8], "rma_shared OK");
}

/// Window attributes (callbacks counted at replace, delete and free),
/// predefined attributes of every flavor, names, info, group, user error
/// handlers seeing MPI_ERR_RMA_SYNC, MPI_ERR_RANK, MPI_ERR_DISP,
/// MPI_ERR_RMA_RANGE, MPI_ERR_OP, MPI_ERR_LOCKTYPE; 1500 windows of every
/// flavor made and freed with flat memory and nothing left in /dev/shm.
#[test]
fn window_attributes_names_and_errors() {
    let exe = compile("rma_attr", Compiler::Ours);
    for n in [1, 2, 3, 5] {
        let r = run(Launcher::Ours, n, &exe, &[], &[], T);
        r.assert_ok(&format!("rma_attr OK on {n} ranks"));
        let left = system_tests::shm_leftovers_of(&r);
        assert!(left.is_empty(), "shared segments left in /dev/shm after 1500 windows: {left:?}");
    }
}

/// Ranks on two (fake) hosts: no shared window (MPI_ERR_RMA_SHARED), and
/// RMA travels over TCP between hosts (direct transfers within one):
/// fences, atomics, PSCW and locks.
#[test]
fn windows_across_hosts() {
    let hosts = [("MPICORE_FAKE_HOSTS", "2")];
    let exe = compile("rma_attr", Compiler::Ours);
    for n in [2, 4] {
        run(Launcher::Ours, n, &exe, &["split"], &hosts, T).assert_ok(&format!("rma_attr split OK on {n} ranks"));
    }
    for name in ["rma_fence", "rma_atomics", "rma_sync"] {
        let exe = compile(name, Compiler::Ours);
        for n in [2, 4] {
            run(Launcher::Ours, n, &exe, &[], &hosts, T).assert_ok(&format!("{name} OK on {n} ranks"));
        }
    }
}

/// The MPICH ABI: window programs built with Debian's `mpicc.mpich` run
/// on this library.
#[test]
fn mpich_built_window_programs_run_on_our_library() {
    for name in ["rma_fence", "rma_sync", "rma_atomics"] {
        let exe = compile(name, Compiler::Mpich);
        run(Launcher::Ours, 3, &exe, &[], &[], T).assert_ok(&format!("{name} OK on 3 ranks"));
    }
    // Window attributes, error classes and handlers through MPICH's mpi.h.
    let exe = compile("rma_attr", Compiler::Mpich);
    let r = run(Launcher::Ours, 3, &exe, &[], &[], T);
    r.assert_ok("rma_attr OK on 3 ranks");
    assert!(r.stdout.contains("library: mpi-core"), "did not run on our library: {r}");
}

/// Accumulates of `MPI_BYTE` (as MPICH does them: C's char, every integer
/// operation) and of zero-size types (no-ops); the same program passes on
/// MPICH itself.
#[test]
fn byte_and_zero_size_accumulates_as_mpich() {
    each_size("rma_acc_byte", &[1, 2, 3], "rma_acc_byte OK");
    if std::process::Command::new("mpicc.mpich").arg("-v").output().is_err() {
        panic!("mpicc.mpich is not installed (apt-get install mpich libmpich-dev; tests/run-all.sh installs it)");
    }
    let theirs = compile("rma_acc_byte", Compiler::Mpich);
    let m = std::process::Command::new(&theirs).env_remove("LD_LIBRARY_PATH").output().expect("run the MPICH build");
    assert!(m.status.success(), "on MPICH: {}", String::from_utf8_lossy(&m.stderr));
    run(Launcher::Ours, 2, &theirs, &[], &[], T).assert_ok("rma_acc_byte OK on 2 ranks");
}

/// Operations that move no data are no-ops whatever their types are made
/// of (zero counts of different predefined types, zero-size types with
/// counts, NULL buffers); moved data of different types is still
/// MPI_ERR_TYPE (MPICH suite: rma/badrma).
#[test]
fn zero_byte_operations_of_any_types() {
    each_size("rma_zero_bytes", &[1, 2, 3], "rma_zero_bytes OK");
}

/// MPI_Compare_and_swap swaps integer, logical, multi-language and byte
/// types (and MPI_CHAR) and refuses floating-point, complex, pair and
/// derived types with MPI_ERR_TYPE (MPICH suite: errors/rma/cas_type_check).
#[test]
fn compare_and_swap_types() {
    each_size("rma_cas_types", &[1, 2, 3], "rma_cas_types OK");
}

/// Locks inside a PSCW access epoch are MPI_ERR_RMA_SYNC; a lock epoch
/// after a fence ends what the fence opened, so an operation after the
/// unlock needs a new fence (MPICH suite: errors/rma/win_sync_lock_at,
/// win_sync_lock_fence).
#[test]
fn lock_epochs_do_not_overlap_active_target_ones() {
    each_size("rma_lock_epochs", &[1, 2, 3], "rma_lock_epochs OK");
}

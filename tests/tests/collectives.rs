//! Collectives end to end: C programs on 1 to 9 ranks
//! (oversubscribed on 2 cores), under the project's mpirun; every algorithm
//! is also forced through the environment (mpi-core/COLLECTIVES.md), with and without
//! the shared-memory path of small blocking collectives.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(180);

fn each_size(name: &str, sizes: &[usize], args: &[&str], env: &[(&str, &str)], expect: &str) {
    let exe = compile(name, Compiler::Ours);
    for &n in sizes {
        let r = run(Launcher::Ours, n, &exe, args, env, T);
        assert_eq!(r.code, Some(0), "{name} {args:?} on {n} ranks (env {env:?}): {r}");
        r.assert_ok(expect);
    }
}

const SIZES: &[usize] = &[1, 2, 3, 4, 5, 6, 7, 8, 9];

#[test]
fn every_collective_every_root_in_place() {
    each_size("coll_basic", SIZES, &[], &[], "coll_basic OK");
}

#[test]
fn large_messages() {
    each_size("coll_basic", &[2, 3, 4], &["big"], &[], "coll_basic OK");
}

/// Each algorithm forced, on sizes that are powers of two and not.
#[test]
fn every_algorithm() {
    let variants: &[&[(&str, &str)]] = &[
        &[
            ("MPICORE_COLL_ALLREDUCE", "ring"),
            ("MPICORE_COLL_BCAST", "scatter_allgather"),
            ("MPICORE_COLL_REDUCE", "reduce_scatter_gather"),
            ("MPICORE_COLL_ALLGATHER", "bruck"),
            ("MPICORE_COLL_ALLTOALL", "bruck"),
            ("MPICORE_COLL_GATHER_SHORT", "100000000"),
            ("MPICORE_COLL_SHM_MAX", "0"),
        ],
        &[
            ("MPICORE_COLL_ALLREDUCE", "rabenseifner"),
            ("MPICORE_COLL_ALLGATHER", "ring"),
            ("MPICORE_COLL_ALLTOALL", "pairwise"),
            ("MPICORE_COLL_REDUCE", "binomial"),
            ("MPICORE_COLL_SHM_MAX", "0"),
        ],
        &[
            ("MPICORE_COLL_ALLREDUCE", "reduce_bcast"),
            ("MPICORE_COLL_ALLGATHER", "recursive_doubling"),
            ("MPICORE_COLL_ALLTOALL", "linear"),
            ("MPICORE_COLL_GATHER_SHORT", "0"),
            ("MPICORE_COLL_BCAST", "binomial"),
            ("MPICORE_COLL_SHM_MAX", "8192"),
        ],
        &[("MPICORE_COLL_ALLREDUCE", "recursive_doubling"), ("MPICORE_COLL_SHM_MAX", "0")],
        &[
            ("MPICORE_COLL_ALLREDUCE", "direct"),
            ("MPICORE_COLL_BCAST", "linear"),
            ("MPICORE_COLL_ALLGATHER", "linear"),
            ("MPICORE_COLL_SHM_MAX", "0"),
        ],
        &[
            ("MPICORE_COLL_BCAST", "pipeline"),
            ("MPICORE_COLL_REDUCE", "pipeline"),
            ("MPICORE_COLL_SEGMENT", "1000"),
            ("MPICORE_COLL_SHM_MAX", "0"),
        ],
        // Not oversubscribed as far as the library knows: the algorithms
        // for a core per rank.
        &[("MPICORE_COLL_LINEAR_MAX", "0"), ("MPICORE_COLL_SHM_MAX", "0")],
        &[("MPICORE_COLL_SHM_MAX", "100")],
    ];
    for env in variants {
        each_size("coll_basic", &[2, 3, 5, 8], &["big"], env, "coll_basic OK");
        each_size("coll_ops", &[3, 4], &[], env, "coll_ops OK");
    }
}

#[test]
fn every_op_on_every_type_user_ops_bit_identical() {
    each_size("coll_ops", SIZES, &[], &[], "coll_ops OK");
}

#[test]
fn nonblocking_and_persistent_overlapped() {
    each_size("coll_nb", SIZES, &[], &[], "coll_nb OK");
}

/// Intercommunicators (even and odd ranks of the world): every nonblocking
/// collective at once, the v/w and reduce-scatter forms, persistent ones, a
/// non-commutative op in rank order, a derived type, the errors.
#[test]
fn intercommunicator_nonblocking_persistent_v_w() {
    each_size("coll_inter", &[2, 3, 5, 7, 8], &[], &[], "coll_inter OK");
    let forced: &[(&str, &str)] = &[
        ("MPICORE_COLL_REDUCE", "reduce_scatter_gather"),
        ("MPICORE_COLL_BCAST", "scatter_allgather"),
        ("MPICORE_COLL_GATHER_SHORT", "0"),
    ];
    each_size("coll_inter", &[5, 8], &[], forced, "coll_inter OK");
}

/// Communicators made and freed in a loop keep only the live ones'
/// shared-memory segments mapped, and new ones still get one.
/// Allreduce above the large buffers in shared-memory pieces, Allgather and
/// Alltoall read straight from the other ranks' buffers: on 2 ranks (a core
/// each), forced on 3 and 4 (oversubscribed), and without them.
#[test]
fn allreduce_in_shared_memory_pieces_direct_allgather_alltoall() {
    each_size("coll_pieces", &[2], &[], &[], "coll_pieces OK");
    each_size("coll_pieces", &[2], &[], &[("MPICORE_NO_CMA", "1")], "coll_pieces OK");
    each_size("coll_pieces", &[2], &[], &[("MPICORE_COLL_SHM_DIRECT", "0")], "coll_pieces OK");
    each_size("coll_pieces", &[3, 4], &[], &[("MPICORE_COLL_SHM_PIECES_OVERSUB", "1")], "coll_pieces OK");
    each_size("coll_pieces", &[2, 3], &[], &[("MPICORE_COLL_SHM_PIECES", "0")], "coll_pieces OK");
}

#[test]
fn shared_memory_segments_freed_with_their_communicators() {
    each_size("coll_shm", &[1, 2, 3, 8], &[], &[], "coll_shm OK");
    each_size("coll_shm", &[3], &[], &[("MPICORE_COLL_SHM_MAX", "0")], "coll_shm OK");
}

/// Small nonblocking collectives in shared memory: many outstanding, a
/// root far ahead, failed calls; and the same program with messages only.
#[test]
fn nonblocking_in_shared_memory() {
    each_size("coll_nbflat", SIZES, &[], &[], "coll_nbflat OK");
    each_size("coll_nbflat", &[3], &[], &[("MPICORE_COLL_SHM_MAX", "0")], "coll_nbflat OK");
    each_size("coll_nbflat", &[4], &[], &[("MPICORE_ASYNC_PROGRESS", "0")], "coll_nbflat OK");
}

/// Small blocking collectives whose ranks take different paths in one
/// operation (contiguous data: the fast path; a strided type: the general
/// one), many broadcasts with rotating roots, in place and not, sizes that
/// do not match; and the same values with messages only.
#[test]
fn fast_and_general_shared_memory_paths_meet() {
    each_size("coll_fast", SIZES, &[], &[], "coll_fast OK");
    each_size("coll_fast", &[3, 4], &[], &[("MPICORE_COLL_SHM_MAX", "0")], "coll_fast OK");
}

/// Alltoallv/w in shared memory: counts differing per pair, ranks whose
/// blocks go as messages next to ranks in the segment, strided types,
/// counts that disagree and a bad count (an error, no hang); the same with
/// messages only.
#[test]
fn alltoallv_in_shared_memory_and_by_message() {
    each_size("coll_vshm", SIZES, &[], &[], "coll_vshm OK");
    each_size("coll_vshm", &[2, 5], &["messages"], &[("MPICORE_COLL_SHM_MAX", "0")], "coll_vshm OK");
}

#[test]
fn bad_arguments_return_the_right_class() {
    each_size("coll_errors", SIZES, &[], &[], "coll_errors OK");
}

#[test]
fn invalid_root_is_fatal_by_default() {
    let exe = compile("coll_errors", Compiler::Ours);
    let r = run(Launcher::Ours, 3, &exe, &["fatal"], &[], T);
    assert!(r.code.is_some_and(|c| c != 0), "job did not fail: {r}");
    assert!(r.stderr.contains("MPI_Bcast") && r.stderr.contains("Invalid root"), "message: {r}");
    assert!(!r.stdout.contains("UNREACHABLE"), "{r}");
}

/// User reduction functions, attribute callbacks and error handlers that
/// call MPI (as the standard allows): blocking, nonblocking and persistent
/// reductions, in shared memory and over TCP, none hangs on the library's
/// lock and every value is right.
#[test]
fn user_code_may_call_mpi() {
    each_size("user_calls_mpi", &[1, 2, 3, 4], &[], &[], "user_calls_mpi OK");
    each_size("user_calls_mpi", &[4], &[], &[("MPICORE_FAKE_HOSTS", "2")], "user_calls_mpi OK");
    each_size("user_calls_mpi", &[3], &[], &[("MPICORE_ASYNC_PROGRESS", "0")], "user_calls_mpi OK");
}

/// Blocking and nonblocking collectives started in different orders on
/// one communicator (erroneous, but MPICH completes it and mpi4py's test
/// of `Comm.Iagree` relies on it; issue 19.8): they complete with the
/// right values, in shared memory and with messages, small and large.
/// (Before, the ranks met in the wrong operations, and the job stopped
/// with a message about the library's internal rank -2 and tag -1.)
#[test]
fn collectives_in_different_orders_complete() {
    let exe = compile("coll_order", Compiler::Ours);
    // Arguments, sizes, environment.
    type Case<'a> = (&'a [&'a str], &'a [usize], &'a [(&'a str, &'a str)]);
    let cases: &[Case] = &[
        (&["ibarrier", "1"], &[2, 3, 4], &[]),
        (&["iallreduce", "1"], &[2, 3, 4], &[]),
        (&["iallreduce", "5000"], &[2, 3], &[]),
        (&["ibarrier", "5000"], &[2, 3], &[]),
        (&["iallreduce", "50000"], &[2, 3], &[]),
        (&["iallreduce", "1"], &[3], &[("MPICORE_COLL_SHM_MAX", "0")]),
        // The pattern of mpi4py's test of Comm.Iagree (its fallback is an
        // MPI_Iallreduce): root Iallreduce + Barrier, the others Barrier +
        // Iallreduce.
        (&["iagree", "1"], &[2, 3, 4], &[]),
        (&["iagree", "1"], &[2, 3], &[("MPICORE_COLL_SHM_MAX", "0")]),
    ];
    for &(args, sizes, env) in cases {
        for &n in sizes {
            let r = run(Launcher::Ours, n, &exe, args, env, Duration::from_secs(60));
            assert_eq!(r.code, Some(0), "{args:?} on {n} ranks (env {env:?}): {r}");
            assert_eq!(r.stdout.matches(": no error").count(), n, "{args:?} on {n} ranks (env {env:?}): {r}");
        }
    }
}

/// MPI_Reduce_local refuses MPI_IN_PLACE and one buffer given as both
/// (MPI_ERR_BUFFER) (MPICH suite: errors/coll/reduce_local).
#[test]
fn reduce_local_buffer_errors() {
    system_tests::each_size_says_ranks("coll_reduce_local_args", &[1, 2], "coll_reduce_local_args OK", T);
}

//! Groups, communicators, intercommunicators, topologies, caching, info
//! objects and error handling (chapters 6-8): C programs on 1..9 ranks
//! (odd sizes included), under the project's mpirun.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(120);

fn each_size(name: &str, sizes: &[usize], expect: &str) {
    let exe = compile(name, Compiler::Ours);
    for &n in sizes {
        run(Launcher::Ours, n, &exe, &[], &[], T).assert_ok(expect);
    }
}

#[test]
fn group_algebra_and_translate_ranks() {
    each_size("group_ops", &[1, 2, 3, 5, 8], "group_ops OK");
}

#[test]
fn dup_split_create_isolation_and_info() {
    each_size("comm_basic", &[1, 2, 3, 4, 7, 8], "comm_basic OK");
}

/// Arguments wrong at one rank only (split colors and types, groups of
/// Comm_create, topology arguments) fail the call at every rank, at once;
/// also when some or all ranks run at MPI_THREAD_MULTIPLE (more rounds).
#[test]
fn arguments_wrong_at_one_rank_fail_everywhere() {
    let exe = compile("comm_bad_args", Compiler::Ours);
    for mode in ["single", "multiple", "mixed"] {
        for n in [1, 2, 3, 5] {
            run(Launcher::Ours, n, &exe, &[mode], &[], T).assert_ok(&format!("comm_bad_args OK on {n} ranks ({mode})"));
        }
    }
}

/// The Sessions model: a sessions-only program, and one that uses a
/// session alongside the world model (and after its MPI_Finalize).
#[test]
fn sessions_psets_and_communicators_from_groups() {
    let exe = compile("sessions", Compiler::Ours);
    for n in [1, 2, 3, 4] {
        let ns = n.to_string();
        run(Launcher::Ours, n, &exe, &[&ns], &[], T).assert_ok(&format!("sessions OK on {n} ranks\n"));
        run(Launcher::Ours, n, &exe, &[&ns, "world"], &[], T).assert_ok(&format!("sessions OK on {n} ranks (world)"));
    }
}

/// MPI_Session_init as the first call, with an info object made before the
/// runtime started (its thread_level honoured), process set names in lower
/// case (MPICH suite: init/session, init/session_self).
#[test]
fn session_init_with_an_info_made_before_it() {
    system_tests::each_size_says_ranks("session_info_first", &[1, 2, 3], "session_info_first OK", T);
}

/// Sessions made while MPI_Init_thread runs at MPI_THREAD_MULTIPLE (by
/// threads at once) run at that level, whatever they ask (MPICH suite:
/// threads/init/mult_session).
#[test]
fn sessions_made_after_init_thread_multiple_run_at_its_level() {
    system_tests::each_size_says_ranks("session_thread_level", &[1, 2, 3], "session_thread_level OK", T);
}

#[test]
fn intercommunicators_ping_pong_and_merge() {
    each_size("comm_inter", &[2, 3, 4, 7], "comm_inter OK");
}

#[test]
fn split_and_create_on_intercommunicators() {
    each_size("comm_inter_split", &[2, 3, 4, 5, 8, 9], "comm_inter_split OK");
}

#[test]
fn intercommunicator_collectives() {
    each_size("comm_intercoll", &[2, 3, 5, 8], "comm_intercoll OK");
}

#[test]
fn cartesian_topologies_and_neighborhood_collectives() {
    each_size("topo_cart", &[1, 2, 3, 4, 6, 9], "topo_cart OK");
}

/// `MPI_Neighbor_*_init` started again with new values, the `_c` forms,
/// strided and per-block types, several edges between two processes.
#[test]
fn persistent_and_large_count_neighborhood_collectives() {
    each_size("topo_neighbor", &[1, 2, 3, 4, 6, 9], "topo_neighbor OK");
}

#[test]
fn graph_and_distributed_graph_topologies() {
    each_size("topo_graph", &[1, 2, 3, 5, 8], "topo_graph OK");
}

#[test]
fn attribute_callbacks_and_predefined_attributes() {
    let exe = compile("attr_cache", Compiler::Ours);
    for n in [1, 2, 4] {
        let r = run(Launcher::Ours, n, &exe, &[], &[], T);
        r.assert_ok("attr_cache OK");
        assert!(
            r.stdout.contains("self attribute 42 deleted at finalize"),
            "MPI_COMM_SELF attribute not deleted at finalize: {r}"
        );
    }
}

#[test]
fn alloc_mem_and_free_mem() {
    each_size("comm_alloc_mem", &[1, 3], "comm_alloc_mem OK");
}

#[test]
fn info_objects() {
    each_size("info_basic", &[1, 3], "info_basic OK");
    each_size("info_before_init", &[1, 2], "info_before_init OK");
}

/// MPI_Comm_create_group does not wait for the caller's pending idups of
/// the parent: evens create then idup, odds idup then create (MPICH suite:
/// comm/comm_create_group_idup).
#[test]
fn create_group_is_not_ordered_with_idups_of_the_parent() {
    system_tests::each_size_says_ranks("comm_group_idup_order", &[1, 2, 3, 4, 5], "comm_group_idup_order OK", T);
}

/// MPI_Comm_get_info returns the hints the library knows, not the keys it
/// ignores (MPICH suite: comm/comm_info).
#[test]
fn comm_get_info_leaves_out_unknown_keys() {
    system_tests::each_size_says_ranks("comm_info_used", &[1, 2], "comm_info_used OK", T);
}

/// MPI_Info_create_env gives the same keys and values before MPI_Init,
/// after it (those of MPI_INFO_ENV) and after MPI_Finalize, and takes
/// `char *argv[]` (MPICH suite: info/infocreateenv).
#[test]
fn info_create_env_is_the_same_before_and_after_init() {
    let exe = compile("info_env_same", Compiler::Ours);
    for n in [1, 2] {
        run(Launcher::Ours, n, &exe, &["one", "two"], &[], T).assert_ok(&format!("info_env_same OK on {n} ranks"));
    }
}

#[test]
fn user_error_handlers_and_error_classes() {
    each_size("errh_user", &[1, 2, 3], "errh_user OK");
}

/// Four threads per rank create communicators from parents of their own at
/// the same time (dup, split, create, create_group, Cart_create, dup of an
/// intercommunicator); a context id given to two live communicators of one
/// process would cross their messages, which the program checks.
#[test]
fn concurrent_communicator_creation_in_threads() {
    let exe = compile("comm_threads", Compiler::Ours);
    for n in [1, 2, 3, 4, 5] {
        run(Launcher::Ours, n, &exe, &["60"], &[], T)
            .assert_ok(&format!("comm_threads OK on {n} ranks, 60 iterations"));
    }
}

/// `MPI_Comm_idup` does not wait for the other processes: a rank that joins
/// only after a message sent after the others' idup still completes it.
#[test]
fn nonblocking_comm_idup() {
    each_size("comm_idup", &[1, 2, 3, 4, 7], "comm_idup OK");
}

#[test]
fn removing_error_classes_codes_and_strings() {
    each_size("comm_error_remove", &[1, 2], "comm_error_remove OK");
}

/// MPICH's numbering of error classes (79, 80, the MPIX ones 101-105), and
/// added classes and codes above `MPI_ERR_LASTCODE` as MPICH hands them out.
#[test]
fn error_classes_in_mpich_numbering() {
    each_size("errh_classes", &[1, 2], "errh_classes OK");
}

/// The ranks of this machine as 2 or 3 hosts joined by TCP
/// (`MPICORE_FAKE_HOSTS`): `Comm_split_type` shared gives each host's ranks;
/// threaded creation, idup, neighborhood collectives and intercommunicator
/// splits also run across hosts.
#[test]
fn communicators_across_hosts() {
    let exe = compile("comm_hosts", Compiler::Ours);
    for k in ["2", "3"] {
        for n in [3, 4, 7] {
            run(Launcher::Ours, n, &exe, &[], &[("MPICORE_FAKE_HOSTS", k)], T)
                .assert_ok(&format!("comm_hosts OK on {n} ranks, {k} hosts"));
        }
    }
    for (prog, args) in
        [("comm_threads", &["20"][..]), ("comm_idup", &[]), ("topo_neighbor", &[]), ("comm_inter_split", &[])]
    {
        let exe = compile(prog, Compiler::Ours);
        run(Launcher::Ours, 5, &exe, args, &[("MPICORE_FAKE_HOSTS", "2")], T).assert_ok(&format!("{prog} OK"));
    }
}

#[test]
fn create_and_free_many_intercommunicators() {
    let exe = compile("comm_inter_many", Compiler::Ours);
    for n in [2, 3, 5] {
        run(Launcher::Ours, n, &exe, &[], &[], T).assert_ok(&format!("comm_inter_many OK: 5000 rounds on {n} ranks"));
    }
}

#[test]
fn create_and_free_100000_communicators() {
    let exe = compile("comm_many", Compiler::Ours);
    run(Launcher::Ours, 2, &exe, &[], &[], Duration::from_secs(300)).assert_ok("comm_many OK: 100000 communicators");
    run(Launcher::Ours, 5, &exe, &["4000"], &[], T).assert_ok("comm_many OK: 4000 communicators");
}

/// MPICH-built programs use `MPIR_Dup_fn` (behind `MPI_COMM_DUP_FN` and
/// `MPI_DUP_FN`), `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` from the library.
#[test]
fn mpich_built_programs_find_dup_fn_and_unweighted() {
    let exe = compile("attr_cache", Compiler::Mpich);
    let r = run(Launcher::Ours, 2, &exe, &[], &[], T);
    r.assert_ok("attr_cache OK");
    assert!(r.stdout.contains("self attribute 42 deleted at finalize"), "{r}");
    let exe = compile("topo_graph", Compiler::Mpich);
    run(Launcher::Ours, 3, &exe, &[], &[], T).assert_ok("topo_graph OK");
}

/// MPI_Comm_create_group many times with one tag on changing, overlapping
/// and disjoint groups, members running ahead into their next group while
/// others are still in the previous one (issue 19.7); and create_group
/// and MPI_Comm_idup called in opposite orders at even and odd ranks.
#[test]
fn create_group_with_one_tag_on_changing_groups() {
    let exe = compile("comm_create_group_many", Compiler::Ours);
    for n in [3, 4, 8] {
        run(Launcher::Ours, n, &exe, &[], &[], T).assert_ok(&format!("comm_create_group_many OK on {n} ranks"));
    }
}

/// A failing copy callback fails MPI_Comm_dup, MPI_Comm_idup and
/// MPI_Type_dup (at one rank: the others' dups complete) with the null
/// handle; an attribute whose keyval was freed can still be deleted
/// (issue 19.9).
#[test]
fn failing_copy_callbacks_and_freed_keyvals() {
    each_size("attr_fail", &[1, 2, 3], "attr_fail OK");
}

/// A keyval freed while attributes use it may be freed again (a delete
/// callback freeing its own keyval, then the program its copy of the
/// handle), for communicators, datatypes and windows; once its last
/// attribute is gone the handle is invalid (MPICH suite:
/// attr/keyval_double_free*).
#[test]
fn keyval_freed_again_while_in_use() {
    system_tests::each_size_says_ranks("attr_free_twice", &[1, 2, 3], "attr_free_twice OK", T);
}

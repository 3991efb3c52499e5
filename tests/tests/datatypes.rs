//! Derived datatypes and packing end to end: C programs under the
//! project's mpirun (chapter 4 of the standard).

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
fn constructors_queries_decoding_and_packing() {
    each_size("dt_types", &[1], "dt_types OK");
}

#[test]
fn derived_types_in_point_to_point() {
    each_size("dt_comm", &[1, 2, 3, 4], "dt_comm OK");
}

#[test]
fn bad_input_returns_the_right_classes() {
    each_size("dt_errors", &[1, 2], "dt_errors OK");
}

#[test]
fn derived_types_without_cma_stream_and_unpack_in_pieces() {
    let exe = compile("dt_comm", Compiler::Ours);
    run(Launcher::Ours, 2, &exe, &[], &[("MPICORE_NO_CMA", "1")], T).assert_ok("dt_comm OK");
}

#[test]
fn packed_probe_bsend_persistent_large_count_external32() {
    each_size("dt_more", &[2, 3], "dt_more OK");
}

/// Random nested types built by the same program against our library and
/// against Debian's MPICH: same sizes, bounds, packed bytes and partially
/// received bytes (see tests/c/dt_fuzz.c for what is left out and why).
#[test]
fn random_types_pack_like_mpich() {
    if std::process::Command::new("mpicc.mpich").arg("-v").output().is_err() {
        panic!("mpicc.mpich is not installed (apt-get install mpich libmpich-dev; tests/run-all.sh installs it)");
    }
    let ours = compile("dt_fuzz", Compiler::Ours);
    let theirs = compile("dt_fuzz", Compiler::Mpich);
    let strip = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                // Drop "tlb X text Y": MPICH's true extent counts explicit bounds.
                match w.iter().position(|x| *x == "tlb") {
                    Some(i) => [&w[..i], &w[i + 4..]].concat().join(" "),
                    None => w.join(" "),
                }
            })
            .collect()
    };
    for seed in ["0", "1", "2"] {
        let args = ["300", "0", seed];
        let r = run(Launcher::Ours, 1, &ours, &args, &[], T);
        r.assert_ok("299 ");
        let m = std::process::Command::new(&theirs)
            .args(args)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .expect("run the MPICH build");
        assert!(m.status.success(), "MPICH build failed: {}", String::from_utf8_lossy(&m.stderr));
        let (a, b) = (strip(&r.stdout), strip(&String::from_utf8_lossy(&m.stdout)));
        assert_eq!(a.len(), b.len(), "seed {seed}: line counts differ");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x, y, "seed {seed}: ours (left) and MPICH (right) differ");
        }
    }
}

#[test]
fn derived_types_in_collectives() {
    each_size("dt_coll", &[1, 2, 5], "dt_coll OK");
}

/// The same programs built with MPICH's mpicc run on our library (ABI).
#[test]
fn mpich_built_datatype_programs_run_on_our_library() {
    if std::process::Command::new("mpicc.mpich").arg("-v").output().is_err() {
        panic!("mpicc.mpich is not installed (apt-get install mpich libmpich-dev; tests/run-all.sh installs it)");
    }
    for (name, expect) in [("dt_comm", "dt_comm OK"), ("dt_more", "dt_more OK"), ("dt_errors", "dt_errors OK")] {
        let exe = compile(name, Compiler::Mpich);
        run(Launcher::Hydra, 3, &exe, &[], &[], T).assert_ok(expect);
    }
}

/// `MPIX_C_FLOAT16`: a predefined type in every role, with binary16
/// reductions rounded to nearest even.
#[test]
fn float16_type_in_p2p_pack_and_reductions() {
    each_size("dt_float16", &[1, 2, 3], "dt_float16 OK");
}

/// `MPI_C_COMPLEX`'s name and the bounds of structs of only `MPI_LB` or
/// `MPI_UB`: the same program passes on our library and on MPICH itself.
#[test]
fn complex_name_and_marker_only_structs_as_mpich() {
    each_size("dt_names_bounds", &[1, 2], "dt_names_bounds OK");
    if std::process::Command::new("mpicc.mpich").arg("-v").output().is_err() {
        panic!("mpicc.mpich is not installed (apt-get install mpich libmpich-dev; tests/run-all.sh installs it)");
    }
    let theirs = compile("dt_names_bounds", Compiler::Mpich);
    // On MPICH itself (a singleton): the expectations are MPICH's answers.
    let m = std::process::Command::new(&theirs).env_remove("LD_LIBRARY_PATH").output().expect("run the MPICH build");
    assert!(m.status.success(), "on MPICH: {}", String::from_utf8_lossy(&m.stderr));
    assert!(String::from_utf8_lossy(&m.stdout).contains("dt_names_bounds OK"));
    // And the MPICH-built binary on our library.
    run(Launcher::Ours, 2, &theirs, &[], &[], T).assert_ok("dt_names_bounds OK");
}

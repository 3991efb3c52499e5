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

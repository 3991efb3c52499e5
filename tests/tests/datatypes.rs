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

//! The MPICH ABI: programs compiled with Debian's `mpicc.mpich` run on this
//! library unchanged, under this project's `mpirun` and under MPICH's own
//! `mpiexec.mpich` (hydra, PMI-1); and programs built with our `mpicc` run
//! under hydra too.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(90);

#[test]
fn mpich_built_binary_runs_on_our_library_under_our_mpirun() {
    let exe = compile("abi_check", Compiler::Mpich);
    for n in [1, 2, 4] {
        let r = run(Launcher::Ours, n, &exe, &[], &[], T);
        r.assert_ok("abi_check OK");
        assert!(r.stdout.contains("library: mpi-core"), "did not run on our library: {r}");
    }
    let exe = compile("p2p_basic", Compiler::Mpich);
    run(Launcher::Ours, 3, &exe, &[], &[], T).assert_ok("p2p_basic OK");
}

#[test]
fn mpich_built_binary_runs_on_our_library_under_hydra() {
    let exe = compile("abi_check", Compiler::Mpich);
    let r = run(Launcher::Hydra, 3, &exe, &[], &[], T);
    r.assert_ok("abi_check OK");
    assert!(r.stdout.contains("library: mpi-core"), "did not run on our library: {r}");
    let exe = compile("waitsome", Compiler::Mpich);
    run(Launcher::Hydra, 4, &exe, &[], &[], T).assert_ok("waitsome OK");
}

#[test]
fn our_binaries_run_under_hydra() {
    let exe = compile("p2p_basic", Compiler::Ours);
    run(Launcher::Hydra, 4, &exe, &[], &[], T).assert_ok("p2p_basic OK");
}

#[test]
fn singleton_without_launcher() {
    system_tests::ensure_built();
    let exe = compile("abi_check", Compiler::Ours);
    let out = std::process::Command::new(&exe).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("abi_check OK on 1 ranks"));
}

#[test]
fn profiling_interface_sees_only_the_applications_calls() {
    let app = compile("pmpi_app", Compiler::Ours);
    let dir = app.parent().unwrap().to_path_buf();
    let tool = dir.join("libpmpi_tool.so");
    let out = std::process::Command::new(system_tests::bin_dir().join("mpicc"))
        .args(["-shared", "-fPIC", "-o"])
        .arg(&tool)
        .arg(system_tests::root().join("tests/c/pmpi_tool.c"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let preload = tool.display().to_string();
    let r = run(Launcher::Ours, 3, &app, &[], &[("LD_PRELOAD", &preload)], T);
    assert_eq!(r.code, Some(0), "{r}");
    for rank in 0..3 {
        assert!(
            r.stdout.contains(&format!("tool: rank {rank} saw 3 MPI_Send and 2 MPI_Barrier")),
            "profiling counts wrong: {r}"
        );
    }
}

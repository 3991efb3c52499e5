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

#[test]
fn install_to_a_prefix_works() {
    system_tests::ensure_built();
    let prefix = std::env::temp_dir().join(format!("mpicore-prefix-{}", std::process::id()));
    let out = std::process::Command::new(system_tests::root().join("mpi-core/install.sh"))
        .arg(&prefix)
        .env("MPICORE_INSTALL_PROFILE", if cfg!(debug_assertions) { "debug" } else { "release" })
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for f in [
        "bin/mpicc",
        "bin/mpirun",
        "bin/mpifort",
        "bin/mpif90",
        "bin/mpif77",
        "lib/libmpi.so.12",
        "lib/libmpich.so.12",
        "lib/libmpichfort.so.12",
        "lib/libmpifort.so.12",
        "include/mpi.h",
        "include/mpif.h",
        "include/mpi_f08.f90",
    ] {
        assert!(prefix.join(f).exists(), "{f} not installed");
    }
    // The modules were compiled for gfortran at installation.
    let fortran = std::fs::read_dir(prefix.join("include/fortran")).expect("include/fortran").count();
    assert!(fortran >= 1, "no compiled Fortran modules");
    let fexe = prefix.join("basics_f08");
    let out = std::process::Command::new(prefix.join("bin/mpifort"))
        .arg("-o")
        .arg(&fexe)
        .arg(system_tests::root().join("tests/fortran/basics_f08.f90"))
        .current_dir(&prefix)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = std::process::Command::new(prefix.join("bin/mpirun"))
        .args(["-n", "2"])
        .arg(&fexe)
        .env("MPIEXEC_TIMEOUT", "60")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("fortran f08 OK on 2 ranks"), "{out:?}");
    let exe = prefix.join("ring");
    let st = std::process::Command::new(prefix.join("bin/mpicc"))
        .arg("-o")
        .arg(&exe)
        .arg(system_tests::root().join("tests/bench/ring.c"))
        .status()
        .unwrap();
    assert!(st.success());
    let out = std::process::Command::new(prefix.join("bin/mpirun"))
        .args(["-n", "3"])
        .arg(&exe)
        .arg("10")
        .env("MPIEXEC_TIMEOUT", "60")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ring 3 ranks"));
    let _ = std::fs::remove_dir_all(&prefix);
}

/// The function symbols (`T`, or weak: `W`) a shared library defines and
/// exports.
fn exported_functions(lib: &std::path::Path) -> std::collections::BTreeSet<String> {
    let out = std::process::Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output().unwrap();
    assert!(out.status.success(), "nm {}: {}", lib.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "T" | "W")).then(|| f[2].to_string())
        })
        .collect()
}

#[test]
fn every_mpi_and_mpix_function_mpich_exports_is_exported_here_too() {
    system_tests::ensure_built();
    // Debian's MPICH, where the dynamic linker finds it.
    let ldconfig = std::process::Command::new("/sbin/ldconfig").arg("-p").output().unwrap();
    let listing = String::from_utf8_lossy(&ldconfig.stdout);
    let mpich = listing
        .lines()
        .find(|l| l.trim_start().starts_with("libmpich.so.12 "))
        .and_then(|l| l.rsplit(" => ").next())
        .map(|p| std::path::PathBuf::from(p.trim()))
        .expect("libmpich.so.12 is installed (apt-get install libmpich-dev)");
    let theirs = exported_functions(&mpich);
    let ours = exported_functions(&system_tests::bin_dir().join("libmpi.so"));
    let api: Vec<&String> =
        theirs.iter().filter(|s| ["MPI_", "PMPI_", "MPIX_", "PMPIX_"].iter().any(|p| s.starts_with(p))).collect();
    assert!(api.len() > 800, "only {} MPI functions found in {}", api.len(), mpich.display());
    // MPICH's extensions are part of what programs built against it call.
    let mpix = api.iter().filter(|s| s.starts_with("MPIX_")).count();
    assert!(mpix >= 15, "only {mpix} MPIX_ functions found in {}", mpich.display());
    for extra in ["MPIX_Comm_iagree", "PMPIX_Comm_iagree", "MPIX_Comm_is_revoked", "PMPIX_Comm_is_revoked"] {
        assert!(ours.contains(extra), "{extra} (MPICH 4.2) is not exported by libmpi.so");
    }
    let missing: Vec<&&String> = api.iter().filter(|s| !ours.contains(**s)).collect();
    assert!(
        missing.is_empty(),
        "{} MPI functions of {} are not exported by libmpi.so: {missing:?}",
        missing.len(),
        mpich.display()
    );
}

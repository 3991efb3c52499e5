//! `mpitrace check --correctness`: each rule finds its planted fault
//! (tests/c/correctness.c) with the right call site, on Debian's MPICH and
//! on this project's MPI (most also on Debian's Open MPI), and flags
//! nothing in a correct program or the demo sample (tests/demo/stencil.c).

mod common;

use common::bin_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let d = exe.parent().unwrap().parent().unwrap().join("mpitrace-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mpi {
    Mpich,
    Ours,
    /// Debian's Open MPI, through the shim's translation layers.
    Open,
    /// This project's MPI under the MPI-5 standard ABI (`mpicc_abi`), also
    /// through translation layers.
    StdAbi,
}

/// Builds libmpitrace.so (and for `Ours` the MPI library and mpirun) next
/// to the mpitrace binary, once.
fn build(mpi: Mpi) {
    common::build_shim();
    match mpi {
        Mpi::Ours => common::build_ours(),
        Mpi::StdAbi => common::build_std_abi(),
        _ => {}
    }
}

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// `correctness.c:N` of the line holding `marker`.
fn site(marker: &str) -> String {
    let text = std::fs::read_to_string(source("tests/c/correctness.c")).unwrap();
    // Whole markers: `@pairs-gather` is not `@pairs-gather-odd`.
    let n = text.lines().position(|l| l.contains(&format!("{marker} */"))).unwrap_or_else(|| panic!("no {marker}"));
    format!("correctness.c:{}", n + 1)
}

/// Records `src` (built for `mpi`) with `args` on 4 ranks, then runs
/// `check --correctness`: (exit code, output).
fn check(mpi: Mpi, src: &str, args: &[&str], record_flags: &[&str]) -> (i32, String) {
    build(mpi);
    let dir = scratch(&format!("correctness-{}-{mpi:?}", args.first().unwrap_or(&"demo")));
    let exe = dir.join("prog");
    let cc = match mpi {
        Mpi::Mpich => PathBuf::from("mpicc.mpich"),
        Mpi::Ours => bin_dir().join("mpicc"),
        Mpi::Open => PathBuf::from("mpicc.openmpi"),
        Mpi::StdAbi => bin_dir().join("mpicc_abi"),
    };
    let st = Command::new(&cc)
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O0", "-g", "-Wno-stringop-overflow"])
        .arg(source(src))
        .arg("-o")
        .arg(&exe)
        .arg("-lm")
        .status();
    assert!(
        st.is_ok_and(|s| s.success()),
        "compiling {src} with {} failed (Debian packages mpich and libopenmpi-dev?)",
        cc.display()
    );
    let launcher: Vec<String> = match mpi {
        Mpi::Mpich => vec!["mpiexec.mpich".into()],
        Mpi::Ours | Mpi::StdAbi => vec![bin_dir().join("mpirun").display().to_string()],
        Mpi::Open => ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"].map(String::from).to_vec(),
    };
    let trace = dir.join("trace");
    let out = Command::new("timeout")
        .args(["-k", "5", "90"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .args(["record", "-o"])
        .arg(&trace)
        .args(record_flags)
        .arg("--")
        .args(&launcher)
        .args(["-n", "4"])
        .arg(&exe)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "timed out: {}", String::from_utf8_lossy(&out.stderr));
    let junit = dir.join("junit.xml");
    let c = Command::new(env!("CARGO_BIN_EXE_mpitrace"))
        .args(["check", "--correctness", "--color", "never", "--junit"])
        .arg(&junit)
        .arg(&trace)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&c.stdout).into_owned();
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testsuite") && xml.contains("unsafe-send-cycle"), "{xml}");
    (c.status.code().unwrap_or(-1), text)
}

fn failures(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("FAIL")).collect()
}

/// The one finding of correctness.c in `mode` (which must have exactly
/// one), and the whole output.
fn the_failure(mpi: Mpi, mode: &str) -> (String, String) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &[mode], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 1, "{text}");
    (f[0].to_string(), text)
}

fn send_cycle(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["sendcycle"], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 1, "{text}");
    let at = site("@sendcycle");
    let want = format!(
        "FAIL unsafe-send-cycle: rank 0 in MPI_Send(to 1, tag 5) at {at}, rank 1 in MPI_Send(to 2, tag 5) at {at}, \
         rank 2 in MPI_Send(to 3, tag 5) at {at}, rank 3 in MPI_Send(to 0, tag 5) at {at}: each sends before it receives"
    );
    assert!(f[0].starts_with(&want), "{text}");
}

fn count_differs(mpi: Mpi) {
    // MPICH hangs in this reduction: the hang watcher ends it, and the
    // killed trace is checked.
    let (code, text) = check(mpi, "tests/c/correctness.c", &["count"], &["--hang-after", "2", "--kill-on-hang"]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 1, "{text}");
    assert!(
        f[0].contains("collective-mismatch: collective #1 on WORLD (MPI_Allreduce): the counts differ: ranks 0-2 give 16 bytes; rank 3 gives 8 bytes"),
        "{text}"
    );
    assert!(f[0].contains(&site("@count")), "{text}");
}

fn any_source(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["anysource"], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    // The first two receives had a rival pending; the last had none.
    assert_eq!(f.len(), 2, "{text}");
    let at = site("@anysource");
    for l in &f {
        assert!(
            l.starts_with(&format!(
                "FAIL any-source-race: rank 0: MPI_Recv(from any, tag 4) at {at} matched the message of rank "
            )),
            "{text}"
        );
        assert!(l.contains("pending too: which one it gets depends on timing"), "{text}");
    }
}

fn types(mpi: Mpi) {
    let (found, text) = the_failure(mpi, "types");
    let want = format!(
        "FAIL type-mismatch: rank 1: MPI_Recv(from 0, tag 8) at {} received as MPI_INT a message rank 0 sent as MPI_DOUBLE (MPI_Send at {})",
        site("@types-recv"),
        site("@types-send")
    );
    assert_eq!(found, want, "{text}");
}

fn leaks(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["leak"], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    let reqs: Vec<&&str> = f.iter().filter(|l| l.contains("request-not-completed")).collect();
    let comms: Vec<&&str> = f.iter().filter(|l| l.contains("communicator-not-freed")).collect();
    assert_eq!((reqs.len(), comms.len(), f.len()), (4, 4, 8), "{text}");
    assert!(
        reqs[1].contains(&format!("rank 1: the request of MPI_Isend(to 2, tag 9) at {}", site("@leak-request"))),
        "{text}"
    );
    assert!(comms[2].contains(&format!("made by MPI_Comm_dup at {} was not freed", site("@leak-comm"))), "{text}");
}

fn derived_types(mpi: Mpi) {
    let (found, text) = the_failure(mpi, "derived");
    let want = format!(
        "FAIL type-mismatch: rank 1: MPI_Recv(from 0, tag 11) at {} received as 6 x MPI_INT a message rank 0 sent as \
         1 x the datatype committed at {}, whose type signatures differ (MPI_Send at {})",
        site("@derived-recv"),
        site("@derived-commit"),
        site("@derived-send")
    );
    assert_eq!(found, want, "{text}");
}

fn collective_signatures(mpi: Mpi) {
    let (found, text) = the_failure(mpi, "collsig");
    let want = format!(
        "FAIL collective-mismatch: collective #1 on WORLD (MPI_Bcast): the type signatures differ: ranks 0-2 give \
         4 x MPI_INT; rank 3 gives 2 x MPI_DOUBLE (called by rank 3 at {}, ranks 0-2 at {})",
        site("@collsig-odd"),
        site("@collsig-rest")
    );
    assert_eq!(found, want, "{text}");
}

fn truncation(mpi: Mpi) {
    let (found, text) = the_failure(mpi, "truncate");
    let want = format!(
        "FAIL truncation: rank 1: MPI_Recv(from 0, tag 10) at {} had room for 4 bytes but rank 0 sent 8 bytes \
         (MPI_Send at {}): the message was truncated (MPI_ERR_TRUNCATE)",
        site("@truncate-recv"),
        site("@truncate-send")
    );
    assert_eq!(found, want, "{text}");
}

fn truncation_nonblocking(mpi: Mpi) {
    let (found, text) = the_failure(mpi, "truncate-nb");
    let want = format!(
        "FAIL truncation: rank 1: MPI_Irecv(from 0, tag 14) at {} had room for 8 bytes but rank 0 sent 12 bytes \
         (MPI_Send at {}): the message was truncated (MPI_ERR_TRUNCATE in MPI_Wait at {})",
        site("@truncnb-irecv"),
        site("@truncnb-send"),
        site("@truncnb-wait")
    );
    assert_eq!(found, want, "{text}");
}

fn truncation_multi(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["truncate-multi"], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 4, "{text}");
    for (tag, call, marker) in [
        (15, "MPI_Waitall", "all"),
        (16, "MPI_Waitany", "any"),
        (17, "MPI_Waitsome", "some"),
        (18, "MPI_Testall", "test"),
    ] {
        let wait = if marker == "test" { "testall".to_string() } else { format!("wait{marker}") };
        let want = format!(
            "FAIL truncation: rank 1: MPI_Irecv(from 0, tag {tag}) at {} had room for 8 bytes but rank 0 sent 12 bytes \
             (MPI_Send at {}): the message was truncated (MPI_ERR_TRUNCATE in {call} at {})",
            site(&format!("@multi-irecv-{marker}")),
            site("@multi-send"),
            site(&format!("@multi-{wait}"))
        );
        assert!(f.contains(&want.as_str()), "{want}\n{text}");
    }
}

fn objects(mpi: Mpi) {
    // MPICH's finalize may crash on the window left (UCX): the ranks are in
    // MPI_Finalize by then, which is all the rule needs.
    let (code, text) = check(mpi, "tests/c/correctness.c", &["objects"], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 20, "{text}");
    for (rule, what, marker, freed) in [
        ("group-not-freed", "group made by MPI_Comm_group", "@leak-group", "freed"),
        ("datatype-not-freed", "datatype made by MPI_Type_contiguous", "@leak-type", "freed"),
        ("window-not-freed", "window made by MPI_Win_create", "@leak-win", "freed"),
        ("file-not-closed", "file made by MPI_File_open", "@leak-file", "closed"),
        ("info-not-freed", "info object made by MPI_Info_create", "@leak-info", "freed"),
    ] {
        for r in 0..4 {
            let want = format!("FAIL {rule}: rank {r}: the {what} at {} was not {freed}", site(marker));
            assert!(f.contains(&want.as_str()), "{want}\n{text}");
        }
    }
}

fn overwritten(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["overwrite"], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 4, "{text}");
    for (r, l) in f.iter().enumerate() {
        let want = format!(
            "FAIL request-overwritten: rank {r}: the request of MPI_Irecv(from {}, tag 12) at {} was lost: its \
             variable was given to MPI_Irecv at {} while the request was active, and it was never completed",
            (r + 3) % 4,
            site("@overwrite-first"),
            site("@overwrite-second")
        );
        assert_eq!(*l, want, "{text}");
    }
}

fn buffer_modified(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["buffer"], &["--check-buffers"]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 4, "{text}");
    for (r, l) in f.iter().enumerate() {
        let want = format!(
            "FAIL send-buffer-modified: rank {r}: the buffer of MPI_Isend(to {}, tag 13) at {} was written to \
             before the send completed (found at MPI_Wait at {})",
            (r + 1) % 4,
            site("@buffer-isend"),
            site("@buffer-wait")
        );
        assert_eq!(*l, want, "{text}");
    }
    // Without --check-buffers nothing is checksummed, so nothing is found.
    let (code, text) = check(mpi, "tests/c/correctness.c", &["buffer"], &[]);
    assert_eq!((code, failures(&text).len()), (0, 0), "{text}");
}

fn collective_buffer_modified(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["buffer-coll"], &["--check-buffers"]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 5, "{text}");
    let want = format!(
        "FAIL send-buffer-modified: rank 0: the send buffer of MPI_Ibcast(root 0) at {} was written to before the \
         collective completed (found at MPI_Wait at {})",
        site("@bufcoll-ibcast"),
        site("@bufcoll-wait-bcast")
    );
    assert!(f.contains(&want.as_str()), "{want}\n{text}");
    for r in 0..4 {
        let want = format!(
            "FAIL send-buffer-modified: rank {r}: the send buffer of MPI_Iallreduce(MPI_SUM) at {} was written to \
             before the collective completed (found at MPI_Wait at {})",
            site("@bufcoll-iallreduce"),
            site("@bufcoll-wait-allreduce")
        );
        assert!(f.contains(&want.as_str()), "{want}\n{text}");
    }
}

fn collective_pairs(mpi: Mpi) {
    let (code, text) = check(mpi, "tests/c/correctness.c", &["collpairs"], &[]);
    assert_eq!(code, 1, "{text}");
    let f = failures(&text);
    assert_eq!(f.len(), 5, "{text}");
    let differ = "the type signatures differ";
    let wants = [
        format!(
            "FAIL collective-mismatch: collective #1 on WORLD (MPI_Gather): rank 3 sends 2 x MPI_DOUBLE at {} where \
             root 0 receives 4 x MPI_INT from each rank at {}: {differ}",
            site("@pairs-gather-odd"),
            site("@pairs-gather")
        ),
        format!(
            "FAIL collective-mismatch: collective #2 on WORLD (MPI_Alltoall): rank 3 sends 2 x MPI_DOUBLE to each rank \
             at {} where ranks 0-2 receive 4 x MPI_INT from each rank at {}: {differ}",
            site("@pairs-alltoall-odd"),
            site("@pairs-alltoall")
        ),
        format!(
            "FAIL collective-mismatch: collective #2 on WORLD (MPI_Alltoall): ranks 0-2 send 4 x MPI_INT to each rank \
             at {} where rank 3 receives 2 x MPI_DOUBLE from each rank at {}: {differ}",
            site("@pairs-alltoall"),
            site("@pairs-alltoall-odd")
        ),
        format!(
            "FAIL collective-mismatch: collective #3 on WORLD (MPI_Scatterv): root 0 sends MPI_INT elements at {} \
             where rank 2 receives 1 x MPI_FLOAT at {}: {differ}",
            site("@pairs-scatterv"),
            site("@pairs-scatterv-odd")
        ),
    ];
    for want in &wants {
        assert!(f.contains(&want.as_str()), "{want}\n{text}");
    }
    let rsb = format!(
        "FAIL collective-mismatch: collective #4 on WORLD (MPI_Reduce_scatter_block): {differ}: ranks 0, 2, 3 give 1 x \
         MPI_INT; rank 1 gives 1 x MPI_FLOAT (called by rank 1 at {}, ranks 0, 2, 3 at {})",
        site("@pairs-rsb-odd"),
        site("@pairs-rsb")
    );
    assert!(f.contains(&rsb.as_str()), "{rsb}\n{text}");
}

fn correct_programs(mpi: Mpi) {
    // --check-buffers too: the correct program's sends (derived datatypes,
    // persistent ones) keep their buffers.
    let (code, text) = check(mpi, "tests/c/correctness.c", &["ok"], &["--check-buffers"]);
    assert_eq!((code, failures(&text).len()), (0, 0), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("PASS")).count(), 14, "{text}");
    let (code, text) = check(mpi, "../../tests/demo/stencil.c", &[], &["--check-buffers"]);
    assert_eq!((code, failures(&text).len()), (0, 0), "{text}");
}

#[test]
fn unsafe_send_cycle_mpich() {
    send_cycle(Mpi::Mpich);
}
#[test]
fn unsafe_send_cycle_ours() {
    send_cycle(Mpi::Ours);
}
#[test]
fn collective_count_differs_mpich() {
    count_differs(Mpi::Mpich);
}
#[test]
fn collective_count_differs_ours() {
    count_differs(Mpi::Ours);
}
#[test]
fn any_source_race_mpich() {
    any_source(Mpi::Mpich);
}
#[test]
fn any_source_race_ours() {
    any_source(Mpi::Ours);
}
#[test]
fn type_mismatch_mpich() {
    types(Mpi::Mpich);
}
#[test]
fn type_mismatch_ours() {
    types(Mpi::Ours);
}
#[test]
fn requests_and_communicators_left_mpich() {
    leaks(Mpi::Mpich);
}
#[test]
fn requests_and_communicators_left_ours() {
    leaks(Mpi::Ours);
}
#[test]
fn no_false_positives_mpich() {
    correct_programs(Mpi::Mpich);
}
#[test]
fn no_false_positives_ours() {
    correct_programs(Mpi::Ours);
}
#[test]
fn derived_type_mismatch_mpich() {
    derived_types(Mpi::Mpich);
}
#[test]
fn derived_type_mismatch_ours() {
    derived_types(Mpi::Ours);
}
#[test]
fn truncation_mpich() {
    truncation(Mpi::Mpich);
}
#[test]
fn truncation_ours() {
    truncation(Mpi::Ours);
}
#[test]
fn objects_left_mpich() {
    objects(Mpi::Mpich);
}
#[test]
fn objects_left_ours() {
    objects(Mpi::Ours);
}
#[test]
fn request_overwritten_mpich() {
    overwritten(Mpi::Mpich);
}
#[test]
fn request_overwritten_ours() {
    overwritten(Mpi::Ours);
}
#[test]
fn send_buffer_modified_mpich() {
    buffer_modified(Mpi::Mpich);
}
#[test]
fn send_buffer_modified_ours() {
    buffer_modified(Mpi::Ours);
}
#[test]
fn collective_send_buffer_modified_mpich() {
    collective_buffer_modified(Mpi::Mpich);
}
#[test]
fn collective_send_buffer_modified_ours() {
    collective_buffer_modified(Mpi::Ours);
}
#[test]
fn collective_send_buffer_modified_openmpi() {
    collective_buffer_modified(Mpi::Open);
}
#[test]
fn collective_pairwise_type_signatures_mpich() {
    collective_pairs(Mpi::Mpich);
}
#[test]
fn collective_pairwise_type_signatures_ours() {
    collective_pairs(Mpi::Ours);
}
#[test]
fn collective_pairwise_type_signatures_openmpi() {
    collective_pairs(Mpi::Open);
}
#[test]
fn collective_type_signatures_mpich() {
    collective_signatures(Mpi::Mpich);
}
#[test]
fn collective_type_signatures_ours() {
    collective_signatures(Mpi::Ours);
}
#[test]
fn truncation_nonblocking_mpich() {
    truncation_nonblocking(Mpi::Mpich);
}
#[test]
fn truncation_nonblocking_ours() {
    truncation_nonblocking(Mpi::Ours);
}
#[test]
fn truncation_in_waitall_waitany_waitsome_testall_mpich() {
    truncation_multi(Mpi::Mpich);
}
#[test]
fn truncation_in_waitall_waitany_waitsome_testall_ours() {
    truncation_multi(Mpi::Ours);
}
#[test]
fn truncation_in_waitall_waitany_waitsome_testall_openmpi() {
    truncation_multi(Mpi::Open);
}
// Open MPI's own ABI (the shim translates its handles; its datatype
// combiners and error codes differ from MPICH's; the translation layer
// hands the recording core the request a variable held before the call).
#[test]
fn request_overwritten_openmpi() {
    overwritten(Mpi::Open);
}
// The MPI-5 standard ABI: the same translation layers as Open MPI's.
#[test]
fn request_overwritten_stdabi() {
    overwritten(Mpi::StdAbi);
}
#[test]
fn truncation_in_waitall_waitany_waitsome_testall_stdabi() {
    truncation_multi(Mpi::StdAbi);
}
#[test]
fn derived_type_mismatch_openmpi() {
    derived_types(Mpi::Open);
}
#[test]
fn truncation_nonblocking_openmpi() {
    truncation_nonblocking(Mpi::Open);
}
#[test]
fn objects_left_openmpi() {
    objects(Mpi::Open);
}
#[test]
fn send_buffer_modified_openmpi() {
    buffer_modified(Mpi::Open);
}
#[test]
fn no_false_positives_openmpi() {
    correct_programs(Mpi::Open);
}

//! MPI-IO (chapter 13): C programs on 1..8 ranks write and read files in a
//! temporary directory of their own; the harness also checks the bytes the
//! files hold on disk, and that nothing is left behind (side files of the
//! shared file pointer, files opened with `MPI_MODE_DELETE_ON_CLOSE`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(120);

/// A directory for one test's files, removed when the test ends.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("mpicore-io-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn path(&self) -> &Path {
        &self.0
    }
    fn arg(&self) -> String {
        self.0.display().to_string()
    }
    /// Names of the files in the directory, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The byte `io_basic.c` writes at position `i` of rank `r`'s block.
fn basic_pattern(r: usize, i: usize) -> u8 {
    (r * 7 + i * 13 + 1) as u8
}

fn check_basic_file(dir: &TempDir, n: usize) {
    let data = std::fs::read(dir.path().join("io_basic.dat")).unwrap();
    assert_eq!(data.len(), n * 1000, "io_basic.dat has {} bytes on {n} ranks", data.len());
    for r in 0..n {
        for i in 0..1000 {
            assert_eq!(data[r * 1000 + i], basic_pattern(r, i), "byte {i} of rank {r}'s block on disk");
        }
    }
    assert_eq!(dir.names(), vec!["io_basic.dat"], "files left besides the data");
}

#[test]
fn blocks_at_explicit_offsets_pointers_and_nonblocking_forms() {
    let exe = compile("io_basic", Compiler::Ours);
    for n in [1, 2, 3, 4, 8] {
        let dir = TempDir::new(&format!("basic{n}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[], T).assert_ok(&format!("io_basic OK on {n} ranks"));
        check_basic_file(&dir, n);
    }
}

#[test]
fn large_count_forms_write_and_read_every_block() {
    let exe = compile("io_large", Compiler::Ours);
    for n in [1, 3] {
        let dir = TempDir::new(&format!("large{n}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[], T).assert_ok(&format!("io_large OK on {n} ranks"));
        let data = std::fs::read(dir.path().join("io_large.dat")).unwrap();
        assert_eq!(data.len(), n * 256 * 4, "io_large.dat has {} bytes on {n} ranks", data.len());
    }
}

/// The interleaved file of `io_view.c`: int k of rank r at int k * n + r.
#[test]
fn vector_and_subarray_views_interleave_the_ranks() {
    let exe = compile("io_view", Compiler::Ours);
    for n in [1, 2, 3, 5, 8] {
        let dir = TempDir::new(&format!("view{n}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[], T).assert_ok(&format!("io_view OK on {n} ranks"));
        let data = std::fs::read(dir.path().join("io_view.dat")).unwrap();
        assert_eq!(data.len(), 50 * n * 4);
        for (j, c) in data.chunks_exact(4).enumerate() {
            let v = i32::from_ne_bytes(c.try_into().unwrap());
            let (k, r) = (j / n, j % n);
            assert_eq!(v, (r * 1000 + k) as i32, "int {j} of io_view.dat");
        }
        // "external32": big-endian ints, two per rank.
        let ext = std::fs::read(dir.path().join("io_ext32.dat")).unwrap();
        assert_eq!(ext.len(), 8 * n);
        for r in 0..n {
            let a = i32::from_be_bytes(ext[8 * r..8 * r + 4].try_into().unwrap());
            let b = i32::from_be_bytes(ext[8 * r + 4..8 * r + 8].try_into().unwrap());
            assert_eq!((a, b), (0x01020304 + r as i32, -2 - r as i32), "external32 ints of rank {r}");
        }
        // io_view2.dat was opened with MPI_MODE_DELETE_ON_CLOSE.
        assert_eq!(dir.names(), vec!["io_ext32.dat", "io_view.dat"]);
    }
}

/// `io_datarep.c`: int k of rank r (r * 1000 + k) is stored byte-reversed
/// by the "swap4" representations and as it is by "plain".
#[test]
fn registered_data_representations_convert_through_the_programs_functions() {
    let exe = compile("io_datarep", Compiler::Ours);
    for n in [1, 2, 3] {
        let dir = TempDir::new(&format!("datarep{n}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[], T).assert_ok(&format!("io_datarep OK on {n} ranks"));
        for (name, swapped) in [("io_datarep.dat", true), ("io_datarep_c.dat", true), ("io_plain.dat", false)] {
            let data = std::fs::read(dir.path().join(name)).unwrap();
            assert_eq!(data.len(), n * 64 * 4, "{name} has {} bytes on {n} ranks", data.len());
            for (j, c) in data.chunks_exact(4).enumerate() {
                let b: [u8; 4] = c.try_into().unwrap();
                let v = if swapped { i32::from_be_bytes(b) } else { i32::from_ne_bytes(b) };
                assert_eq!(v, ((j / 64) * 1000 + j % 64) as i32, "int {j} of {name}");
            }
        }
        assert_eq!(dir.names(), vec!["io_datarep.dat", "io_datarep_c.dat", "io_plain.dat"]);
    }
}

#[test]
fn shared_and_ordered_access() {
    let exe = compile("io_shared", Compiler::Ours);
    for n in [1, 2, 3, 4, 7] {
        let dir = TempDir::new(&format!("shared{n}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[], T).assert_ok(&format!("io_shared OK on {n} ranks"));
        // Two rounds of write_ordered: rank r's r + 1 records (at most 8)
        // in rank order, twice.
        let data = std::fs::read(dir.path().join("io_ordered.dat")).unwrap();
        let text = String::from_utf8(data).unwrap();
        let mut expect = String::new();
        for base in [0, 100] {
            for r in 0..n {
                for k in 0..(r + 1).min(8) {
                    expect.push_str(&format!("r={r:04} k={:04}  \n", base + k));
                }
            }
        }
        assert_eq!(text, expect, "io_ordered.dat on {n} ranks");
        // The shared pointer's side files are gone, and so is the
        // DELETE_ON_CLOSE file.
        assert_eq!(dir.names(), vec!["io_ordered.dat"]);
    }
}

#[test]
fn error_classes_and_file_error_handlers() {
    let exe = compile("io_errors", Compiler::Ours);
    for n in [1, 2, 3, 4] {
        let dir = TempDir::new(&format!("errors{n}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[], T).assert_ok(&format!("io_errors OK on {n} ranks"));
        assert_eq!(dir.names(), vec!["exists.dat"]);
    }
}

/// With `MPI_ERRORS_ARE_FATAL` as the default file handler, a failed open
/// ends the job with an error.
#[test]
fn fatal_file_error_handler_ends_the_job() {
    let exe = compile("io_fatal", Compiler::Ours);
    let dir = TempDir::new("fatal");
    let r = run(Launcher::Ours, 2, &exe, &[&dir.arg()], &[], T);
    assert!(r.code.is_some_and(|c| c != 0), "the job did not fail: {r}");
    assert!(!r.stdout.contains("still running"), "the program went on after a fatal error: {r}");
    assert!(r.stderr.contains("MPI_File_open"), "no message naming MPI_File_open: {r}");
}

/// Threads of every rank write through one handle at once (explicit
/// offsets and the shared file pointer): every record exactly once.
#[test]
fn threads_share_a_file_handle() {
    let exe = compile("io_threads", Compiler::Ours);
    for n in [1, 2, 4] {
        let dir = TempDir::new(&format!("threads{n}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[], T).assert_ok(&format!("io_threads OK on {n} ranks"));
        assert!(dir.names().is_empty(), "files left: {:?}", dir.names());
    }
}

/// Ranks split into two "hosts" that talk over TCP (`MPICORE_FAKE_HOSTS`):
/// the file's internal messages (agreements, the aggregators' exchange, the
/// ordered offsets) take the TCP transport, the shared file pointer its
/// side file next to the data.
#[test]
fn io_across_fake_hosts() {
    for (prog, n) in [("io_basic", 4), ("io_view", 5), ("io_shared", 4), ("io_errors", 3)] {
        let exe = compile(prog, Compiler::Ours);
        let dir = TempDir::new(&format!("hosts-{prog}"));
        run(Launcher::Ours, n, &exe, &[&dir.arg()], &[("MPICORE_FAKE_HOSTS", "2")], T)
            .assert_ok(&format!("{prog} OK on {n} ranks"));
        if prog == "io_basic" {
            check_basic_file(&dir, n);
        }
    }
}

/// Binaries compiled with Debian's `mpicc.mpich` (MPICH's `mpio.h`) run
/// on this library, under our launcher and under hydra.
#[test]
fn mpich_built_io_programs_run_on_our_library() {
    let exe = compile("io_basic", Compiler::Mpich);
    let dir = TempDir::new("mpich-basic");
    run(Launcher::Ours, 3, &exe, &[&dir.arg()], &[], T).assert_ok("io_basic OK on 3 ranks");
    check_basic_file(&dir, 3);
    let exe = compile("io_shared", Compiler::Mpich);
    let dir = TempDir::new("mpich-shared");
    run(Launcher::Hydra, 4, &exe, &[&dir.arg()], &[], T).assert_ok("io_shared OK on 4 ranks");
    assert_eq!(dir.names(), vec!["io_ordered.dat"]);
}

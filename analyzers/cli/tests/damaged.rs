//! Damaged traces (issue 20, items 9 and 10): `mpitrace report` and
//! `export` name what is wrong with which file, leave that file out and
//! analyse the rest, within a memory bound and a time limit.
//!
//! Every run here is under `ulimit -v` ([`MEMORY_LIMIT_KB`]) and `timeout`:
//! before the readers checked what they read, the stray rank file made the
//! matrix ask for 80 GB, the journal's thread field 8 GB, the
//! `/dev/zero` meta.json grew to 2 GB, a page header claiming 2 GiB
//! uncompressed and a dictionary page claiming 2^31 entries made the
//! Parquet reader ask for 2 and 16 GiB, and a FIFO blocked the reader for
//! ever; each of those now fails the run (abort, or status 124).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use analyzers::report::Report;
use analyzers::synth::SynthTrace;
use trace_format::layout;

const MS: i64 = 1_000_000;

/// Address space `mpitrace report` may use on these traces of 4 ranks:
/// 256 MiB. A clean report of them runs within 64 MiB (`ulimit -v 65536`;
/// most of it the binary, thread stacks and the allocator's arenas); the
/// allocations the damage used to cause were 2 to 80 GB.
const MEMORY_LIMIT_KB: u64 = 256 << 10;

/// Seconds a run may take (a blocked open of a FIFO never ends).
const TIME_LIMIT_S: &str = "60";

fn mpitrace() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mpitrace"))
}

/// A fresh folder for one test, in the system's temporary folder (which
/// every user can enter: the permission test runs mpitrace as `nobody`).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mpitrace-damaged-{}", std::process::id())).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A 4-rank job: a ring of sends (rank r to r+1), an allreduce, finalize.
fn ring() -> SynthTrace {
    let mut t = SynthTrace::new(4);
    for r in 0..4 {
        let (to, from) = ((r + 1) % 4, (r + 3) % 4);
        t.send(r, to, 5, 1024, 2 * MS, 2 * MS + 1000, 0x100);
        t.recv(r, from, 5, 1024, 3 * MS, 3 * MS + 5000, 0x200);
        t.coll(r, "MPI_Allreduce", (4 + r as i64) * MS, 9 * MS, 0x300, 8, None);
    }
    t.finalize(10 * MS);
    t
}

/// The ring written as a finished trace (Parquet files and meta.json).
fn parquet_trace(name: &str) -> PathBuf {
    let dir = scratch(name).join("trace");
    ring().write(&dir).unwrap();
    dir
}

/// The ring written as the journals of a run that was not converted.
fn journal_trace(name: &str) -> PathBuf {
    let dir = scratch(name).join("trace");
    ring().write_journals(&dir, true).unwrap();
    dir
}

/// Runs `mpitrace ARGS` under the memory bound and the time limit.
fn run(args: &[&str]) -> Output {
    let limited = format!("ulimit -v {MEMORY_LIMIT_KB} && exec \"$@\"");
    let out = Command::new("timeout")
        .args(["-k", "5", TIME_LIMIT_S, "bash", "-c", &limited, "bash"])
        .arg(mpitrace())
        .args(args)
        .output()
        .expect("running timeout (coreutils) and bash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(124), "timed out after {TIME_LIMIT_S} s: {stderr}");
    assert!(!stderr.contains("memory allocation of"), "over the memory bound: {stderr}");
    out
}

/// `mpitrace report DIR -f json` under the bounds: exit status 0 (a
/// report, with warnings on standard error) and the report.
fn report(dir: &Path) -> (Report, String) {
    let out = run(&["report", dir.to_str().unwrap(), "-f", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (serde_json::from_slice(&out.stdout).expect("a JSON report"), stderr)
}

/// The one problem of the report that mentions `needle`; it names its
/// file once, and standard error warns of it.
fn problem<'r>(r: &'r Report, stderr: &str, needle: &str) -> &'r str {
    let found: Vec<&String> = r.trace.problems.iter().filter(|p| p.contains(needle)).collect();
    assert_eq!(found.len(), 1, "{needle} in {:#?}", r.trace.problems);
    assert_eq!(found[0].matches(needle).count(), 1, "named more than once: {}", found[0]);
    assert!(stderr.contains(&format!("mpitrace: warning: {}", found[0])), "{stderr}");
    found[0]
}

/// Calls of each rank in the report's profile.
fn calls(r: &Report) -> Vec<u64> {
    r.profile.ranks.iter().map(|p| p.calls).collect()
}

#[test]
fn clean_trace_reports_within_the_bounds_without_warnings() {
    for dir in [parquet_trace("clean"), journal_trace("clean-journals")] {
        let (r, stderr) = report(&dir);
        assert!(r.trace.problems.is_empty() && stderr.is_empty(), "{:?} {stderr}", r.trace.problems);
        assert_eq!((r.trace.ranks, r.messages.matched), (4, 4));
        assert_eq!(calls(&r), vec![5, 5, 5, 5]);
    }
}

#[test]
fn stray_rank_file_outside_meta_json_is_left_out() {
    let dir = parquet_trace("stray");
    let stray = dir.join("events/rank-99999.parquet");
    std::fs::copy(layout::events(&dir, 0), &stray).unwrap();
    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-99999.parquet");
    assert!(p.contains("rank 99999 is not one of the 4 ranks of meta.json; left out"), "{p}");
    assert_eq!((r.trace.ranks, r.messages.matched, r.matrix.ranks), (4, 4, 4));
    assert_eq!(calls(&r), vec![5, 5, 5, 5]);
    // export reads the same four ranks.
    let csv = dir.parent().unwrap().join("calls.csv");
    let out = run(&["export", dir.to_str().unwrap(), "-f", "csv", "-o", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rank-99999.parquet"));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 1 + 4 * 5, "{text}");
    // Without meta.json the file is read, and left out for the rank in it:
    // the rank count is what the ranks say, not what a file name says.
    std::fs::remove_file(dir.join("meta.json")).unwrap();
    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-99999.parquet");
    assert!(p.contains("holds rank 0 (its footer), not rank 99999 as its name says; left out"), "{p}");
    assert_eq!((r.trace.ranks, r.messages.matched, r.matrix.ranks), (4, 4, 4));
}

#[test]
fn journal_thread_field_is_checked_against_its_name() {
    let dir = journal_trace("thread");
    let j = layout::journal(&dir, 1, 0);
    let mut b = std::fs::read(&j).unwrap();
    b[24..28].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    std::fs::write(&j, &b).unwrap();
    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-00001.t0.journal");
    assert!(p.contains("header says thread 2147483647, its name thread 0; left out"), "{p}");
    // Rank 1 lost its only journal; the others are whole.
    assert_eq!(calls(&r), vec![5, 0, 5, 5]);
    assert!(r.trace.incomplete_ranks.iter().any(|(rank, _)| *rank == 1), "{:?}", r.trace.incomplete_ranks);
}

#[test]
fn meta_json_on_dev_zero_is_refused_and_rebuilt() {
    let dir = parquet_trace("devzero");
    std::fs::remove_file(dir.join("meta.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("meta.json")).unwrap();
    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "meta.json");
    assert!(p.contains("a character device in place of a trace file; not opened"), "{p}");
    // The rank count is rebuilt from what the four ranks say of themselves.
    assert_eq!((r.trace.ranks, r.messages.matched), (4, 4));
    assert_eq!(calls(&r), vec![5, 5, 5, 5]);
}

#[test]
fn a_rank_file_copied_over_another_is_left_out() {
    let dir = parquet_trace("swapped");
    std::fs::copy(layout::events(&dir, 0), layout::events(&dir, 2)).unwrap();
    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-00002.parquet");
    assert!(p.contains("holds rank 0 (its footer), not rank 2 as its name says; left out"), "{p}");
    assert_eq!(calls(&r), vec![5, 5, 0, 5]);
    assert!(r.trace.incomplete_ranks.iter().any(|(rank, s)| *rank == 2 && s == "missing"), "{:?}", r.trace);

    // The same with journals: the rank is in the journal's header.
    let dir = journal_trace("swapped-journal");
    std::fs::copy(layout::journal(&dir, 0, 0), layout::journal(&dir, 2, 0)).unwrap();
    std::fs::copy(layout::side(&dir, 0), layout::side(&dir, 2)).unwrap();
    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-00002.t0.journal");
    assert!(p.contains("holds rank 0 (its header), not rank 2"), "{p}");
    let p = problem(&r, &stderr, "rank-00002.side.jsonl");
    assert!(p.contains("holds rank 0 (its process entry), not rank 2"), "{p}");
    assert_eq!(calls(&r), vec![5, 5, 0, 5]);
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

#[test]
fn fifos_in_place_of_trace_files_are_refused_not_opened() {
    let dir = parquet_trace("fifo");
    mkfifo(&layout::events(&dir, 3));
    mkfifo(&layout::comms(&dir, 1));
    let (r, stderr) = report(&dir);
    for f in ["rank-00003.parquet", "comms/rank-00001.parquet"] {
        let p = problem(&r, &stderr, f);
        assert!(p.contains("a FIFO in place of a trace file; not opened"), "{p}");
    }
    assert_eq!(calls(&r), vec![5, 5, 5, 0]);

    let dir = journal_trace("fifo-journal");
    mkfifo(&layout::journal(&dir, 2, 0));
    mkfifo(&layout::side(&dir, 0));
    mkfifo(&dir.join("meta.json"));
    let (r, stderr) = report(&dir);
    for f in ["rank-00002.t0.journal", "rank-00000.side.jsonl", "meta.json"] {
        let p = problem(&r, &stderr, f);
        assert!(p.contains("a FIFO in place of a trace file; not opened"), "{p}");
    }
    // Rank 0 keeps its journal (without its side file's communicators).
    assert_eq!(calls(&r), vec![5, 5, 0, 5]);
}

#[test]
fn corrupt_files_are_named_once() {
    let dir = parquet_trace("corrupt");
    let ev = layout::events(&dir, 1);
    let b = std::fs::read(&ev).unwrap();
    std::fs::write(&ev, &b[..b.len() / 2]).unwrap();
    std::fs::write(dir.join("meta.json"), b"{ not json").unwrap();
    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-00001.parquet");
    assert!(p.contains("parquet"), "{p}");
    let p = problem(&r, &stderr, "meta.json");
    assert!(p.contains("corrupt"), "{p}");
    assert_eq!(calls(&r), vec![5, 0, 5, 5]);
    // Not a trace: the folder is named once too.
    let empty = scratch("empty");
    let out = run(&["report", empty.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a trace directory"), "{stderr}");
    assert_eq!(stderr.matches(empty.to_str().unwrap()).count(), 1, "{stderr}");
}

#[test]
fn nothing_readable_still_reports_with_status_3() {
    let dir = parquet_trace("nothing");
    for r in 0..4 {
        std::fs::write(layout::events(&dir, r), b"PAR1 not really PAR1").unwrap();
    }
    let out = run(&["report", dir.to_str().unwrap(), "-f", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("no rank could be read"), "{stderr}");
    let r: Report = serde_json::from_slice(&out.stdout).expect("a JSON report all the same");
    assert_eq!(r.trace.problems.iter().filter(|p| p.contains(".parquet")).count(), 4, "{:?}", r.trace.problems);
}

#[test]
fn unreadable_trace_folder_says_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = parquet_trace("denied");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", TIME_LIMIT_S]).arg(mpitrace()).arg("report").arg(&dir);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Root reads any folder: the command runs as `nobody` instead.
        // SAFETY: setgid/setuid are async-signal-safe; nothing else runs
        // in the child between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().expect("timeout (coreutils)");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end(), format!("mpitrace: {}: permission denied", dir.display()), "{stderr}");
}

/// Ranks a hand-made `meta.json` claims in [`a_huge_claimed_job_reports_within_the_bound`].
const CLAIMED_RANKS: u32 = 300_000;

/// Address space for the report of a job claiming [`CLAIMED_RANKS`] ranks
/// of which 4 left files: 1 GiB. What the report needs per claimed rank is
/// a missing rank's empty record and a line of its tables: under 1 KiB in
/// the analyses (a peak heap of 264 MiB here) and 0.5 KiB of JSON text
/// (140 MB). Before, the dense matrix asked for 1.4 TB (two `n x n` tables
/// of 8 bytes) and message matching looked every receiver up in every
/// sender's table (9 * 10^10 look-ups: the run timed out).
const HUGE_CLAIM_MEMORY_LIMIT_KB: u64 = 1 << 20;

/// `meta.json` of `dir` rewritten to claim `ranks` ranks, consistently:
/// the rank count and the world size in every rank's entry.
fn claim_ranks(dir: &Path, ranks: u32) {
    let path = dir.join("meta.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    meta["ranks"] = ranks.into();
    for r in meta["rank_meta"].as_array_mut().expect("rank entries") {
        r["process"]["size"] = ranks.into();
    }
    std::fs::write(&path, serde_json::to_vec(&meta).unwrap()).unwrap();
}

/// Runs `mpitrace ARGS` under `limit_kb` of address space and the time limit.
fn run_limited(limit_kb: u64, args: &[&str]) -> Output {
    let limited = format!("ulimit -v {limit_kb} && exec \"$@\"");
    let out = Command::new("timeout")
        .args(["-k", "5", TIME_LIMIT_S, "bash", "-c", &limited, "bash"])
        .arg(mpitrace())
        .args(args)
        .output()
        .expect("running timeout (coreutils) and bash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(124), "timed out after {TIME_LIMIT_S} s: {stderr}");
    assert!(!stderr.contains("memory allocation of"), "over the memory bound: {stderr}");
    out
}

#[test]
fn a_huge_claimed_job_reports_within_the_bound() {
    let dir = parquet_trace("huge-claim");
    claim_ranks(&dir, CLAIMED_RANKS);
    let d = dir.to_str().unwrap();
    for format in ["json", "text", "html"] {
        let out = run_limited(HUGE_CLAIM_MEMORY_LIMIT_KB, &["report", d, "-f", format]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{format}: {stderr}");
        if format == "json" {
            let r: Report = serde_json::from_slice(&out.stdout).expect("a JSON report");
            assert_eq!((r.trace.ranks, r.matrix.ranks), (CLAIMED_RANKS as usize, CLAIMED_RANKS as usize));
            // The four ranks that left files are analysed as in the clean trace.
            assert_eq!((r.messages.matched, r.matrix.messages, r.matrix.bytes), (4, 4, 4 * 1024));
            let pairs: Vec<(i32, i32)> = r.matrix.top_pairs.iter().map(|p| (p.src, p.dst)).collect();
            assert_eq!(pairs, vec![(0, 1), (1, 2), (2, 3), (3, 0)]);
            assert!(r.matrix.full.is_none(), "a full matrix of {CLAIMED_RANKS} ranks in the report");
            assert_eq!(&calls(&r)[..4], &[5, 5, 5, 5]);
        }
    }
    let csv = dir.parent().unwrap().join("calls.csv");
    let out = run_limited(HUGE_CLAIM_MEMORY_LIMIT_KB, &["export", d, "-f", "csv", "-o", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 1 + 4 * 5);
}

/// `v` as Thrift's compact protocol writes an i32 (zigzag, then LEB128),
/// in exactly `len` bytes: zero groups with the continuation bit pad it,
/// which readers of the protocol accept. Lets a page header be rewritten
/// without moving what follows it.
fn varint_of_len(v: i32, len: usize) -> Vec<u8> {
    let mut zz = ((v << 1) ^ (v >> 31)) as u32 as u64;
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        let group = (zz & 0x7f) as u8;
        zz >>= 7;
        out.push(if i + 1 < len { group | 0x80 } else { group });
    }
    assert_eq!(zz, 0, "{v} does not fit in {len} bytes");
    out
}

/// The page of `column` of kind `kind` in the events file `path`, and the
/// file's bytes.
fn page_of(path: &Path, column: &str, kind: trace_format::pages::PageKind) -> (trace_format::pages::Page, Vec<u8>) {
    let pages = trace_format::pages::list_pages(path).unwrap();
    let p = pages.into_iter().find(|p| p.column == column && p.header.kind == kind).expect("the page");
    (p, std::fs::read(path).unwrap())
}

/// Rewrites the page at `p` of `b` in place: its header with the numbers
/// at the given ranges replaced by the given encodings (in header order),
/// then `data` as its page data; header and data keep their total length,
/// so nothing after the page moves and the footer still holds.
fn rewrite_page(
    b: &mut [u8],
    p: &trace_format::pages::Page,
    fields: &[(std::ops::Range<usize>, Vec<u8>)],
    data: &[u8],
) {
    let (at, h) = (p.offset as usize, &p.header);
    let old = &b[at..at + h.len];
    let mut header = Vec::new();
    let mut from = 0;
    for (range, bytes) in fields {
        header.extend_from_slice(&old[from..range.start]);
        header.extend_from_slice(bytes);
        from = range.end;
    }
    header.extend_from_slice(&old[from..]);
    let end = at + h.len + h.compressed_size as usize;
    assert_eq!(header.len() + data.len(), end - at, "the page keeps its length");
    b[at..at + header.len()].copy_from_slice(&header);
    b[at + header.len()..end].copy_from_slice(data);
}

/// A data page claiming 2 GiB uncompressed: the Parquet reader reserved
/// that before decompressing the page, and the allocation's failure
/// aborted `mpitrace` (not a panic that could be caught). The header is
/// read and checked first: the file is named and left out.
#[test]
fn a_page_claiming_gigabytes_is_refused_before_it_is_read() {
    use trace_format::pages::PageKind;
    let dir = parquet_trace("huge-page");
    let ev = layout::events(&dir, 1);
    let (p, mut b) = page_of(&ev, "duration", PageKind::Data);
    let h = &p.header;
    // 2^31 - 1 takes 5 bytes where the small size took fewer; the page's
    // data gives up as many bytes at its end (it is never decompressed).
    let grow = 5 - h.uncompressed_at.len();
    assert!(h.uncompressed_at.end <= h.compressed_at.start);
    let fields = [
        (h.uncompressed_at.clone(), varint_of_len(i32::MAX, 5)),
        (h.compressed_at.clone(), varint_of_len(h.compressed_size - grow as i32, h.compressed_at.len())),
    ];
    let data_at = p.offset as usize + h.len;
    let data = b[data_at..data_at + h.compressed_size as usize - grow].to_vec();
    rewrite_page(&mut b, &p, &fields, &data);
    std::fs::write(&ev, &b).unwrap();

    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-00001.parquet");
    assert!(p.contains("column `duration`") && p.contains("2147483647 uncompressed bytes"), "{p}");
    assert_eq!(calls(&r), vec![5, 0, 5, 5]);
}

/// A dictionary page claiming 2^31 - 1 entries: the Parquet reader grew
/// the dictionary to that many 8-byte values (16 GiB) before decoding
/// one. The page is otherwise whole (its data a valid zstd frame of the
/// size its header says), so only the claim is wrong; the header is
/// checked first and the file left out.
#[test]
fn a_dictionary_claiming_billions_of_entries_is_refused() {
    use trace_format::pages::PageKind;
    let dir = parquet_trace("huge-dictionary");
    let ev = layout::events(&dir, 2);
    let (p, mut b) = page_of(&ev, "duration", PageKind::Dictionary);
    let h = &p.header;
    let raw = h.uncompressed_size as usize;
    assert!((1..256).contains(&raw), "a small dictionary: {raw} bytes");
    // The dictionary's bytes as a zstd frame of one RLE block of zeros
    // (magic, a single-segment descriptor with a 1-byte content size, the
    // block header: last, RLE, `raw` repeats; the byte): 10 bytes, shorter
    // than the writer's frame, so the header can grow.
    let block = 1 | 1 << 1 | (raw as u32) << 3;
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x20, raw as u8];
    frame.extend_from_slice(&block.to_le_bytes()[..3]);
    frame.push(0);
    let nv_at = h.num_values_at.clone().unwrap();
    // The header's numbers take what the frame freed: the count 5 to 10
    // bytes, the compressed size padded; the rest, 8 bytes or more, a
    // skippable zstd frame after the data.
    let freed = h.compressed_size as usize - frame.len();
    let (nv_len, comp_len, spare) = (5..=10)
        .flat_map(|n| (h.compressed_at.len()..=10).map(move |c| (n, c)))
        .find_map(|(n, c)| {
            let grown = (n - nv_at.len()) + (c - h.compressed_at.len());
            let spare = freed.checked_sub(grown)?;
            (spare == 0 || spare >= 8).then_some((n, c, spare))
        })
        .expect("a layout of the same length");
    if spare > 0 {
        frame.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18]);
        frame.extend_from_slice(&(spare as u32 - 8).to_le_bytes());
        frame.resize(frame.len() + spare - 8, 0);
    }
    assert!(h.compressed_at.end <= nv_at.start);
    let fields = [
        (h.compressed_at.clone(), varint_of_len(frame.len() as i32, comp_len)),
        (nv_at, varint_of_len(i32::MAX, nv_len)),
    ];
    rewrite_page(&mut b, &p, &fields, &frame);
    std::fs::write(&ev, &b).unwrap();

    let (r, stderr) = report(&dir);
    let p = problem(&r, &stderr, "rank-00002.parquet");
    assert!(p.contains("column `duration`") && p.contains("2147483647 dictionary entries"), "{p}");
    assert_eq!(calls(&r), vec![5, 5, 0, 5]);
}

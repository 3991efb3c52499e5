//! A seeded fuzzer of the trace readers: journals, side files, Parquet
//! events and comms files, `meta.json` and the level-of-detail cache.
//!
//! Each case copies a small real trace (finished, with its level-of-detail
//! cache; or the journals of a run that was not converted), damages one
//! of its files with a few byte mutations drawn from a seeded xorshift
//! generator (bits flipped, bytes and words overwritten with edge values,
//! bytes inserted, deleted, duplicated, the file cut short; in half the
//! cases on a Parquet file, one page header's size or count set to an
//! edge value or a byte of it changed), then reads it
//! with every reader: `analyzers::load` and the analyses of a report,
//! `trace_format::Trace::open`, and `trace_lod::Lod::open` with queries.
//! None may panic, hang or allocate beyond the bound, and the level of
//! detail, whether built or mapped from a damaged cache file, must keep
//! what its format promises (calls sorted, names in range, span and
//! finest level agreeing with the calls): a damaged cache is rebuilt.
//!
//! The cases run in a child process (this test binary again) limited to
//! [`ADDRESS_SPACE`] bytes of address space (`RLIMIT_AS`, as `ulimit -v`):
//! an allocation beyond it aborts the child. The parent watches the child's
//! progress lines and kills it if one case takes longer than
//! [`CASE_TIMEOUT`]. A failure names the seed and case to run again:
//!
//! ```text
//! MPITRACE_FUZZ_SEED=S MPITRACE_FUZZ_FIRST=N MPITRACE_FUZZ_CASES=1 cargo test -p analyzers --test fuzz_readers
//! ```
//!
//! `MPITRACE_FUZZ_CASES` runs more cases (CI runs [`CI_CASES`], a few
//! seconds in a debug build); `MPITRACE_FUZZ_SEED` another sequence.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use analyzers::synth::SynthTrace;

/// Cases run by default (in CI).
const CI_CASES: u64 = 400;
/// Seed of the default sequence.
const DEFAULT_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
/// Address space of the child: 256 MiB. Reading these traces of a few
/// kilobytes needs a small part of it (the test binary, thread stacks and
/// allocator arenas are most of it); a size read from a damaged file and
/// trusted would ask for gigabytes.
const ADDRESS_SPACE: u64 = 256 << 20;
/// Longest one case may take before the child is taken to hang.
const CASE_TIMEOUT: Duration = Duration::from_secs(30);

const CHILD: &str = "MPITRACE_FUZZ_CHILD";

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// xorshift64*: small, fast, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Values that sizes, counts and indices are likely to be broken by.
const EDGES: [u64; 10] = [0, 1, 0x7f, 0x80, 0xff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, i64::MAX as u64, u64::MAX];

/// Damages `b` with 1 to 8 mutations; returns what was done, for the log.
fn mutate(b: &mut Vec<u8>, rng: &mut Rng) -> String {
    let mut log = Vec::new();
    for _ in 0..1 + rng.below(8) {
        if b.is_empty() {
            b.push(rng.next() as u8);
            continue;
        }
        let at = rng.below(b.len());
        match rng.below(8) {
            0 => {
                b[at] ^= 1 << rng.below(8);
                log.push(format!("flip@{at}"));
            }
            1 => {
                b[at] = rng.next() as u8;
                log.push(format!("byte@{at}"));
            }
            2 | 3 => {
                // A little-endian word of 1, 2, 4 or 8 bytes set to an edge value.
                let width = 1 << rng.below(4);
                let v = EDGES[rng.below(EDGES.len())].to_le_bytes();
                let end = (at + width).min(b.len());
                b[at..end].copy_from_slice(&v[..end - at]);
                log.push(format!("word{width}@{at}"));
            }
            4 => {
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                b.splice(at..at, bytes);
                log.push(format!("insert{n}@{at}"));
            }
            5 => {
                let n = (1 + rng.below(64)).min(b.len() - at);
                b.drain(at..at + n);
                log.push(format!("delete{n}@{at}"));
            }
            6 => {
                let n = (1 + rng.below(256)).min(b.len() - at);
                let chunk = b[at..at + n].to_vec();
                let to = rng.below(b.len());
                b.splice(to..to, chunk);
                log.push(format!("dup{n}@{at}->{to}"));
            }
            _ => {
                b.truncate(at);
                log.push(format!("cut@{at}"));
            }
        }
    }
    log.join(",")
}

/// Values a page header's numbers are set to: the limits of an i32, the
/// largest a varint of 1 to 4 bytes holds, and sizes that a reader which
/// trusted them would allocate (2 GiB, 16 GiB of 8-byte entries).
const PAGE_EDGES: [i32; 9] = [0, 1, -1, 63, 8191, 1 << 20, 134_217_727, i32::MAX, i32::MIN];

/// `v` as the Thrift compact protocol writes an i32 (zigzag, LEB128), in
/// at least `len` bytes (zero groups pad it, as readers accept).
fn thrift_i32(v: i32, len: usize) -> Vec<u8> {
    let mut zz = ((v << 1) ^ (v >> 31)) as u32 as u64;
    let mut out = Vec::new();
    while zz != 0 || out.len() < len.max(1) {
        let group = (zz & 0x7f) as u8;
        zz >>= 7;
        out.push(group | 0x80);
    }
    *out.last_mut().unwrap() &= 0x7f;
    out
}

/// Damages one page header of a Parquet file, where the Parquet reader
/// takes the sizes it allocates from: a size or count set to an edge
/// value, in its own bytes when it fits (nothing moves) or in a longer
/// varint (what follows moves), or a byte of the header or just after it
/// overwritten. The byte mutations of [`mutate`] rarely land there.
fn mutate_page_header(b: &mut Vec<u8>, pages: &[trace_format::pages::Page], rng: &mut Rng) -> String {
    let p = &pages[rng.below(pages.len())];
    let (at, h) = (p.offset as usize, &p.header);
    let mut numbers = vec![("uncompressed", h.uncompressed_at.clone()), ("compressed", h.compressed_at.clone())];
    if let Some(r) = &h.num_values_at {
        numbers.push(("values", r.clone()));
    }
    if rng.below(4) == 0 {
        let i = at + rng.below(h.len + 4);
        if i < b.len() {
            b[i] = if rng.below(2) == 0 { b[i] ^ 1 << rng.below(8) } else { rng.next() as u8 };
        }
        return format!("page-header-byte@{i} ({} {:?})", p.column, h.kind);
    }
    let (name, r) = &numbers[rng.below(numbers.len())];
    let v = PAGE_EDGES[rng.below(PAGE_EDGES.len())];
    let bytes = thrift_i32(v, r.len());
    b.splice(at + r.start..at + r.end, bytes.iter().copied());
    format!("page-{name}={v}@{at} ({} {:?}, {} bytes for {})", p.column, h.kind, bytes.len(), r.len())
}

/// Every file under `dir`, relative to it, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Copies the trace `from` to `to` (emptied first), with the files'
/// modification times: the level-of-detail cache is used only while the
/// sizes and times of the files it was built from are unchanged.
fn copy_trace(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    for rel in files(from) {
        let (src, dst) = (from.join(&rel), to.join(&rel));
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&src, &dst).unwrap();
        let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
        let f = std::fs::File::options().write(true).open(&dst).unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(mtime)).unwrap();
    }
}

/// Rewrites `path` with `bytes`, keeping its modification time (so that a
/// damaged cache file is used rather than rebuilt).
fn rewrite(path: &Path, bytes: &[u8]) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, bytes).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(mtime)).unwrap();
}

/// The two traces the cases start from, in `root`.
fn base_traces(root: &Path) -> [PathBuf; 2] {
    const MS: i64 = 1_000_000;
    let mut t = SynthTrace::new(3);
    for r in 0..3 {
        let (to, from) = ((r + 1) % 3, (r + 2) % 3);
        t.isend(r, to, 1, 4096, 2 * MS, 2 * MS + 500, 0x100, 7);
        t.irecv(r, from, 1, 4096, 2 * MS + 600, 2 * MS + 900, 0x110, 8);
        t.wait(r, "MPI_Waitall", 3 * MS, (4 + r as i64) * MS, 0x120, &[7, 8], &[(8, from, 1)]);
        t.coll(r, "MPI_Bcast", 8 * MS, 9 * MS, 0x130, 64, Some(0));
    }
    t.crashed.push(2);
    t.finalize(10 * MS);
    let finished = root.join("finished");
    t.write(&finished).unwrap();
    // The level-of-detail cache, built and written next to the trace.
    let lod = trace_lod::Lod::open(&finished, &trace_lod::Progress::default()).unwrap();
    assert!(lod.cache_note.is_none() && finished.join("lod/rank-00002.lod").exists(), "{:?}", lod.cache_note);
    let journals = root.join("journals");
    t.write_journals(&journals, true).unwrap();
    // Journals are written a 4 MiB chunk at a time: cut them after their
    // records (a clean end for the reader) to keep the copies small.
    for rel in files(&journals) {
        let p = journals.join(&rel);
        if p.extension().is_some_and(|e| e == "journal") {
            let b = std::fs::read(&p).unwrap();
            let used = b.chunks(96).position(|r| r[..4] == [0; 4] && r.iter().all(|&x| x == 0)).unwrap_or(b.len() / 96);
            std::fs::write(&p, &b[..used.max(1) * 96]).unwrap();
        }
    }
    [finished, journals]
}

/// Reads `dir` with every reader, as the tools do.
fn read_all(dir: &Path) {
    if let Ok(m) = analyzers::load(dir) {
        let r = analyzers::report::analyze(m).report();
        let doc = analyzers::report::document(&r);
        let _ = analyzers::report::render_text(&doc, analyzers::report::TextOptions { width: 100, color: false });
    }
    let _ = trace_format::Trace::open(dir);
    // The cache's coarse levels (damaged ones are refused), then the calls.
    let coarse = trace_lod::Lod::open_cached(dir).into_iter();
    for lod in coarse.chain(trace_lod::Lod::open(dir, &trace_lod::Progress::default())) {
        lod_holds_its_promises(&lod);
        let (t0, t1) = lod.span();
        let mut cells = Vec::new();
        for r in &lod.ranks {
            let d = &r.data;
            for (a, b, n) in
                [(t0, t1, 200), (t0, t0.saturating_add((t1 - t0).max(1) / 50), 80), (i64::MIN, i64::MAX, 7)]
            {
                d.cells(a, b, n, &mut cells);
            }
            let _ = d.call_at(t0 + (t1 - t0) / 2);
            for k in 0..d.levels().min(64) {
                let _ = d.buckets_in(k, t0, t1);
            }
            if !d.is_empty() {
                let _ = d.call(d.len() - 1);
            }
        }
    }
}

/// What the level of detail promises of every rank, built now or mapped
/// from a (possibly damaged) cache: the calls sorted by start, their names
/// among the trace's names, the span theirs, the finest level counting
/// each call once. A damaged cache that breaks any of it must have been
/// rebuilt (before the cache was validated, flipped bits in a cache file
/// were drawn as they were).
fn lod_holds_its_promises(lod: &trace_lod::Lod) {
    for r in &lod.ranks {
        let d = &r.data;
        let calls: Vec<trace_lod::Call> = (0..d.len()).map(|i| d.call(i)).collect();
        let rank = r.rank;
        assert!(calls.windows(2).all(|w| w[0].t_start <= w[1].t_start), "rank {rank}: calls not sorted by start");
        assert!(
            calls.iter().all(|c| (c.name as usize) < lod.names.len()),
            "rank {rank}: a call name past the {} names",
            lod.names.len()
        );
        if d.is_coarse() {
            // The cache's coarse levels: no calls, dominant calls named.
            let names = lod.names.len();
            assert!(calls.is_empty() && d.level(0).iter().all(|b| (b.dominant as usize) < names || names > 0));
            let counted: u64 = d.level(d.levels() - 1).iter().map(|b| b.count as u64).sum();
            assert_eq!(counted, d.n_calls(), "rank {rank}: the coarsest level counts {counted} calls");
            continue;
        }
        if let Some((a, b)) = d.span() {
            assert_eq!(a, calls[0].t_start, "rank {rank}: span starts before its first call");
            assert!(calls.iter().all(|c| c.t_end <= b), "rank {rank}: a call ends after the span");
        }
        let counted: u64 = d.level(0).iter().map(|b| b.count as u64).sum();
        assert_eq!(counted, calls.len() as u64, "rank {rank}: the finest level counts {counted} calls");
    }
}

/// The cases, in this (child) process.
fn run_cases(seed: u64, first: u64, cases: u64) {
    let root = std::env::temp_dir().join(format!("mpitrace-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let bases = base_traces(&root.join("base"));
    let targets: Vec<Vec<PathBuf>> = bases.iter().map(|b| files(b)).collect();
    // The pages of each Parquet file, for the mutations aimed at headers.
    let pages: Vec<Vec<Vec<trace_format::pages::Page>>> = bases
        .iter()
        .zip(&targets)
        .map(|(b, files)| {
            files
                .iter()
                .map(|rel| match rel.extension().is_some_and(|e| e == "parquet") {
                    true => trace_format::pages::list_pages(&b.join(rel)).unwrap(),
                    false => Vec::new(),
                })
                .collect()
        })
        .collect();
    let work = root.join("work");
    for case in first..first + cases {
        let mut rng = Rng::new(seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let which = rng.below(bases.len());
        let file = rng.below(targets[which].len());
        let rel = &targets[which][file];
        copy_trace(&bases[which], &work);
        let path = work.join(rel);
        let mut bytes = std::fs::read(&path).unwrap();
        // Half the cases on a Parquet file damage a page header.
        let pages = &pages[which][file];
        let log = match !pages.is_empty() && rng.below(2) == 0 {
            true => mutate_page_header(&mut bytes, pages, &mut rng),
            false => mutate(&mut bytes, &mut rng),
        };
        rewrite(&path, &bytes);
        // The line the parent reports if this case never ends.
        eprintln!("fuzz case {case}: {} {} {log}", bases[which].file_name().unwrap().to_string_lossy(), rel.display());
        read_all(&work);
    }
    eprintln!("fuzz done");
    let _ = std::fs::remove_dir_all(&root);
}

fn limit_address_space(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the
    // child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: ADDRESS_SPACE, rlim_max: ADDRESS_SPACE };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn trace_readers_survive_seeded_mutations() {
    let seed = env_u64("MPITRACE_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let first = env_u64("MPITRACE_FUZZ_FIRST").unwrap_or(0);
    let cases = env_u64("MPITRACE_FUZZ_CASES").unwrap_or(CI_CASES);
    if std::env::var_os(CHILD).is_some() {
        run_cases(seed, first, cases);
        return;
    }
    let started = Instant::now();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "trace_readers_survive_seeded_mutations", "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .env("MPITRACE_FUZZ_SEED", seed.to_string())
        .env("MPITRACE_FUZZ_FIRST", first.to_string())
        .env("MPITRACE_FUZZ_CASES", cases.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    limit_address_space(&mut cmd);
    let mut child = cmd.spawn().expect("the test binary again");
    // The child's lines, and when the last one came.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut tail: Vec<String> = Vec::new();
    let mut last_case = String::from("(before the first case)");
    let mut done = false;
    loop {
        match rx.recv_timeout(CASE_TIMEOUT) {
            Ok(line) => {
                if line.starts_with("fuzz case ") {
                    last_case = line.clone();
                }
                done |= line == "fuzz done";
                tail.push(line);
                if tail.len() > 40 {
                    tail.remove(0);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "hang: no progress for {CASE_TIMEOUT:?} in {last_case} (seed {seed}); last lines:\n{}",
                    tail.join("\n")
                );
            }
        }
    }
    let status = child.wait().unwrap();
    let repro = last_case
        .strip_prefix("fuzz case ")
        .and_then(|r| r.split(':').next())
        .map(|n| format!("MPITRACE_FUZZ_SEED={seed} MPITRACE_FUZZ_FIRST={n} MPITRACE_FUZZ_CASES=1"))
        .unwrap_or_default();
    assert!(
        status.success() && done,
        "the readers failed ({status}) in {last_case}; run it again with {repro}; last lines:\n{}",
        tail.join("\n")
    );
    eprintln!("{cases} fuzz cases from seed {seed} in {:.1} s", started.elapsed().as_secs_f64());
}

//! The trace format of mpitrace.
//!
//! A trace is a directory (see `SCHEMA.md` for every column):
//!
//! ```text
//! meta.json                      what ran: command, ranks, hosts, MPI library, clocks
//! events/rank-NNNNN.parquet      one row per MPI call, region mark, request completion
//! comms/rank-NNNNN.parquet       the communicators rank NNNNN belongs to
//! journal/rank-NNNNN.tT.journal  while running (or after a crash): fixed-size records
//! journal/rank-NNNNN.side.jsonl  while running (or after a crash): comms, regions, clocks
//! ```
//!
//! While the application runs each thread of each rank appends
//! [`record::Record`]s to a memory-mapped [`journal`]; rare facts go to the
//! rank's [`side`] file. Both survive any death of the process. At
//! `MPI_Finalize` the shim calls [`convert_rank`]; after the job, `mpitrace
//! record` calls [`finish_dir`] for ranks that did not get there. The
//! [`reader`] opens finished traces and the journals of crashed runs alike.
//! Everything a trace writer creates is readable by its owner only (files
//! 0600, folders 0700, see [`private`]): a trace holds the command line,
//! host names and module paths.

pub mod alive;
pub mod columns;
pub mod events;
pub mod files;
pub mod inventory;
pub mod journal;
pub mod meta;
pub mod pages;
pub mod private;
pub mod reader;
pub mod record;
pub mod side;
pub mod stream;
pub mod symbolize;
pub mod table;
pub mod typesig;

use std::path::{Path, PathBuf};

pub use events::Event;
pub use meta::{Meta, RankMeta};
pub use reader::{Completeness, RankTrace, Trace};
pub use symbolize::{Site, Symbolizer};

/// Version of the trace schema (events and comms tables, meta.json).
/// 2: `clock_offset` (`t_start - t_local`) replaces `t_local`, durations
/// dictionary-encoded (half the bytes per event of 1). Readers read both.
pub const SCHEMA_VERSION: u32 = 2;

/// Errors of reading and writing traces; each names the file concerned
/// (once: the message of [`Error::what`] is the same without the path).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}: permission denied")]
    Denied(PathBuf),
    /// A FIFO, device, socket or directory where a trace file should be:
    /// refused without being opened.
    #[error("{path}: {kind} in place of a trace file; not opened")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{path}: corrupt: {what}")]
    Corrupt { path: PathBuf, what: String },
    /// A file that contradicts `meta.json` or its own name (a rank outside
    /// the job, another rank's data): not read, the rest of the trace is.
    #[error("{path}: {why}; left out")]
    LeftOut { path: PathBuf, why: String },
    #[error("{path}: parquet: {what}")]
    Parquet { path: PathBuf, what: String },
    #[error("arrow: {0}")]
    Arrow(String),
    #[error("{0}: not a trace directory (no meta.json, events or journals)")]
    NotATrace(PathBuf),
}

impl Error {
    /// An I/O error on `path`; "permission denied" gets a plain message.
    pub fn io(path: &Path, e: std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            Error::Denied(path.to_path_buf())
        } else {
            Error::Io { path: path.to_path_buf(), source: e }
        }
    }

    /// The file or folder concerned, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Error::Io { path, .. }
            | Error::NotAFile { path, .. }
            | Error::Corrupt { path, .. }
            | Error::LeftOut { path, .. }
            | Error::Parquet { path, .. } => Some(path),
            Error::Denied(path) | Error::NotATrace(path) => Some(path),
            Error::Arrow(_) => None,
        }
    }

    /// What is wrong, without the path (for a message that names the file
    /// elsewhere, so that it is named once).
    pub fn what(&self) -> String {
        let full = self.to_string();
        match self.path().map(|p| format!("{}: ", p.display())) {
            Some(prefix) if full.starts_with(&prefix) => full[prefix.len()..].to_string(),
            _ => full,
        }
    }
}

/// File names inside a trace directory.
pub mod layout {
    use std::path::{Path, PathBuf};

    pub const META: &str = "meta.json";
    pub const JOURNAL_DIR: &str = "journal";
    pub const EVENTS_DIR: &str = "events";
    pub const COMMS_DIR: &str = "comms";

    pub fn journal(dir: &Path, rank: i32, thread: u32) -> PathBuf {
        dir.join(JOURNAL_DIR).join(format!("rank-{rank:05}.t{thread}.journal"))
    }
    pub fn side(dir: &Path, rank: i32) -> PathBuf {
        dir.join(JOURNAL_DIR).join(format!("rank-{rank:05}.side.jsonl"))
    }
    pub fn events(dir: &Path, rank: i32) -> PathBuf {
        dir.join(EVENTS_DIR).join(format!("rank-{rank:05}.parquet"))
    }
    pub fn comms(dir: &Path, rank: i32) -> PathBuf {
        dir.join(COMMS_DIR).join(format!("rank-{rank:05}.parquet"))
    }

    /// Parses `rank-NNNNN.<rest>` into (rank, rest).
    pub fn parse(name: &str) -> Option<(i32, &str)> {
        let rest = name.strip_prefix("rank-")?;
        let (num, rest) = rest.split_once('.')?;
        Some((num.parse().ok()?, rest))
    }

    /// Ranks with a file in `sub` whose name ends with `suffix`, sorted.
    pub fn ranks_in(dir: &Path, sub: &str, suffix: &str) -> Vec<i32> {
        let mut v: Vec<i32> = std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let (r, _) = parse(&n)?;
                n.ends_with(suffix).then_some(r)
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Journal files of a rank and their thread index, sorted by it (names
    /// as [`journal`] writes them only).
    pub fn journals_of(dir: &Path, rank: i32) -> Vec<(u32, PathBuf)> {
        let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(dir.join(JOURNAL_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let (r, rest) = parse(&n)?;
                let t: u32 = rest.strip_prefix('t')?.strip_suffix(".journal")?.parse().ok()?;
                let canonical = journal(Path::new(""), r, t);
                (r == rank && canonical.file_name().is_some_and(|c| *c == *n)).then(|| (t, e.path()))
            })
            .collect();
        v.sort();
        v
    }
}

/// Writes a private file atomically (temporary file, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = path.with_extension("tmp");
    if let Err(e) = private::create(&tmp).and_then(|mut f| std::io::Write::write_all(&mut f, bytes)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::Io { path: tmp, source: e });
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })
}

/// What [`convert_rank`] did.
#[derive(Clone, Debug, Default)]
pub struct Converted {
    pub rank: i32,
    pub events: usize,
    pub finalized: bool,
    /// Bytes of the Parquet files written.
    pub bytes: u64,
    pub problems: Vec<String>,
}

/// The journals and side file of a rank read back, converted to rows.
pub struct RankJournals {
    pub meta: RankMeta,
    pub events: Vec<Event>,
    pub comms: Vec<side::CommInfo>,
    /// Whether every journal ended cleanly and the rank finalized.
    pub complete: bool,
    pub problems: Vec<String>,
}

/// The raw journals and side file of a rank.
struct LoadedRank {
    side: side::Side,
    journals: Vec<(u32, PathBuf)>,
    meta: RankMeta,
    clock: meta::ClockMap,
    complete: bool,
    problems: Vec<String>,
}

fn load_rank(dir: &Path, rank: i32) -> Result<LoadedRank, Error> {
    let side_path = layout::side(dir, rank);
    let mut problems = Vec::new();
    // A side file that cannot be used (another rank's, a FIFO, too large)
    // costs the rank its communicators and clocks, not its journals.
    let side = match std::fs::symlink_metadata(&side_path) {
        Err(_) => {
            problems.push(format!("{}: missing; communicators and clocks unknown", side_path.display()));
            side::Side::default()
        }
        Ok(_) => match side::read_side(&side_path) {
            Ok(s) => {
                let stored = s.process().map(|p| p.rank);
                match stored.map(|r| inventory::check_rank(&side_path, rank, r, "its process entry")) {
                    Some(Err(e)) => {
                        problems.push(e.to_string());
                        side::Side::default()
                    }
                    _ => s,
                }
            }
            Err(e) => {
                problems.push(format!("{e}; communicators and clocks unknown"));
                side::Side::default()
            }
        },
    };
    problems.extend(side.bad_lines.iter().cloned());
    let journals = layout::journals_of(dir, rank);
    let complete = side.finalized();
    let process = side.process().cloned().unwrap_or(side::ProcessInfo { rank, ..Default::default() });
    let meta = RankMeta {
        process,
        sync_init: side.sync("init"),
        sync_finalize: side.sync("finalize"),
        finalized: side.finalized(),
        modules: side.modules().cloned().collect(),
        build_ids: side.build_ids(),
        paths: side.paths(),
        counters: side.counters(),
    };
    let clock = meta::ClockMap::new(meta.sync_init, meta.sync_finalize);
    Ok(LoadedRank { side, journals, meta, clock, complete, problems })
}

/// Says how a rank that did not finalize ended, from its last call.
fn death_note(rank: i32, last: Option<&Event>, n: usize) -> String {
    let what = match last {
        Some(e) if e.t_end.is_none() => format!("died inside {}", e.call),
        Some(e) => format!("died after {}", e.call),
        None => "died before any call".to_string(),
    };
    format!("rank {rank}: did not finalize ({what}); {n} events recorded")
}

/// Reads the journals of `rank` in `dir` (without writing anything).
pub fn read_rank_journals(dir: &Path, rank: i32) -> Result<RankJournals, Error> {
    let mut l = load_rank(dir, rank)?;
    let (events, whole) = events::events_from_journals(rank, &l.side, &l.journals, l.clock, &mut l.problems);
    l.complete &= whole;
    if !l.side.finalized() {
        let last = events.iter().rev().find(|e| e.kind == record::Kind::Call);
        l.problems.push(death_note(rank, last, events.len()));
    }
    let comms = l.side.comms().cloned().collect();
    Ok(RankJournals { meta: l.meta, events, comms, complete: l.complete, problems: l.problems })
}

/// Removes `journal/` once no rank has anything left in it, so that a
/// converted trace has no empty folder in it. `remove_dir` fails on a folder
/// that is not empty, atomically, so ranks converting at once need no
/// coordination: the last one removes it.
fn remove_journal_dir_if_empty(dir: &Path) {
    let _ = std::fs::remove_dir(dir.join(layout::JOURNAL_DIR));
}

/// Converts the journals of `rank` into its events and comms Parquet files,
/// then removes the journals, and the journal folder if it is left empty
/// (unless `keep_journals`).
pub fn convert_rank(dir: &Path, rank: i32, keep_journals: bool) -> Result<Converted, Error> {
    convert_rank_with(dir, rank, keep_journals, &mut |_| {})
}

/// [`convert_rank`] that shows every chunk of events written to `seen`
/// too, as it goes (the level-of-detail cache is built from them, so the
/// trace is read once).
pub fn convert_rank_with(
    dir: &Path,
    rank: i32,
    keep_journals: bool,
    seen: &mut dyn FnMut(&[Event]),
) -> Result<Converted, Error> {
    let mut l = load_rank(dir, rank)?;
    for sub in [layout::EVENTS_DIR, layout::COMMS_DIR] {
        let d = dir.join(sub);
        private::create_dir_all(&d).map_err(|e| Error::Io { path: d, source: e })?;
    }
    let ev_path = layout::events(dir, rank);
    let comm_path = layout::comms(dir, rank);
    let mut writer = table::EventsWriter::create(&ev_path, &l.meta)?;
    let (mut n, mut last, mut failed) = (0usize, None, None);
    let _whole = events::stream_events(rank, &l.side, &l.journals, l.clock, &mut l.problems, 1 << 16, &mut |chunk| {
        n += chunk.len();
        if let Some(e) = chunk.iter().rev().find(|e| e.kind == record::Kind::Call) {
            last = Some(e.clone());
        }
        seen(chunk);
        if failed.is_none() {
            failed = writer.write(chunk).err();
        }
    });
    if let Some(e) = failed {
        drop(writer);
        let _ = std::fs::remove_file(ev_path.with_extension("parquet.tmp"));
        return Err(e);
    }
    writer.finish()?;
    if !l.side.finalized() {
        l.problems.push(death_note(rank, last.as_ref(), n));
    }
    let comms: Vec<side::CommInfo> = l.side.comms().cloned().collect();
    table::write_comms(&comm_path, &comms)?;
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    if !keep_journals {
        for (_, p) in layout::journals_of(dir, rank) {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_file(layout::side(dir, rank));
        remove_journal_dir_if_empty(dir);
    }
    Ok(Converted {
        rank,
        events: n,
        finalized: l.meta.finalized,
        bytes: size(&ev_path) + size(&comm_path),
        problems: l.problems,
    })
}

/// What [`finish_dir`] found and did.
#[derive(Clone, Debug, Default)]
pub struct Finished {
    /// Ranks whose journals were converted now (they did not finalize).
    pub converted: Vec<Converted>,
    pub meta: Meta,
    pub problems: Vec<String>,
}

/// After a job: converts every rank's leftover journals (those not older
/// than the rank's events file), (re)writes `meta.json` from the metadata of
/// all ranks' events files and removes the journal folder if it is empty.
pub fn finish_dir(dir: &Path, launch_command: &[String], keep_journals: bool) -> Result<Finished, Error> {
    finish_dir_with(dir, launch_command, keep_journals, &convert_rank)
}

/// A converter of one rank's journals: [`convert_rank`], or one that
/// builds more from the same reading.
pub type ConvertRank = dyn Fn(&Path, i32, bool) -> Result<Converted, Error>;

/// [`finish_dir`] converting leftover journals with `convert`.
pub fn finish_dir_with(
    dir: &Path,
    launch_command: &[String],
    keep_journals: bool,
    convert: &ConvertRank,
) -> Result<Finished, Error> {
    let mut fin = Finished::default();
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    for rank in layout::ranks_in(dir, layout::JOURNAL_DIR, ".journal") {
        let converted = mtime(&layout::events(dir, rank));
        let newest = layout::journals_of(dir, rank).iter().filter_map(|(_, p)| mtime(p)).max();
        if converted.is_some() && converted >= newest {
            continue;
        }
        match convert(dir, rank, keep_journals) {
            Ok(c) => {
                fin.problems.extend(c.problems.iter().cloned());
                fin.converted.push(c);
            }
            Err(e) => fin.problems.push(format!("rank {rank}: not converted: {e}")),
        }
    }
    let mut ranks = Vec::new();
    for rank in layout::ranks_in(dir, layout::EVENTS_DIR, ".parquet") {
        let path = layout::events(dir, rank);
        match table::read_parquet_meta(&path) {
            // A copy of another rank's file would count that rank twice.
            Ok(Some(m)) if m.process.rank != rank => fin.problems.push(
                inventory::check_rank(&path, rank, m.process.rank, "its footer")
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
            ),
            Ok(Some(m)) => ranks.push(m),
            Ok(None) => fin.problems.push(format!("{}: no rank metadata in footer", path.display())),
            Err(e) => fin.problems.push(e.to_string()),
        }
    }
    if ranks.is_empty() && !dir.join(layout::META).exists() {
        return Err(Error::NotATrace(dir.to_path_buf()));
    }
    let mut meta = Meta::from_ranks(ranks, "record");
    meta.launch_command = launch_command.to_vec();
    if meta.ranks == 0 {
        if let Ok(old) = Meta::read(&dir.join(layout::META)) {
            meta.ranks = old.ranks;
        }
    }
    meta.write(&dir.join(layout::META))?;
    remove_journal_dir_if_empty(dir);
    fin.meta = meta;
    Ok(fin)
}

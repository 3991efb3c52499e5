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

pub mod columns;
pub mod events;
pub mod journal;
pub mod meta;
pub mod private;
pub mod reader;
pub mod record;
pub mod side;
pub mod stream;
pub mod symbolize;
pub mod table;

use std::path::{Path, PathBuf};

pub use events::Event;
pub use meta::{Meta, RankMeta};
pub use reader::{Completeness, RankTrace, Trace};
pub use symbolize::{Site, Symbolizer};

/// Version of the trace schema (events and comms tables, meta.json).
/// 2: `clock_offset` (`t_start - t_local`) replaces `t_local`, durations
/// dictionary-encoded (half the bytes per event of 1). Readers read both.
pub const SCHEMA_VERSION: u32 = 2;

/// Errors of reading and writing traces; each names the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: corrupt: {what}")]
    Corrupt { path: PathBuf, what: String },
    #[error("{path}: parquet: {what}")]
    Parquet { path: PathBuf, what: String },
    #[error("arrow: {0}")]
    Arrow(String),
    #[error("{0}: not a trace directory (no meta.json, events or journals)")]
    NotATrace(PathBuf),
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

    /// Journal files of a rank, sorted by thread index.
    pub fn journals_of(dir: &Path, rank: i32) -> Vec<PathBuf> {
        let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(dir.join(JOURNAL_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let (r, rest) = parse(&n)?;
                let t: u32 = rest.strip_prefix('t')?.strip_suffix(".journal")?.parse().ok()?;
                (r == rank).then(|| (t, e.path()))
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, p)| p).collect()
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
    journals: Vec<PathBuf>,
    meta: RankMeta,
    clock: meta::ClockMap,
    complete: bool,
    problems: Vec<String>,
}

fn load_rank(dir: &Path, rank: i32) -> Result<LoadedRank, Error> {
    let side_path = layout::side(dir, rank);
    let side = if side_path.exists() { side::read_side(&side_path)? } else { side::Side::default() };
    let mut problems = side.bad_lines.clone();
    if !side_path.exists() {
        problems.push(format!("{}: missing; communicators and clocks unknown", side_path.display()));
    }
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
        for p in layout::journals_of(dir, rank) {
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
    let mut fin = Finished::default();
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    for rank in layout::ranks_in(dir, layout::JOURNAL_DIR, ".journal") {
        let converted = mtime(&layout::events(dir, rank));
        let newest = layout::journals_of(dir, rank).iter().filter_map(|p| mtime(p)).max();
        if converted.is_some() && converted >= newest {
            continue;
        }
        match convert_rank(dir, rank, keep_journals) {
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

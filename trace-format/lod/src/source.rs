//! Reading the calls of each rank of a trace directory: streamed from its
//! Parquet events file (only the columns needed), or from the journals a
//! crashed run left.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use trace_format::columns::{name, ColumnError, EventColumns};
use trace_format::record::Kind;
use trace_format::stream::{EventBatches, RecordBatch};
use trace_format::RankJournals;

use crate::pod::flags;
use crate::pyramid::RawCall;

/// How complete a rank's trace is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RankState {
    Complete,
    /// Died or was killed before finalizing; what is known about why.
    Partial(String),
    /// Listed in `meta.json` but no file of it was readable.
    Missing,
}

/// Where a rank's calls come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RankSource {
    Parquet(PathBuf),
    Journals,
    None,
}

/// Call names, shared by the threads that read ranks: the MPI procedures
/// of the API table first (ids equal to the journal call ids), then any
/// other name met.
#[derive(Debug)]
pub struct Names {
    inner: Mutex<(Vec<String>, HashMap<String, u16>)>,
}

impl Default for Names {
    fn default() -> Self {
        Names::new(trace_format::events::call_names().iter().map(|s| s.to_string()).collect())
    }
}

impl Names {
    pub fn new(list: Vec<String>) -> Names {
        let map = list.iter().enumerate().map(|(i, s)| (s.clone(), i.min(u16::MAX as usize) as u16)).collect();
        Names { inner: Mutex::new((list, map)) }
    }
    /// The id of `name` (added if new; the last id is shared once full).
    pub fn id(&self, name: &str) -> u16 {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&i) = g.1.get(name) {
            return i;
        }
        let i = g.0.len().min(u16::MAX as usize) as u16;
        if g.0.len() < u16::MAX as usize {
            g.0.push(name.to_string());
            g.1.insert(name.to_string(), i);
        }
        i
    }
    pub fn into_list(self) -> Vec<String> {
        self.inner.into_inner().unwrap_or_else(|p| p.into_inner()).0
    }
}

/// The calls of one rank and what is known of it.
#[derive(Debug)]
pub struct RankCalls {
    pub rank: i32,
    pub state: RankState,
    pub host: Option<String>,
    pub calls: Vec<RawCall>,
    pub problems: Vec<String>,
}

/// Ranks of a trace directory and where each one's calls are (every rank
/// of the trace, from its checked inventory).
pub fn rank_sources(inv: &trace_format::inventory::Inventory) -> Vec<(i32, RankSource)> {
    let mut out: Vec<(i32, RankSource)> =
        inv.events.iter().map(|(&r, p)| (r, RankSource::Parquet(p.clone()))).collect();
    out.extend(inv.journal_only().map(|(r, _)| (r, RankSource::Journals)));
    out.extend(inv.missing().map(|r| (r, RankSource::None)));
    out.sort_by_key(|(r, _)| *r);
    out
}

/// Reads the journals of `rank` and shows them to the tap.
fn read_journals(dir: &Path, rank: i32, tap: Option<&dyn RankTap>) -> Result<RankJournals, trace_format::Error> {
    let read = trace_format::read_rank_journals(dir, rank);
    if let Some(t) = tap {
        t.journal_rank(rank, &read);
    }
    read
}

/// Reads the calls of `rank` (showing what it reads to `tap`, if any);
/// damaged data is reported in the problems.
pub fn read_rank(
    dir: &Path,
    rank: i32,
    src: &RankSource,
    names: &Names,
    rows: &std::sync::atomic::AtomicU64,
    tap: Option<&dyn RankTap>,
) -> RankCalls {
    let mut rc = RankCalls { rank, state: RankState::Missing, host: None, calls: Vec::new(), problems: Vec::new() };
    match src {
        RankSource::Parquet(p) => read_parquet(p, names, rows, &mut rc, tap),
        RankSource::Journals => match read_journals(dir, rank, tap) {
            Ok(j) => {
                rc.host = Some(j.meta.process.host.clone()).filter(|h| !h.is_empty());
                rc.state = if j.complete {
                    RankState::Complete
                } else {
                    RankState::Partial(j.problems.last().cloned().unwrap_or_else(|| "journals incomplete".into()))
                };
                rc.problems.extend(j.problems);
                let mut cache: HashMap<&str, u16> = HashMap::new();
                for e in j.events.iter().filter(|e| e.kind == Kind::Call) {
                    let name = *cache.entry(&e.call).or_insert_with(|| names.id(&e.call));
                    let failed = e.rc.is_some_and(|c| c != 0);
                    rc.calls.push(raw(e.t_start, e.t_end, name, failed, e.bytes));
                }
                rows.fetch_add(j.events.len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
            Err(e) => rc.problems.push(e.to_string()),
        },
        RankSource::None => rc.problems.push(format!("rank {rank}: no events file and no journal")),
    }
    finish_unfinished(&mut rc.calls);
    rc
}

/// A call of the level of detail from an event's fields.
pub(crate) fn raw(t_start: i64, t_end: Option<i64>, name: u16, failed: bool, bytes: Option<i64>) -> RawCall {
    let mut f = if failed { flags::FAILED } else { 0 };
    if t_end.is_none() {
        f |= flags::UNFINISHED;
    }
    RawCall { t_start, t_end: t_end.unwrap_or(i64::MIN), name, flags: f, bytes: bytes.unwrap_or(-1) }
}

/// Calls that never returned end at the last time known of the rank.
fn finish_unfinished(calls: &mut [RawCall]) {
    let last = calls.iter().map(|c| c.t_end.max(c.t_start)).max().unwrap_or(0);
    for c in calls.iter_mut().filter(|c| c.flags & flags::UNFINISHED != 0) {
        c.t_end = last.max(c.t_start);
    }
}

/// Something built from the same reading of each rank as the level of
/// detail: a viewer builds the analyzers' model this way, so that opening
/// a trace reads every rank once. [`crate::Lod::build_with`] calls it from
/// its worker threads, one rank at a time per thread.
pub trait RankTap: Sync {
    /// Columns of the events table it reads besides the level of detail's
    /// ([`LOD_COLUMNS`]).
    fn columns(&self) -> &[&'static str];
    /// Rows per batch it wants.
    fn batch_rows(&self) -> usize;
    /// The events file of `rank` was opened (or could not be): the returned
    /// reader gets its batches, in order.
    fn parquet_rank<'t>(
        &'t self,
        rank: i32,
        path: &Path,
        opened: Result<&EventBatches, &trace_format::Error>,
    ) -> Option<Box<dyn BatchTap + 't>>;
    /// The journals of `rank` (a run that did not convert them) were read.
    fn journal_rank(&self, rank: i32, read: &Result<RankJournals, trace_format::Error>);
}

/// What a [`RankTap`] sees of one events file.
pub trait BatchTap {
    /// The next batch (as decoded: its arrays are shared, so keeping it
    /// costs no copy), its columns found (or the column that is not there:
    /// the reading stops after it).
    fn batch(&mut self, batch: &RecordBatch, columns: Result<&EventColumns<'_>, &ColumnError>);
    /// The file is damaged here: the reading stops.
    fn damaged(&mut self, error: &trace_format::Error);
    /// The reading is over.
    fn finish(self: Box<Self>);
}

/// Columns of the events table the level of detail reads.
pub const LOD_COLUMNS: &[&str] = &[name::KIND, name::CALL, name::T_START, name::DURATION, name::BYTES, name::RC];

/// Rows per batch when only the level of detail reads.
pub const LOD_BATCH_ROWS: usize = 65536;

fn read_parquet(
    path: &Path,
    names: &Names,
    rows: &std::sync::atomic::AtomicU64,
    rc: &mut RankCalls,
    tap: Option<&dyn RankTap>,
) {
    let mut columns: Vec<&str> = LOD_COLUMNS.to_vec();
    for &c in tap.map_or(&[][..], |t| t.columns()) {
        if !columns.contains(&c) {
            columns.push(c);
        }
    }
    let batch_rows = tap.map_or(LOD_BATCH_ROWS, |t| t.batch_rows());
    let opened = trace_format::stream::rank_batches(path, rc.rank, &columns, batch_rows);
    let mut tapped = tap.and_then(|t| t.parquet_rank(rc.rank, path, opened.as_ref()));
    let batches = match opened {
        Ok(b) => b,
        Err(e) => {
            rc.problems.push(e.to_string());
            return;
        }
    };
    rc.state = match &batches.rank_meta {
        Some(m) if m.finalized => RankState::Complete,
        _ => RankState::Partial("did not finalize (converted after the job)".into()),
    };
    rc.host = batches.rank_meta.as_ref().map(|m| m.process.host.clone()).filter(|h| !h.is_empty());
    let announced = batches.rows.max(0) as usize;
    rc.calls.reserve(batches.rows_to_reserve());
    let mut read = 0usize;
    for batch in batches {
        let b = match batch {
            Ok(b) => b,
            Err(e) => {
                if let Some(t) = &mut tapped {
                    t.damaged(&e);
                }
                rc.problems.push(format!("{e}; {read} of {announced} rows read"));
                rc.state = RankState::Partial(format!("events file damaged after {read} rows"));
                break;
            }
        };
        read += b.num_rows();
        rows.fetch_add(b.num_rows() as u64, std::sync::atomic::Ordering::Relaxed);
        let cols = EventColumns::new(&b);
        if let Some(t) = &mut tapped {
            t.batch(&b, cols.as_ref());
        }
        let Ok(c) = cols else {
            rc.problems.push(format!("{}: columns kind, call or t_start missing or of a wrong type", path.display()));
            rc.state = RankState::Partial("events file unreadable".into());
            break;
        };
        let ids: Vec<u16> = c.call().values().iter().map(|s| names.id(s)).collect();
        for i in 0..c.num_rows() {
            if c.kind(i) != Some(Kind::Call) {
                continue;
            }
            let name = c.call().key(i).map(|k| ids[k as usize]).unwrap_or_else(|| names.id("<unknown call>"));
            let failed = c.rc(i).is_some_and(|code| code != 0);
            rc.calls.push(raw(c.t_start(i), c.t_end(i), name, failed, c.bytes(i)));
        }
    }
    if let Some(t) = tapped {
        t.finish();
    }
}

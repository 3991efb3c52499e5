//! Reading the calls of each rank of a trace directory: streamed from its
//! Parquet events file (only the columns needed), or from the journals a
//! crashed run left.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arrow_array::types::{Int16Type, Int32Type, Int8Type};
use arrow_array::{Array, ArrayRef, DictionaryArray, Int32Array, Int64Array, StringArray};
use arrow_buffer::ArrowNativeType as _;
use serde::{Deserialize, Serialize};
use trace_format::record::Kind;
use trace_format::{layout, Meta};

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

/// Ranks of a trace directory and where each one's calls are.
pub fn rank_sources(dir: &Path, meta: Option<&Meta>) -> Vec<(i32, RankSource)> {
    let parquet = layout::ranks_in(dir, layout::EVENTS_DIR, ".parquet");
    let journals = layout::ranks_in(dir, layout::JOURNAL_DIR, ".journal");
    let mut out: Vec<(i32, RankSource)> =
        parquet.iter().map(|&r| (r, RankSource::Parquet(layout::events(dir, r)))).collect();
    out.extend(journals.into_iter().filter(|r| !parquet.contains(r)).map(|r| (r, RankSource::Journals)));
    for r in 0..meta.map(|m| m.ranks as i32).unwrap_or(0) {
        if !out.iter().any(|(x, _)| *x == r) {
            out.push((r, RankSource::None));
        }
    }
    out.sort_by_key(|(r, _)| *r);
    out
}

/// Reads the calls of `rank`; damaged data is reported in the problems.
pub fn read_rank(
    dir: &Path,
    rank: i32,
    src: &RankSource,
    names: &Names,
    rows: &std::sync::atomic::AtomicU64,
) -> RankCalls {
    let mut rc = RankCalls { rank, state: RankState::Missing, host: None, calls: Vec::new(), problems: Vec::new() };
    match src {
        RankSource::Parquet(p) => read_parquet(p, names, rows, &mut rc),
        RankSource::Journals => match trace_format::read_rank_journals(dir, rank) {
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

fn raw(t_start: i64, t_end: Option<i64>, name: u16, failed: bool, bytes: Option<i64>) -> RawCall {
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

/// A string column as per-row keys into its distinct values.
fn strings(col: &ArrayRef) -> Option<(Vec<Option<usize>>, Vec<String>)> {
    fn dict<K: arrow_array::types::ArrowDictionaryKeyType>(
        col: &ArrayRef,
    ) -> Option<(Vec<Option<usize>>, Vec<String>)> {
        let d = col.as_any().downcast_ref::<DictionaryArray<K>>()?;
        let v = d.values().as_any().downcast_ref::<StringArray>()?;
        let keys =
            d.keys().values().iter().enumerate().map(|(i, k)| d.keys().is_valid(i).then(|| k.as_usize())).collect();
        Some((keys, v.iter().map(|s| s.unwrap_or("").to_string()).collect()))
    }
    if let Some(x) = dict::<Int8Type>(col).or_else(|| dict::<Int16Type>(col)).or_else(|| dict::<Int32Type>(col)) {
        return Some(x);
    }
    let s = col.as_any().downcast_ref::<StringArray>()?;
    let mut vals: Vec<String> = Vec::new();
    let mut idx: HashMap<&str, usize> = HashMap::new();
    let keys = s
        .iter()
        .map(|v| {
            let v = v?;
            Some(*idx.entry(v).or_insert_with(|| {
                vals.push(v.to_string());
                vals.len() - 1
            }))
        })
        .collect();
    Some((keys, vals))
}

fn read_parquet(path: &Path, names: &Names, rows: &std::sync::atomic::AtomicU64, rc: &mut RankCalls) {
    let cols = ["kind", "call", "t_start", "duration", "bytes", "rc"];
    let batches = match trace_format::stream::event_batches(path, &cols, 65536) {
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
    rc.calls.reserve(announced);
    let mut read = 0usize;
    for batch in batches {
        let b = match batch {
            Ok(b) => b,
            Err(e) => {
                rc.problems.push(format!("{e}; {read} of {announced} rows read"));
                rc.state = RankState::Partial(format!("events file damaged after {read} rows"));
                break;
            }
        };
        read += b.num_rows();
        rows.fetch_add(b.num_rows() as u64, std::sync::atomic::Ordering::Relaxed);
        let kind = b.column_by_name("kind").and_then(strings);
        let call = b.column_by_name("call").and_then(strings);
        let t_start = b.column_by_name("t_start").and_then(|c| c.as_any().downcast_ref::<Int64Array>());
        let (Some((kinds, kind_vals)), Some((calls, call_vals)), Some(t_start)) = (kind, call, t_start) else {
            rc.problems.push(format!("{}: columns kind, call or t_start missing or of a wrong type", path.display()));
            rc.state = RankState::Partial("events file unreadable".into());
            break;
        };
        let i64col = |n: &str| b.column_by_name(n).and_then(|c| c.as_any().downcast_ref::<Int64Array>());
        let (duration, bytes) = (i64col("duration"), i64col("bytes"));
        let rcs = b.column_by_name("rc").and_then(|c| c.as_any().downcast_ref::<Int32Array>());
        let is_call: Vec<bool> = kind_vals.iter().map(|k| k == Kind::Call.name()).collect();
        let ids: Vec<u16> = call_vals.iter().map(|s| names.id(s)).collect();
        let opt = |a: Option<&Int64Array>, i: usize| a.filter(|a| a.is_valid(i)).map(|a| a.value(i));
        for i in 0..b.num_rows() {
            if !kinds[i].is_some_and(|k| is_call[k]) {
                continue;
            }
            let name = calls[i].map(|c| ids[c]).unwrap_or_else(|| names.id("<unknown call>"));
            let t0 = t_start.value(i);
            let failed = rcs.is_some_and(|a| a.is_valid(i) && a.value(i) != 0);
            rc.calls.push(raw(t0, opt(duration, i).map(|d| t0 + d), name, failed, opt(bytes, i)));
        }
    }
}

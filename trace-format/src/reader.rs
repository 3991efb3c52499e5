//! Opening a trace: finished Parquet datasets and the journals of crashed
//! runs alike, with a report of how complete each rank is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::events::Event;
use crate::meta::{Meta, RankMeta};
use crate::side::CommInfo;
use crate::{layout, table, Error};

/// How complete the trace of one rank is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completeness {
    /// The rank returned from `MPI_Finalize`; nothing is missing.
    Complete,
    /// The rank died (or the job was killed) before finalizing: events up
    /// to the moment of death are present; `reason` says what is known.
    Partial { reason: String },
    /// `meta.json` lists the rank but no file of it was found.
    Missing,
}

/// Where a rank's events were read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Parquet,
    Journal,
    None,
}

/// The trace of one rank.
#[derive(Clone, Debug)]
pub struct RankTrace {
    pub rank: i32,
    pub completeness: Completeness,
    pub source: Source,
    pub meta: Option<RankMeta>,
    pub events: Vec<Event>,
}

/// A whole trace.
#[derive(Clone, Debug)]
pub struct Trace {
    pub dir: PathBuf,
    pub meta: Meta,
    pub ranks: BTreeMap<i32, RankTrace>,
    /// Every communicator, by trace-wide id.
    pub comms: BTreeMap<u64, CommInfo>,
    /// Everything that was damaged or missing, one line each, naming the file.
    pub problems: Vec<String>,
}

impl Trace {
    /// Opens the trace in `dir`. Fails only when `dir` holds no trace at
    /// all; unreadable parts are skipped and listed in [`Trace::problems`].
    pub fn open(dir: &Path) -> Result<Trace, Error> {
        let mut problems = Vec::new();
        let meta_path = dir.join(layout::META);
        let meta = if meta_path.exists() {
            match Meta::read(&meta_path) {
                Ok(m) => Some(m),
                Err(e) => {
                    problems.push(e.to_string());
                    None
                }
            }
        } else {
            None
        };
        let parquet_ranks = layout::ranks_in(dir, layout::EVENTS_DIR, ".parquet");
        let journal_ranks = layout::ranks_in(dir, layout::JOURNAL_DIR, ".journal");
        if meta.is_none() && parquet_ranks.is_empty() && journal_ranks.is_empty() {
            return Err(Error::NotATrace(dir.to_path_buf()));
        }
        let mut ranks = BTreeMap::new();
        let mut comms = BTreeMap::new();
        for &rank in &parquet_ranks {
            let path = layout::events(dir, rank);
            match table::read_events(&path) {
                Ok((events, rmeta)) => {
                    let completeness = match &rmeta {
                        Some(m) if m.finalized => Completeness::Complete,
                        _ => Completeness::Partial { reason: "did not finalize (converted after the job)".into() },
                    };
                    ranks.insert(rank, RankTrace { rank, completeness, source: Source::Parquet, meta: rmeta, events });
                }
                Err(e) => problems.push(e.to_string()),
            }
            let cpath = layout::comms(dir, rank);
            match table::read_comms(&cpath) {
                Ok(cs) => comms.extend(cs.into_iter().map(|c| (c.id, c))),
                Err(e) => problems.push(e.to_string()),
            }
        }
        let leftover: Vec<i32> = journal_ranks.into_iter().filter(|r| !ranks.contains_key(r)).collect();
        for rank in leftover {
            match crate::read_rank_journals(dir, rank) {
                Ok(rj) => {
                    let completeness = if rj.complete {
                        Completeness::Complete
                    } else {
                        Completeness::Partial { reason: rj.problems.last().cloned().unwrap_or_default() }
                    };
                    problems.extend(rj.problems);
                    for mut c in rj.comms {
                        c.slot = 0;
                        comms.insert(c.id, c);
                    }
                    ranks.insert(
                        rank,
                        RankTrace {
                            rank,
                            completeness,
                            source: Source::Journal,
                            meta: Some(rj.meta),
                            events: rj.events,
                        },
                    );
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        let meta = match meta {
            Some(m) => m,
            None => {
                problems.push(format!("{}: missing; rebuilt from the rank files", meta_path.display()));
                Meta::from_ranks(ranks.values().filter_map(|r| r.meta.clone()).collect(), "reader")
            }
        };
        for rank in 0..meta.ranks as i32 {
            ranks.entry(rank).or_insert_with(|| {
                problems.push(format!("rank {rank}: no events file and no journal"));
                RankTrace {
                    rank,
                    completeness: Completeness::Missing,
                    source: Source::None,
                    meta: None,
                    events: Vec::new(),
                }
            });
        }
        Ok(Trace { dir: dir.to_path_buf(), meta, ranks, comms, problems })
    }

    /// All events, rank by rank.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.ranks.values().flat_map(|r| r.events.iter())
    }

    /// Events of one rank (empty if the rank is unknown).
    pub fn rank_events(&self, rank: i32) -> &[Event] {
        self.ranks.get(&rank).map(|r| r.events.as_slice()).unwrap_or(&[])
    }

    /// Whether every rank is complete.
    pub fn is_complete(&self) -> bool {
        self.ranks.values().all(|r| r.completeness == Completeness::Complete)
    }
}

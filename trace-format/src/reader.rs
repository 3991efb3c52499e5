//! Opening a trace: finished Parquet datasets and the journals of crashed
//! runs alike, with a report of how complete each rank is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::events::Event;
use crate::inventory::Inventory;
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
        let inv = Inventory::scan(dir)?;
        let mut problems: Vec<String> = inv.problems.iter().map(|e| e.to_string()).collect();
        let mut ranks = BTreeMap::new();
        let mut comms = BTreeMap::new();
        for (&rank, path) in &inv.events {
            let read = table::read_events(path).and_then(|(events, rmeta)| {
                if let Some(m) = &rmeta {
                    crate::inventory::check_rank(path, rank, m.process.rank, "its footer")?;
                }
                Ok((events, rmeta))
            });
            match read {
                Ok((events, rmeta)) => {
                    let completeness = match &rmeta {
                        Some(m) if m.finalized => Completeness::Complete,
                        _ => Completeness::Partial { reason: "did not finalize (converted after the job)".into() },
                    };
                    ranks.insert(rank, RankTrace { rank, completeness, source: Source::Parquet, meta: rmeta, events });
                }
                Err(e) => {
                    problems.push(e.to_string());
                    continue;
                }
            }
            let cpath = layout::comms(dir, rank);
            match table::read_comms(&cpath) {
                Ok(cs) => comms.extend(cs.into_iter().map(|c| (c.id, c))),
                Err(e) => problems.push(e.to_string()),
            }
        }
        for (rank, _) in inv.journal_only() {
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
        let meta = match &inv.meta {
            Some(m) => m.clone(),
            None => {
                if inv.meta_missing {
                    let meta_path = dir.join(layout::META);
                    problems.push(format!("{}: missing; rebuilt from the rank files", meta_path.display()));
                }
                inv.rebuilt_meta(ranks.values().filter_map(|r| r.meta.clone()).collect(), "reader")
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

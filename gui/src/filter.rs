//! Filters and search: `send allreduce rank=2-5 comm=0 tag=7 dur>1ms`.
//!
//! Words without a key match call names (case-insensitive substrings, any
//! of them); `kind=` keeps kinds of calls, `rank=A-B` (or `rank=N`) keeps
//! ranks, `comm=ID` keeps the calls on a communicator (its trace-wide id,
//! as reports show it; 0 is `MPI_COMM_WORLD`), point-to-point and
//! collective, and the waits that complete them; `tag=N` the
//! point-to-point calls with that tag (both from the analyses: see
//! [`CallSet`]), `dur>T` keeps calls at least that long.

use analyzers::model::{classify, Class, NONE};

use crate::data::Trace;
use trace_view::time::parse_duration;

/// A parsed filter; the empty filter keeps everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub names: Vec<String>,
    pub kinds: Vec<CallKind>,
    pub ranks: Option<(i32, i32)>,
    pub comm: Option<u32>,
    pub tag: Option<i32>,
    pub min_dur: i64,
}

/// Kinds of calls for `kind=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Send,
    Recv,
    P2p,
    Coll,
    Wait,
    Other,
}

impl CallKind {
    fn parse(s: &str) -> Option<CallKind> {
        Some(match s {
            "send" => CallKind::Send,
            "recv" => CallKind::Recv,
            "p2p" => CallKind::P2p,
            "coll" | "collective" => CallKind::Coll,
            "wait" => CallKind::Wait,
            "other" => CallKind::Other,
            _ => return None,
        })
    }

    /// Whether a call named `name` is of this kind.
    pub fn has(self, name: &str) -> bool {
        let c = classify(name);
        match self {
            CallKind::Send => c.is_send(),
            CallKind::Recv => c.is_recv(),
            CallKind::P2p => c.is_p2p() || c == Class::Start,
            CallKind::Coll => matches!(c, Class::Coll { .. }),
            CallKind::Wait => c == Class::Wait,
            CallKind::Other => c == Class::Other,
        }
    }
}

/// Why a filter did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{word}`: {why}")]
pub struct FilterError {
    pub word: String,
    pub why: &'static str,
}

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let mut f = Filter::default();
        for word in text.split_whitespace() {
            let err = |why| FilterError { word: word.to_string(), why };
            if let Some(v) = word.strip_prefix("rank=").or_else(|| word.strip_prefix("ranks=")) {
                let (a, b) = v.split_once('-').unwrap_or((v, v));
                match (a.parse::<i32>(), b.parse::<i32>()) {
                    (Ok(a), Ok(b)) if a <= b => f.ranks = Some((a, b)),
                    _ => return Err(err("rank=N or rank=A-B")),
                }
            } else if let Some(v) = word.strip_prefix("kind=") {
                for k in v.split(['|', ',']) {
                    f.kinds.push(
                        CallKind::parse(&k.to_ascii_lowercase())
                            .ok_or_else(|| err("kind=p2p|send|recv|coll|wait|other"))?,
                    );
                }
            } else if let Some(v) = word.strip_prefix("comm=") {
                f.comm = Some(v.parse().map_err(|_| err("comm=ID (a number)"))?);
            } else if let Some(v) = word.strip_prefix("tag=") {
                f.tag = Some(v.parse().map_err(|_| err("tag=N (a number)"))?);
            } else if let Some(v) = word.strip_prefix("dur>=").or_else(|| word.strip_prefix("dur>")) {
                f.min_dur = parse_duration(v).ok_or_else(|| err("a duration like 20us, 1.5ms, 2s"))?;
            } else if word.contains(['=', '<', '>']) {
                return Err(err("unknown key; use kind=, rank=, comm=, tag=, dur> or a call name"));
            } else {
                f.names.push(word.to_ascii_lowercase());
            }
        }
        Ok(f)
    }

    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }

    /// Whether a call named `name` is kept by the name words.
    pub fn keeps_name(&self, name: &str) -> bool {
        if self.names.is_empty() && self.kinds.is_empty() {
            return true;
        }
        let lower = name.to_ascii_lowercase();
        self.names.iter().any(|w| lower.contains(w.as_str())) || self.kinds.iter().any(|k| k.has(name))
    }

    pub fn keeps_rank(&self, rank: i32) -> bool {
        self.ranks.is_none_or(|(a, b)| (a..=b).contains(&rank))
    }

    /// Per call name id, whether the name is kept.
    pub fn name_mask(&self, names: &[String]) -> Vec<bool> {
        names.iter().map(|n| self.keeps_name(n)).collect()
    }

    /// The part of the filter that needs the analyses (`comm=`, `tag=`).
    pub fn on(&self) -> On {
        On { comm: self.comm, tag: self.tag }
    }
}

/// Model index standing for a communicator id the trace does not have
/// (matches no operation).
pub const NO_SUCH_COMM: u32 = u32::MAX - 1;

/// The communicator (trace-wide id, as reports show it) and tag a filter
/// asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct On {
    pub comm: Option<u32>,
    pub tag: Option<i32>,
}

impl On {
    /// Whether anything is asked for (else every call is kept).
    pub fn any(&self) -> bool {
        self.comm.is_some() || self.tag.is_some()
    }

    /// Whether a point-to-point operation on `comm` with `tag` is kept.
    pub fn keeps_p2p(&self, comm: u32, tag: i32) -> bool {
        self.comm.is_none_or(|c| c == comm) && self.tag.is_none_or(|t| t == tag)
    }

    /// Whether a collective on `comm` is kept (never with a tag).
    pub fn keeps_coll(&self, comm: u32) -> bool {
        self.tag.is_none() && self.comm.is_none_or(|c| c == comm)
    }
}

/// A call kept by `comm=`/`tag=`: its index in the rank's level of detail
/// and its times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kept {
    pub t0: i64,
    pub t1: i64,
    pub call: u32,
}

/// The calls of each rank that `comm=`/`tag=` keep: those that post a
/// point-to-point operation with that communicator and tag or complete
/// one (a `Wait*`), and the collectives on that communicator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallSet {
    pub on: On,
    /// Per rank of the level of detail (same order), sorted by start.
    pub per_rank: Vec<Vec<Kept>>,
}

impl CallSet {
    /// Finds the calls of `trace` kept by `on` (none without analyses).
    pub fn of(trace: &Trace, on: On) -> CallSet {
        let lod = &trace.lod;
        let mut per_rank = vec![Vec::new(); lod.ranks.len()];
        let Some(a) = &trace.analysed else { return CallSet { on, per_rank } };
        let m = &a.an.model;
        let on_model = a.resolve(on);
        // Model call name id -> level-of-detail name id.
        let names: Vec<Option<u16>> = (0..m.names.len()).map(|i| lod.name_id(m.name(i as u16))).collect();
        for (ri, r) in lod.ranks.iter().enumerate() {
            let Some(mr) = usize::try_from(r.rank).ok().and_then(|x| m.ranks.get(x)) else { continue };
            let mut posts: Vec<u32> = Vec::new();
            for p in mr.sends.iter().chain(&mr.recvs).filter(|p| on_model.keeps_p2p(p.comm, p.tag)) {
                posts.push(p.post);
                if p.done != NONE && p.done != p.post {
                    posts.push(p.done);
                }
            }
            posts.extend(mr.colls.iter().filter(|x| on_model.keeps_coll(x.comm)).map(|x| x.post));
            posts.sort_unstable();
            posts.dedup();
            let shift = a.shift(r.rank);
            let d = &r.data;
            let out = &mut per_rank[ri];
            for mc in posts {
                let Some(c) = mr.calls.get(mc as usize) else { continue };
                let (t, name) = (c.t_start - shift, names.get(c.name as usize).copied().flatten());
                let first = d.first_at(t);
                let hit = (first..d.len())
                    .map(|i| (i, d.call(i)))
                    .take_while(|(_, x)| x.t_start == t)
                    .find(|(_, x)| Some(x.name) == name);
                if let Some((i, x)) = hit {
                    out.push(Kept { t0: x.t_start, t1: x.t_end, call: i as u32 });
                }
            }
            out.sort_by_key(|k| (k.t0, k.call));
            out.dedup();
        }
        CallSet { on, per_rank }
    }

    /// Whether call `call` of rank index `rank` is kept.
    pub fn has(&self, rank: usize, call: usize) -> bool {
        self.per_rank.get(rank).is_some_and(|v| v.binary_search_by_key(&(call as u32), |k| k.call).is_ok())
    }

    /// Per column of `bounds` (`n + 1` increasing times), whether a kept
    /// call of rank index `rank` runs in it (or starts in it); O(columns +
    /// kept calls in view).
    pub fn columns(&self, rank: usize, bounds: &[i64], out: &mut Vec<bool>) {
        out.clear();
        let n = bounds.len().saturating_sub(1);
        out.resize(n, false);
        let Some(v) = self.per_rank.get(rank) else { return };
        let Some(&lo) = bounds.first() else { return };
        // Kept calls starting before the first column may run into it.
        let mut j = v.partition_point(|k| k.t0 < lo);
        let mut reach = v[j.saturating_sub(64)..j].iter().map(|k| k.t1).max().unwrap_or(i64::MIN);
        for (c, x) in out.iter_mut().enumerate() {
            let (a, z) = (bounds[c], bounds[c + 1]);
            let starts = j < v.len() && v[j].t0 < z;
            while j < v.len() && v[j].t0 < z {
                reach = reach.max(v[j].t1);
                j += 1;
            }
            *x = starts || reach > a;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches() {
        let f = Filter::parse("Send allreduce rank=2-5 dur>1ms comm=3").unwrap();
        assert_eq!(f.names, vec!["send", "allreduce"]);
        assert_eq!(f.ranks, Some((2, 5)));
        assert_eq!(f.min_dur, 1_000_000);
        assert_eq!(f.comm, Some(3));
        assert!(f.keeps_name("MPI_Isend") && f.keeps_name("MPI_Allreduce") && !f.keeps_name("MPI_Recv"));
        assert!(f.keeps_rank(2) && !f.keeps_rank(6));
        assert!(Filter::parse("").unwrap().is_empty());
        assert_eq!(Filter::parse("rank=x").unwrap_err().word, "rank=x");
        assert_eq!(Filter::parse("tag=3").unwrap().tag, Some(3));
        assert!(Filter::parse("tag=x").is_err());
        assert!(Filter::parse("color=3").is_err());
        let k = Filter::parse("kind=coll|wait").unwrap();
        assert!(k.keeps_name("MPI_Allreduce") && k.keeps_name("MPI_Waitall") && !k.keeps_name("MPI_Send"));
        assert!(Filter::parse("kind=p2p").unwrap().keeps_name("MPI_Irecv"));
        assert!(Filter::parse("kind=bogus").is_err());
        let on = Filter::parse("comm=2 tag=7").unwrap().on();
        assert!(on.any() && on.keeps_p2p(2, 7) && !on.keeps_p2p(2, 8) && !on.keeps_p2p(1, 7) && !on.keeps_coll(2));
        assert!(Filter::parse("comm=2").unwrap().on().keeps_coll(2));
        assert!(!Filter::default().on().any());
    }

    #[test]
    fn kept_calls_by_column() {
        let k = |t0, t1, call| Kept { t0, t1, call };
        let set = CallSet { on: On::default(), per_rank: vec![vec![k(5, 6, 0), k(30, 55, 3), k(90, 90, 7)]] };
        let bounds: Vec<i64> = (0..=10).map(|c| c * 10).collect();
        let mut out = Vec::new();
        set.columns(0, &bounds, &mut out);
        assert_eq!(out, vec![true, false, false, true, true, true, false, false, false, true]);
        // A view starting inside the long call.
        set.columns(0, &[40, 45, 60, 70], &mut out);
        assert_eq!(out, vec![true, true, false]);
        assert!(set.has(0, 3) && !set.has(0, 2) && !set.has(1, 0));
    }
}

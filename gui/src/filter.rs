//! Filters and search: `send allreduce rank=2-5 comm=0 dur>1ms`.
//!
//! Words without a key match call names (case-insensitive substrings, any
//! of them); `rank=A-B` (or `rank=N`) keeps ranks, `comm=ID` keeps calls
//! on a communicator (where the analyses know it), `dur>T` keeps calls at
//! least that long.

use analyzers::model::{classify, Class};

use crate::view::parse_duration;

/// A parsed filter; the empty filter keeps everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub names: Vec<String>,
    pub kinds: Vec<CallKind>,
    pub ranks: Option<(i32, i32)>,
    pub comm: Option<u32>,
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
                    f.kinds.push(CallKind::parse(&k.to_ascii_lowercase()).ok_or_else(|| err("kind=p2p|send|recv|coll|wait|other"))?);
                }
            } else if let Some(v) = word.strip_prefix("comm=") {
                f.comm = Some(v.parse().map_err(|_| err("comm=ID (a number)"))?);
            } else if let Some(v) = word.strip_prefix("dur>=").or_else(|| word.strip_prefix("dur>")) {
                f.min_dur = parse_duration(v).ok_or_else(|| err("a duration like 20us, 1.5ms, 2s"))?;
            } else if word.contains(['=', '<', '>']) {
                return Err(err("unknown key; use rank=, comm=, dur> or a call name"));
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
        assert!(Filter::parse("tag=3").is_err());
        let k = Filter::parse("kind=coll|wait").unwrap();
        assert!(k.keeps_name("MPI_Allreduce") && k.keeps_name("MPI_Waitall") && !k.keeps_name("MPI_Send"));
        assert!(Filter::parse("kind=p2p").unwrap().keeps_name("MPI_Irecv"));
        assert!(Filter::parse("kind=bogus").is_err());
    }
}

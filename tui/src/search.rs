//! Search and filter: `call=allreduce rank=2-5 comm=world tag=7 dur>1ms`.

use trace_lod::Lod;

use trace_view::time::parse_duration;

/// Calls per block of the [`SearchIndex`].
pub const BLOCK: usize = 4096;

/// A coarse index that lets a search skip most of a large trace: per
/// rank, per block of [`BLOCK`] calls, the set of call names in it and its
/// longest call. Built in one pass over the calls (on the first search),
/// about 1/1000 of the level of detail's size.
pub struct SearchIndex {
    /// 64-bit words per name set.
    words: usize,
    /// Per lod rank: the name sets of its blocks, `words` words each.
    names: Vec<Vec<u64>>,
    /// Per lod rank: the longest call of each block, ns.
    longest: Vec<Vec<i64>>,
}

impl SearchIndex {
    pub fn build(lod: &Lod) -> SearchIndex {
        let words = lod.names.len().div_ceil(64).max(1);
        let mut names = Vec::with_capacity(lod.ranks.len());
        let mut longest = Vec::with_capacity(lod.ranks.len());
        for r in &lod.ranks {
            let d = &r.data;
            let blocks = d.len().div_ceil(BLOCK);
            let (mut set, mut long) = (vec![0u64; blocks * words], vec![0i64; blocks]);
            for (j, e) in d.events().iter().enumerate() {
                let b = j / BLOCK;
                set[b * words + e.name as usize / 64] |= 1 << (e.name % 64);
                // u32::MAX marks a duration kept in the rank's long table.
                let dur = if e.dur == u32::MAX { d.call(j).duration() } else { e.dur as i64 };
                long[b] = long[b].max(dur);
            }
            names.push(set);
            longest.push(long);
        }
        SearchIndex { words, names, longest }
    }

    /// The names a filter accepts, as a name set.
    pub fn mask(&self, lod: &Lod, f: &Filter) -> Vec<u64> {
        let mut m = vec![0u64; self.words];
        for (i, n) in lod.names.iter().enumerate() {
            if f.name_matches(n) {
                m[i / 64] |= 1 << (i % 64);
            }
        }
        m
    }

    /// Whether block `b` of lod rank `i` may hold a call with a name in
    /// `mask` lasting at least `min_dur`.
    pub fn may_match(&self, i: usize, b: usize, mask: &[u64], min_dur: Option<i64>) -> bool {
        let set = &self.names[i][b * self.words..(b + 1) * self.words];
        set.iter().zip(mask).any(|(a, m)| a & m != 0) && min_dur.is_none_or(|d| self.longest[i][b] >= d)
    }

    /// Bytes used.
    pub fn size_bytes(&self) -> usize {
        self.names.iter().map(|v| v.len() * 8).sum::<usize>() + self.longest.iter().map(|v| v.len() * 8).sum::<usize>()
    }
}

/// A parsed filter. An empty filter matches every call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Lower-case parts of call names; a call matches if its name contains any.
    pub calls: Vec<String>,
    /// Lower-case parts of user region names: the search then goes from
    /// region to region (with `rank=` and `dur>`) instead of call to call.
    pub regions: Vec<String>,
    pub ranks: Option<(i32, i32)>,
    /// Communicator id, or a name (`world`, `self`, a label) in lower case.
    pub comm: Option<Comm>,
    pub tag: Option<i32>,
    pub min_dur: Option<i64>,
    /// The text it was parsed from.
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Comm {
    Id(u64),
    Name(String),
}

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, String> {
        let mut f = Filter { text: text.trim().to_string(), ..Default::default() };
        for tok in text.split_whitespace() {
            let (key, op, val) = match tok.find(['=', '>', '<']) {
                Some(i) => {
                    let op_len = if tok[i..].starts_with(">=") || tok[i..].starts_with("<=") { 2 } else { 1 };
                    (&tok[..i], &tok[i..i + op_len], &tok[i + op_len..])
                }
                None => ("call", "=", tok),
            };
            let bad = |what: &str| format!("`{tok}`: {what}");
            match (key.to_ascii_lowercase().as_str(), op) {
                ("call" | "name", "=") => f.calls.push(val.to_ascii_lowercase()),
                ("region", "=") => f.regions.push(val.to_ascii_lowercase()),
                ("rank" | "ranks", "=") => {
                    let (a, b) = val.split_once('-').unwrap_or((val, val));
                    let (a, b) = (a.parse::<i32>(), b.parse::<i32>());
                    match (a, b) {
                        (Ok(a), Ok(b)) if a <= b => f.ranks = Some((a, b)),
                        _ => return Err(bad("expected rank=N or rank=A-B")),
                    }
                }
                ("comm", "=") => {
                    f.comm = Some(match val.parse::<u64>() {
                        Ok(id) => Comm::Id(id),
                        Err(_) => Comm::Name(val.to_ascii_lowercase()),
                    })
                }
                ("tag", "=") => f.tag = Some(val.parse().map_err(|_| bad("expected a number"))?),
                ("dur" | "duration", ">" | ">=") | ("min", "=") => {
                    f.min_dur = Some(parse_duration(val).ok_or_else(|| bad("expected a time like 20us, 1.5ms, 2s"))?)
                }
                _ => return Err(bad("unknown; try call=, rank=, comm=, tag=, dur>, region=")),
            }
        }
        if !f.regions.is_empty() && (!f.calls.is_empty() || f.needs_model()) {
            return Err("region= goes with rank= and dur> only".into());
        }
        Ok(f)
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
            && self.regions.is_empty()
            && self.ranks.is_none()
            && self.comm.is_none()
            && self.tag.is_none()
            && self.min_dur.is_none()
    }

    /// Whether a user region's name matches the region part of the filter.
    pub fn region_matches(&self, name: &str) -> bool {
        let n = name.to_ascii_lowercase();
        self.regions.iter().any(|c| n.contains(c.as_str()))
    }

    /// Whether a call name matches the call part of the filter.
    pub fn name_matches(&self, name: &str) -> bool {
        if self.calls.is_empty() {
            return true;
        }
        let n = name.to_ascii_lowercase();
        self.calls.iter().any(|c| n.contains(c.as_str()))
    }

    pub fn rank_matches(&self, rank: i32) -> bool {
        self.ranks.is_none_or(|(a, b)| rank >= a && rank <= b)
    }

    /// Whether matching needs the analyses (communicator or tag).
    pub fn needs_model(&self) -> bool {
        self.comm.is_some() || self.tag.is_some()
    }

    /// Whether a communicator (trace id and label) matches.
    pub fn comm_matches(&self, id: u64, label: &str) -> bool {
        match &self.comm {
            None => true,
            Some(Comm::Id(x)) => *x == id,
            Some(Comm::Name(n)) => label.eq_ignore_ascii_case(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let f = Filter::parse("allreduce rank=2-5 comm=world tag=7 dur>1.5ms").unwrap();
        assert_eq!(f.calls, vec!["allreduce"]);
        assert_eq!(f.ranks, Some((2, 5)));
        assert_eq!(f.comm, Some(Comm::Name("world".into())));
        assert_eq!(f.tag, Some(7));
        assert_eq!(f.min_dur, Some(1_500_000));
        assert!(f.name_matches("MPI_Allreduce") && !f.name_matches("MPI_Send"));
        assert!(f.rank_matches(2) && !f.rank_matches(6));
        assert_eq!(Filter::parse("rank=3").unwrap().ranks, Some((3, 3)));
        assert_eq!(Filter::parse("min=20us comm=0").unwrap().comm, Some(Comm::Id(0)));
        assert!(Filter::parse("rank=x").unwrap_err().contains("rank=x"));
        assert!(Filter::parse("foo=1").is_err());
        assert!(Filter::parse("").unwrap().is_empty());
        let r = Filter::parse("region=Solve rank=1 dur>2us").unwrap();
        assert!(r.region_matches("solve_x") && !r.region_matches("halo") && !r.is_empty());
        assert!(Filter::parse("region=solve send").unwrap_err().contains("region="));
    }
}

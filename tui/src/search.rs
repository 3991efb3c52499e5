//! Search and filter: `call=allreduce rank=2-5 comm=world tag=7 dur>1ms`.

use crate::view::parse_time;

/// A parsed filter. An empty filter matches every call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Lower-case parts of call names; a call matches if its name contains any.
    pub calls: Vec<String>,
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
                    f.min_dur = Some(parse_time(val).ok_or_else(|| bad("expected a time like 20us, 1.5ms, 2s"))?)
                }
                _ => return Err(bad("unknown; try call=, rank=, comm=, tag=, dur>")),
            }
        }
        Ok(f)
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.ranks.is_none() && self.comm.is_none() && self.tag.is_none() && self.min_dur.is_none()
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
    }
}

//! What a trace directory holds, checked before any file is read.
//!
//! The readers (the trace-format reader, the analyzers' loader, the level
//! of detail) all start here, so they agree on what a trace is: the rank
//! count comes from `meta.json` (checked, see [`Meta::check`]), never from
//! the file names; a file named for a rank outside it, a file that is not
//! a regular file, or a name this tool does not write is reported and left
//! out. What the files themselves say (the rank stored in them, their
//! sizes) is checked by the reader of each file ([`check_rank`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::meta::{RankMeta, MAX_RANKS};
use crate::{files, layout, Error, Meta};

/// The files of a trace directory that are worth reading.
#[derive(Debug, Default)]
pub struct Inventory {
    pub dir: PathBuf,
    /// `meta.json`, if it is there, readable and consistent.
    pub meta: Option<Meta>,
    /// Whether `meta.json` is absent (rather than unusable).
    pub meta_missing: bool,
    /// Number of ranks: `meta.json`'s, or without a usable one, one more
    /// than the highest rank with a file.
    pub ranks: u32,
    /// The events file of each rank that has one.
    pub events: BTreeMap<i32, PathBuf>,
    /// The journals of each rank that has any: (thread, path), by thread.
    pub journals: BTreeMap<i32, Vec<(u32, PathBuf)>>,
    /// Files left out, and a `meta.json` that could not be used; each
    /// names its file.
    pub problems: Vec<Error>,
}

/// What a file name in `events/` or `journal/` is.
enum Name {
    Events(i32),
    Journal(i32, u32),
    Other,
}

fn parse_name(sub: &str, name: &str) -> Name {
    let Some((rank, rest)) = layout::parse(name) else { return Name::Other };
    // Only the names this tool writes (`rank-00007.parquet`, not
    // `rank-7.parquet` nor `rank-+7.parquet`): one file per rank and thread.
    let canonical = |expected: PathBuf| expected.file_name().is_some_and(|n| n == name);
    match sub {
        layout::EVENTS_DIR if rest == "parquet" && canonical(layout::events(Path::new(""), rank)) => Name::Events(rank),
        layout::JOURNAL_DIR => {
            let thread = rest.strip_prefix('t').and_then(|t| t.strip_suffix(".journal")).and_then(|t| t.parse().ok());
            match thread {
                Some(t) if canonical(layout::journal(Path::new(""), rank, t)) => Name::Journal(rank, t),
                _ => Name::Other,
            }
        }
        _ => Name::Other,
    }
}

impl Inventory {
    /// Lists the trace in `dir`. Fails if `dir` cannot be listed (named,
    /// with the reason: "permission denied"...) or holds no trace at all.
    pub fn scan(dir: &Path) -> Result<Inventory, Error> {
        let m = std::fs::metadata(dir).map_err(|e| Error::io(dir, e))?;
        if !m.is_dir() {
            return Err(Error::NotATrace(dir.to_path_buf()));
        }
        // Listing the folder tells a folder we may not read from an empty one.
        std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        let mut inv = Inventory { dir: dir.to_path_buf(), ..Default::default() };
        let meta_path = dir.join(layout::META);
        match std::fs::symlink_metadata(&meta_path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => inv.meta_missing = true,
            Err(e) => inv.problems.push(Error::io(&meta_path, e)),
            Ok(_) => match Meta::read(&meta_path) {
                Ok(m) => inv.meta = Some(m),
                Err(e) => inv.problems.push(e),
            },
        }
        let mut found: Vec<(i32, Option<u32>, PathBuf)> = Vec::new();
        for sub in [layout::EVENTS_DIR, layout::JOURNAL_DIR] {
            let sdir = dir.join(sub);
            let entries = match std::fs::read_dir(&sdir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    inv.problems.push(Error::io(&sdir, e));
                    continue;
                }
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let (rank, thread) = match parse_name(sub, &name) {
                    Name::Events(r) => (r, None),
                    Name::Journal(r, t) => (r, Some(t)),
                    // Side files, temporary files of a writer, anything else.
                    Name::Other => continue,
                };
                let path = entry.path();
                if let Err(e) = files::regular(&path) {
                    inv.problems.push(e);
                    continue;
                }
                found.push((rank, thread, path));
            }
        }
        let files_ranks = found.iter().filter(|f| f.0 >= 0 && (f.0 as u32) < MAX_RANKS).map(|f| f.0 + 1).max();
        let files_ranks = files_ranks.unwrap_or(0) as u32;
        inv.ranks = match &inv.meta {
            // A count no rank entry confirms is believed only as far as the
            // rank files go.
            Some(m) if m.rank_meta.is_empty() && m.ranks > files_ranks => {
                inv.problems.push(Error::Corrupt {
                    path: meta_path.clone(),
                    what: format!(
                        "says {} ranks but has no rank entries to confirm it; reading the {files_ranks} ranks found",
                        m.ranks
                    ),
                });
                files_ranks
            }
            Some(m) => m.ranks,
            None => files_ranks,
        };
        let whose = if inv.meta.is_some() { "meta.json" } else { "the trace" };
        found.sort();
        for (rank, thread, path) in found {
            if rank < 0 || rank as u32 >= inv.ranks {
                let why = format!("rank {rank} is not one of the {} ranks of {whose}", inv.ranks);
                inv.problems.push(Error::LeftOut { path, why });
                continue;
            }
            match thread {
                None => {
                    inv.events.insert(rank, path);
                }
                Some(t) => inv.journals.entry(rank).or_default().push((t, path)),
            }
        }
        if inv.meta.is_none() && inv.events.is_empty() && inv.journals.is_empty() {
            return Err(Error::NotATrace(dir.to_path_buf()));
        }
        Ok(inv)
    }

    /// Ranks with journals but no events file (a run that did not convert
    /// them, e.g. a crashed one).
    pub fn journal_only(&self) -> impl Iterator<Item = (i32, &[(u32, PathBuf)])> + '_ {
        self.journals.iter().filter(|(r, _)| !self.events.contains_key(r)).map(|(&r, j)| (r, j.as_slice()))
    }

    /// Ranks `meta.json` lists with neither an events file nor a journal
    /// (none without a usable `meta.json`: file names do not make ranks).
    pub fn missing(&self) -> impl Iterator<Item = i32> + '_ {
        let n = self.meta.as_ref().map_or(0, |_| self.ranks as i32);
        (0..n).filter(|r| !self.events.contains_key(r) && !self.journals.contains_key(r))
    }

    /// `meta.json` rebuilt from what the ranks read said of themselves
    /// (when it is missing or unusable; `ranks`: the metadata of the ranks
    /// whose files were read, each checked against its file's name). The
    /// rank count is the world size they all agree on, if they do and it
    /// covers them (so that ranks that left no file are known), else one
    /// more than the highest of them: never a rank only a file name gave
    /// (a stray `rank-99999.parquet` would make a trace of 100000 ranks).
    pub fn rebuilt_meta(&self, ranks: Vec<RankMeta>, written_by: &str) -> Meta {
        let read = ranks.iter().map(|r| r.process.rank.saturating_add(1)).max().unwrap_or(0).max(0) as u32;
        // A rank that did not know the size (no process entry) has no say.
        let sizes: Vec<i32> = ranks.iter().map(|r| r.process.size).filter(|&s| s > 0).collect();
        let agreed = sizes.first().copied().filter(|s| sizes.iter().all(|x| x == s));
        let mut meta = Meta::from_ranks(ranks, written_by);
        meta.ranks = match agreed {
            Some(s) if s as u32 >= read && s as u32 <= MAX_RANKS => s as u32,
            _ => read.min(MAX_RANKS),
        };
        meta.rank_meta.retain(|r| r.process.rank >= 0 && (r.process.rank as u32) < meta.ranks);
        meta
    }
}

/// Checks the rank a file says it holds against the rank of its name: a
/// file copied over another rank's would otherwise be shown as that rank.
/// `where_` says where in the file the rank was read.
pub fn check_rank(path: &Path, named: i32, stored: i32, where_: &str) -> Result<(), Error> {
    if stored == named {
        return Ok(());
    }
    Err(Error::LeftOut {
        path: path.to_path_buf(),
        why: format!("holds rank {stored} ({where_}), not rank {named} as its name says"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::side::ProcessInfo;

    fn rank_meta(rank: i32, size: i32) -> RankMeta {
        RankMeta { process: ProcessInfo { rank, size, ..Default::default() }, ..Default::default() }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tf-inventory-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join(layout::EVENTS_DIR)).unwrap();
        d
    }

    #[test]
    fn rank_count_comes_from_meta_json_not_from_file_names() {
        let d = dir("names");
        for r in [0, 1, 7, 99999] {
            std::fs::write(layout::events(&d, r), b"x").unwrap();
        }
        // Not a name this tool writes: not read, not a rank.
        std::fs::write(d.join("events/rank-1.parquet"), b"x").unwrap();
        Meta::from_ranks((0..4).map(|r| rank_meta(r, 4)).collect(), "test").write(&d.join(layout::META)).unwrap();
        let inv = Inventory::scan(&d).unwrap();
        assert_eq!(inv.ranks, 4);
        assert_eq!(inv.events.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
        let left: Vec<String> = inv.problems.iter().map(|e| e.to_string()).collect();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left[0].ends_with("rank-00007.parquet: rank 7 is not one of the 4 ranks of meta.json; left out"));
        assert!(left[1].contains("rank-99999.parquet: rank 99999"), "{left:?}");
        assert_eq!(inv.missing().collect::<Vec<_>>(), vec![2, 3]);
        // Without meta.json every file is read; the rank count is what the
        // ranks read agree on, never a file name's.
        std::fs::remove_file(d.join(layout::META)).unwrap();
        let inv = Inventory::scan(&d).unwrap();
        assert_eq!((inv.meta_missing, inv.events.len(), inv.missing().count()), (true, 4, 0));
        assert_eq!(inv.rebuilt_meta(vec![rank_meta(0, 4), rank_meta(1, 4)], "t").ranks, 4, "not the file names");
        assert_eq!(inv.rebuilt_meta(vec![rank_meta(0, 16), rank_meta(1, 16)], "t").ranks, 16);
        assert_eq!(inv.rebuilt_meta(vec![rank_meta(0, 16), rank_meta(7, 1 << 30)], "t").ranks, 8);
        assert_eq!(inv.rebuilt_meta(vec![rank_meta(0, 4), rank_meta(7, 4)], "t").ranks, 8, "fewer than read");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn meta_json_rank_count_is_checked_against_its_entries() {
        let d = dir("meta");
        std::fs::write(layout::events(&d, 0), b"x").unwrap();
        let mut m = Meta::from_ranks((0..4).map(|r| rank_meta(r, 4)).collect(), "test");
        m.ranks = 4_000_000;
        m.write(&d.join(layout::META)).unwrap();
        let inv = Inventory::scan(&d).unwrap();
        assert!(inv.meta.is_none() && !inv.meta_missing);
        let e = inv.problems[0].to_string();
        assert!(e.contains("meta.json: corrupt: 4000000 ranks, more than the 1048576"), "{e}");
        m.ranks = 1000;
        m.write(&d.join(layout::META)).unwrap();
        let e = Inventory::scan(&d).unwrap().problems[0].to_string();
        assert!(e.contains("says 1000 ranks, but rank 0 says the job had 4"), "{e}");
        // No entry to confirm it: believed only as far as the files go.
        m.rank_meta.clear();
        m.write(&d.join(layout::META)).unwrap();
        let inv = Inventory::scan(&d).unwrap();
        assert_eq!(inv.ranks, 1);
        assert!(inv.problems[0].to_string().contains("says 1000 ranks but has no rank entries"), "{:?}", inv.problems);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_unreadable_folder_is_not_an_empty_one() {
        let e = Inventory::scan(Path::new("/nonexistent/trace")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/trace: ") && e.contains("No such file"), "{e}");
        let d = dir("empty");
        assert!(matches!(Inventory::scan(&d), Err(Error::NotATrace(_))));
        // Denied folders are tested as another user in
        // analyzers/cli/tests/damaged.rs (root reads every folder).
        let denied = Error::io(&d, std::io::ErrorKind::PermissionDenied.into()).to_string();
        assert_eq!(denied, format!("{}: permission denied", d.display()));
        std::fs::remove_dir_all(&d).unwrap();
    }
}

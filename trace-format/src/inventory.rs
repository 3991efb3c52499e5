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

    /// Ranks with neither an events file nor a journal.
    pub fn missing(&self) -> impl Iterator<Item = i32> + '_ {
        (0..self.ranks as i32).filter(|r| !self.events.contains_key(r) && !self.journals.contains_key(r))
    }

    /// `meta.json` rebuilt from what the ranks' files said of themselves
    /// (when it is missing or unusable). The rank count is the one all
    /// those agree on if they do (so that ranks that left no file are
    /// known), and at least the ranks found; never beyond [`MAX_RANKS`].
    pub fn rebuilt_meta(&self, ranks: Vec<RankMeta>, written_by: &str) -> Meta {
        // A rank that did not know the size (no process entry) has no say.
        let sizes: Vec<i32> = ranks.iter().map(|r| r.process.size).filter(|&s| s > 0).collect();
        let agreed = sizes.first().copied().filter(|s| sizes.iter().all(|x| x == s));
        let mut meta = Meta::from_ranks(ranks, written_by);
        meta.ranks = match agreed {
            Some(s) if s as u32 >= self.ranks && s as u32 <= MAX_RANKS => s as u32,
            _ => self.ranks,
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

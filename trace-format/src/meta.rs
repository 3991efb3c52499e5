//! `meta.json`: what the trace is of.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::side::{ProcessInfo, SyncPoint};

use crate::Error;

/// Everything known of one rank, also stored in the key-value metadata of
/// its events file (key [`RANK_META_KEY`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankMeta {
    pub process: ProcessInfo,
    pub sync_init: Option<SyncPoint>,
    pub sync_finalize: Option<SyncPoint>,
    /// Whether the rank returned from `MPI_Finalize`.
    pub finalized: bool,
    /// Executable mappings, to symbolize the `site` column.
    #[serde(default)]
    pub modules: Vec<crate::side::Module>,
    /// GNU build ids of the mapped files (lower-case hex), by path.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub build_ids: std::collections::BTreeMap<String, String>,
    /// Call paths recorded with `MPITRACE_CALLPATH`, by id (the events'
    /// `path` column): return addresses from the MPI call site outwards,
    /// symbolized like `site` through `modules`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<Vec<u64>>,
    /// Hardware counters recorded with `MPITRACE_COUNTERS` (the events'
    /// `counter_<name>` columns), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<String>,
}

/// Most ranks a trace may have (`meta.json`, a rank file's name or
/// metadata): readers allocate per rank, and refuse counts beyond this
/// rather than trying to allocate for them.
pub const MAX_RANKS: u32 = 1 << 20;

/// Key of the rank metadata (JSON of [`RankMeta`]) in a Parquet footer.
pub const RANK_META_KEY: &str = "mpitrace.rank";

/// Clock alignment: every rank's times are mapped to the clock of
/// `reference_rank` (see SCHEMA.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockMeta {
    pub reference_rank: i32,
    pub method: String,
}

/// The contents of `meta.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub schema_version: u32,
    pub tool_version: String,
    /// The application's command line (rank 0's).
    pub command: Vec<String>,
    /// The launcher command line given to `mpitrace record`, if any.
    #[serde(default)]
    pub launch_command: Vec<String>,
    /// Size of MPI_COMM_WORLD.
    pub ranks: u32,
    /// Distinct host names, in rank order of first appearance.
    pub hosts: Vec<String>,
    pub mpi_library: String,
    pub mpi_version: String,
    /// The MPI library's ABI ("MPICH", "Open MPI", "standard" for the MPI-5
    /// standard ABI; empty in older traces).
    #[serde(default)]
    pub mpi_abi: String,
    pub clock: ClockMeta,
    /// One entry per rank that left any trace, sorted by rank.
    pub rank_meta: Vec<RankMeta>,
    /// Written by "finalize" (rank 0 in MPI_Finalize) or "record" (rebuilt
    /// from the rank files after the job).
    pub written_by: String,
}

impl Meta {
    /// Builds the metadata of a job from what its ranks reported.
    pub fn from_ranks(mut ranks: Vec<RankMeta>, written_by: &str) -> Meta {
        ranks.sort_by_key(|r| r.process.rank);
        ranks.dedup_by_key(|r| r.process.rank);
        let first = ranks.first().map(|r| r.process.clone()).unwrap_or_default();
        let mut hosts: Vec<String> = Vec::new();
        for r in &ranks {
            if !hosts.contains(&r.process.host) {
                hosts.push(r.process.host.clone());
            }
        }
        Meta {
            schema_version: crate::SCHEMA_VERSION,
            tool_version: first.tool_version.clone(),
            command: first.argv.clone(),
            launch_command: Vec::new(),
            ranks: ranks.iter().map(|r| r.process.size.max(0) as u32).max().unwrap_or(0),
            hosts,
            mpi_library: first.mpi_library.clone(),
            mpi_version: first.mpi_version.clone(),
            mpi_abi: first.mpi_abi.clone(),
            clock: ClockMeta {
                reference_rank: 0,
                method: "min-RTT ping-pong per node leader against rank 0 at MPI_Init and MPI_Finalize, linear drift"
                    .into(),
            },
            rank_meta: ranks,
            written_by: written_by.into(),
        }
    }

    /// Reads and checks `meta.json`: it must be a regular file of at most
    /// [`crate::files::META_MAX_BYTES`], and its rank count must agree with
    /// the rank entries it holds ([`Meta::check`]).
    pub fn read(path: &Path) -> Result<Meta, Error> {
        let text = crate::files::read_capped(path, crate::files::META_MAX_BYTES, "meta.json")?;
        let meta: Meta = serde_json::from_slice(&text)
            .map_err(|e| Error::Corrupt { path: path.to_path_buf(), what: e.to_string() })?;
        meta.check().map_err(|what| Error::Corrupt { path: path.to_path_buf(), what })?;
        Ok(meta)
    }

    /// Whether the rank count is one a reader can believe: at most
    /// [`MAX_RANKS`], and equal to the world size each rank entry reports,
    /// every entry's rank within it. The rank count sizes what the readers
    /// allocate per rank (and per pair of ranks), so it is checked against
    /// the rest of the file before anything is allocated for it.
    pub fn check(&self) -> Result<(), String> {
        if self.ranks > MAX_RANKS {
            return Err(format!("{} ranks, more than the {MAX_RANKS} this tool reads", self.ranks));
        }
        if self.rank_meta.len() > self.ranks as usize {
            return Err(format!("{} rank entries for {} ranks", self.rank_meta.len(), self.ranks));
        }
        for r in &self.rank_meta {
            let p = &r.process;
            if p.rank < 0 || p.rank as u32 >= self.ranks {
                return Err(format!("an entry of rank {} in a job of {} ranks", p.rank, self.ranks));
            }
            if p.size != 0 && p.size as i64 != self.ranks as i64 {
                return Err(format!("says {} ranks, but rank {} says the job had {}", self.ranks, p.rank, p.size));
            }
        }
        Ok(())
    }

    /// Writes atomically (temporary file and rename).
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Corrupt { path: path.to_path_buf(), what: e.to_string() })?;
        crate::write_atomic(path, &text)
    }
}

/// Maps local clock nanoseconds of a rank to the reference clock, linearly
/// interpolating the offsets measured at init and finalize.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClockMap {
    a: Option<SyncPoint>,
    b: Option<SyncPoint>,
}

impl ClockMap {
    pub fn new(init: Option<SyncPoint>, fin: Option<SyncPoint>) -> Self {
        ClockMap { a: init, b: fin }
    }
    /// Offset (reference − local) at local time `t`.
    pub fn offset(&self, t: i64) -> i64 {
        match (self.a, self.b) {
            (Some(a), Some(b)) if b.local_ns != a.local_ns => {
                let f = (t - a.local_ns) as f64 / (b.local_ns - a.local_ns) as f64;
                a.offset_ns + ((b.offset_ns - a.offset_ns) as f64 * f).round() as i64
            }
            (Some(p), _) | (None, Some(p)) => p.offset_ns,
            (None, None) => 0,
        }
    }
    pub fn to_reference(&self, t: i64) -> i64 {
        t + self.offset(t)
    }
}

impl RankMeta {
    /// The module containing call site `site` and the site's offset within
    /// that file (what `addr2line -e PATH ADDR` takes for a PIE or shared
    /// object whose segments map at their file offsets; [`crate::Symbolizer`]
    /// does not assume that).
    pub fn locate(&self, site: u64) -> Option<(&str, u64)> {
        self.modules
            .iter()
            .find(|m| (m.start..m.end).contains(&site))
            .map(|m| (m.path.as_str(), site - m.start + m.offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_is_interpolated() {
        let m = ClockMap::new(
            Some(SyncPoint { local_ns: 1000, offset_ns: 10, rtt_ns: 0 }),
            Some(SyncPoint { local_ns: 3000, offset_ns: 30, rtt_ns: 0 }),
        );
        assert_eq!(m.to_reference(1000), 1010);
        assert_eq!(m.to_reference(2000), 2020);
        assert_eq!(m.to_reference(5000), 5050);
        assert_eq!(ClockMap::default().to_reference(7), 7);
    }
}

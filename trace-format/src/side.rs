//! The side file of a process: rare, variable-length facts as JSON lines.
//!
//! Communicator tables, region names, clock calibration and synchronization
//! points, process identity and loaded modules are appended to
//! `rank-NNNNN.side.jsonl` with one `write(2)` per line (`O_APPEND`), so they
//! reach the page cache at once and survive a crash of the process. A line
//! cut short by a crash is skipped by the reader and reported.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::journal::ClockKind;
use crate::Error;

/// Identity of a traced process, written once after `MPI_Init`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub rank: i32,
    pub size: i32,
    pub pid: u32,
    pub host: String,
    /// The application's command line (`/proc/self/cmdline`).
    pub argv: Vec<String>,
    /// `MPI_Get_library_version`.
    pub mpi_library: String,
    /// `MPI_Get_version`, e.g. "4.0".
    pub mpi_version: String,
    /// The MPI library's ABI as the shim recognised it: "MPICH" or "Open MPI"
    /// (empty in traces of older versions).
    #[serde(default)]
    pub mpi_abi: String,
    pub tool_version: String,
    pub clock: Option<ClockKind>,
    /// Unix time (seconds) when the process started tracing.
    pub started_unix: f64,
    /// The process holds a lock on its side file while it runs
    /// (`crate::alive`; false in traces of older versions).
    #[serde(default)]
    pub alive_lock: bool,
}

/// A communicator the process is a member of.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommInfo {
    /// Slot number used in this process's journal records.
    pub slot: u32,
    /// Trace-wide id, the same on every member (0 = MPI_COMM_WORLD).
    pub id: u64,
    /// Id of the communicator it was created from.
    pub parent: Option<u64>,
    /// Creating call (`MPI_Comm_split`...), or "predefined".
    pub call: String,
    pub inter: bool,
    /// Members (local group) as world ranks, in communicator rank order.
    pub members: Vec<i32>,
    /// Remote group of an intercommunicator, as world ranks.
    pub remote: Vec<i32>,
    /// Name set with `MPI_Comm_set_name`, if any.
    pub name: Option<String>,
}

/// Clock offset of this process against the reference (world rank 0),
/// measured by ping-pong: `reference = local + offset_ns` at `local_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncPoint {
    pub local_ns: i64,
    pub offset_ns: i64,
    /// Best round trip of the measurement (0 when on the reference's node).
    pub rtt_ns: i64,
}

/// A mapped executable module, for symbolizing call sites offline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    pub start: u64,
    pub end: u64,
    /// File offset of the mapping.
    pub offset: u64,
    pub path: String,
}

/// One line of a side file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum SideEntry {
    Process(ProcessInfo),
    /// A thread that called MPI got journal `thread`.
    Thread {
        thread: u32,
        tid: i64,
    },
    /// Calibration point of the journal clock: `ticks` read at `ns` (CLOCK_MONOTONIC).
    Clock {
        ticks: u64,
        ns: u64,
    },
    /// Clock synchronization at `MPI_Init` ("init") or `MPI_Finalize` ("finalize").
    Sync {
        phase: String,
        point: SyncPoint,
    },
    Comm(CommInfo),
    Region {
        id: i32,
        name: String,
    },
    Module(Module),
    /// GNU build id (lower-case hex) of a mapped file, to find its separate
    /// debug file and to notice a file rebuilt since the run.
    BuildId {
        path: String,
        build_id: String,
    },
    /// Something the shim wants the user to know (disk full, unknown handle...).
    Note {
        message: String,
    },
    /// `MPI_Finalize` returned and the journals are complete.
    Finalized,
}

/// Appends entries to a side file.
pub struct SideWriter {
    file: File,
    path: PathBuf,
}

impl SideWriter {
    pub fn open(path: &Path) -> Result<Self, Error> {
        let file = crate::private::open(OpenOptions::new().create(true).append(true), path)
            .map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
        Ok(SideWriter { file, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one entry as one line in one write.
    pub fn write(&mut self, e: &SideEntry) -> Result<(), Error> {
        let mut line =
            serde_json::to_vec(e).map_err(|e| Error::Corrupt { path: self.path.clone(), what: e.to_string() })?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(|e| Error::Io { path: self.path.clone(), source: e })
    }
}

/// A side file as read back: the entries and the lines that could not be read.
#[derive(Clone, Debug, Default)]
pub struct Side {
    pub entries: Vec<SideEntry>,
    /// Problems (line number and what), e.g. the last line cut by a crash.
    pub bad_lines: Vec<String>,
}

impl Side {
    pub fn process(&self) -> Option<&ProcessInfo> {
        self.entries.iter().find_map(|e| match e {
            SideEntry::Process(p) => Some(p),
            _ => None,
        })
    }
    /// Communicators by slot; a later entry for a slot (a name set with
    /// `MPI_Comm_set_name`) replaces the earlier one.
    pub fn comms(&self) -> impl Iterator<Item = &CommInfo> {
        let mut by_slot: std::collections::BTreeMap<u32, &CommInfo> = std::collections::BTreeMap::new();
        for e in &self.entries {
            if let SideEntry::Comm(c) = e {
                by_slot.insert(c.slot, c);
            }
        }
        by_slot.into_values()
    }
    pub fn clock_points(&self) -> Vec<(u64, u64)> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                SideEntry::Clock { ticks, ns } => Some((*ticks, *ns)),
                _ => None,
            })
            .collect()
    }
    pub fn sync(&self, phase: &str) -> Option<SyncPoint> {
        self.entries.iter().rev().find_map(|e| match e {
            SideEntry::Sync { phase: p, point } if p == phase => Some(*point),
            _ => None,
        })
    }
    pub fn regions(&self) -> impl Iterator<Item = (i32, &str)> {
        self.entries.iter().filter_map(|e| match e {
            SideEntry::Region { id, name } => Some((*id, name.as_str())),
            _ => None,
        })
    }
    pub fn modules(&self) -> impl Iterator<Item = &Module> {
        self.entries.iter().filter_map(|e| match e {
            SideEntry::Module(m) => Some(m),
            _ => None,
        })
    }
    /// Build ids of the mapped files, by path.
    pub fn build_ids(&self) -> std::collections::BTreeMap<String, String> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                SideEntry::BuildId { path, build_id } => Some((path.clone(), build_id.clone())),
                _ => None,
            })
            .collect()
    }
    pub fn finalized(&self) -> bool {
        self.entries.iter().any(|e| matches!(e, SideEntry::Finalized))
    }
}

/// Reads a side file, keeping every line that parses.
pub fn read_side(path: &Path) -> Result<Side, Error> {
    let text = crate::files::read_capped(path, crate::files::SIDE_MAX_BYTES, "side file")?;
    let mut side = Side::default();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<SideEntry>(line) {
            Ok(e) => side.entries.push(e),
            Err(e) => side.bad_lines.push(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
    Ok(side)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_cut_line() {
        let dir = std::env::temp_dir().join(format!("tf-side-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.jsonl");
        let _ = std::fs::remove_file(&path);
        let mut w = SideWriter::open(&path).unwrap();
        let c = CommInfo { slot: 2, id: 77, members: vec![0, 2], call: "MPI_Comm_split".into(), ..Default::default() };
        w.write(&SideEntry::Comm(c.clone())).unwrap();
        w.write(&SideEntry::Region { id: 1, name: "solver".into() }).unwrap();
        w.write(&SideEntry::Finalized).unwrap();
        drop(w);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"t\":\"clock\",\"ti");
        std::fs::write(&path, bytes).unwrap();
        let s = read_side(&path).unwrap();
        assert_eq!(s.comms().next(), Some(&c));
        assert_eq!(s.regions().collect::<Vec<_>>(), vec![(1, "solver")]);
        assert!(s.finalized());
        assert_eq!(s.bad_lines.len(), 1);
    }
}

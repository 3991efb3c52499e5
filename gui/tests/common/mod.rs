//! A small known trace for the viewer's tests.
#![allow(dead_code)] // each test binary uses part of it

use std::path::PathBuf;

use analyzers::synth::{event, SynthTrace};
use trace_format::record::Kind;

/// A fresh directory under the system's temporary directory.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mpitrace-gui-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Four ranks over 10 us: rank 0 sends 1 KiB to rank 1 (rank 1 waits
/// for it), rank 2 sends 64 B to rank 3, then all four call
/// `MPI_Allreduce` (rank 3 arrives last) and finalize.
pub fn small() -> SynthTrace {
    let mut t = SynthTrace::new(4);
    t.send(0, 1, 7, 1024, 2_000, 3_000, 0x100);
    t.recv(1, 0, 7, 1024, 1_500, 3_500, 0x110);
    t.send(2, 3, 9, 64, 2_500, 2_800, 0x120);
    t.recv(3, 2, 9, 64, 2_600, 3_200, 0x130);
    for (r, a) in [(0, 5_000), (1, 5_200), (2, 5_500), (3, 6_500)] {
        t.coll(r, "MPI_Allreduce", a, 7_000, 0x200, 8, None);
    }
    t.finalize(9_000);
    // Rank 0 marks a user region "solve" over the exchange, with "inner" nested in it.
    for (kind, name, at) in [(Kind::RegionBegin, "solve", 1_500), (Kind::RegionBegin, "inner", 2_000), (Kind::RegionEnd, "inner", 2_500), (Kind::RegionEnd, "solve", 4_000)] {
        t.ranks[0].push(event(0, kind, name, at, at));
    }
    t.ranks[0].sort_by_key(|e| e.t_start);
    t
}

/// Writes [`small`] to a fresh directory.
pub fn small_dir(name: &str) -> PathBuf {
    let d = temp_dir(name);
    small().write(&d).expect("write trace");
    d
}

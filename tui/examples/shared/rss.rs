//! Peak memory of the benchmark's process, for the examples that print it.

// Each example that includes this file uses a part of it.
#![allow(dead_code)]

/// Peak resident set size of this process so far, MiB (`VmHWM`).
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// Bytes of the files directly in `p`.
pub fn dir_size(p: &std::path::Path) -> u64 {
    std::fs::read_dir(p).into_iter().flatten().flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum()
}

/// CPU time of this process so far (user + system), seconds: steadier
/// than wall time on a shared machine.
pub fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which ends with ')'): utime and
    // stime are the 12th and 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

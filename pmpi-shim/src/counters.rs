//! Hardware counters (`MPITRACE_COUNTERS=cycles,instructions,...`): per
//! thread, one `perf_event_open` group counting the thread's user-space
//! events, read when a recorded call starts and when it ends. At each start
//! the increments since the thread's previous call ended (its compute
//! interval) go into a counters record just before the call's own
//! (`trace_format::record::COUNTERS_KIND`); conversion puts them into the
//! call's row as `counter_<name>` columns.
//!
//! The kernel may refuse (no PMU in a virtual machine or container,
//! `perf_event_paranoid`, seccomp): the counters it refuses are named in
//! one line on rank 0, with its reason, and tracing goes on with those it
//! granted (or none). Two `read(2)`s per call: BENCHMARKS.md.

use std::cell::RefCell;
use std::sync::OnceLock;

use trace_format::record::{Record, MAX_COUNTERS};

/// A counter the user may name: (name, perf type, perf config); the names
/// are those of `trace_format::columns::name::COUNTERS` (tested).
const KNOWN: &[(&str, u32, u64)] = &[
    ("cycles", HW, 0),
    ("instructions", HW, 1),
    ("cache-references", HW, 2),
    ("cache-misses", HW, 3),
    ("branches", HW, 4),
    ("branch-misses", HW, 5),
    ("stalled-cycles-frontend", HW, 7),
    ("stalled-cycles-backend", HW, 8),
    ("ref-cycles", HW, 9),
    ("cpu-clock", SW, 0),
    ("task-clock", SW, 1),
    ("page-faults", SW, 2),
    ("context-switches", SW, 3),
    ("cpu-migrations", SW, 4),
];
/// `PERF_TYPE_HARDWARE`, `PERF_TYPE_SOFTWARE`.
const HW: u32 = 0;
const SW: u32 = 1;
/// `PERF_FORMAT_GROUP`: one read gives every counter of the group.
const FORMAT_GROUP: u64 = 1 << 3;
/// `perf_event_attr` flag bits: `exclude_kernel`, `exclude_hv`.
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;

/// The counters granted at `MPI_Init`: (name, type, config).
static ACTIVE: OnceLock<Vec<(&'static str, u32, u64)>> = OnceLock::new();

/// The first 64 bytes of `perf_event_attr` (`PERF_ATTR_SIZE_VER0`, which
/// every kernel since 2.6.31 takes), laid out as the kernel's header says.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}
const _: () = assert!(std::mem::size_of::<Attr>() == 64);

/// Opens counter `(kind, config)` of this thread, in the group of `leader`
/// (-1: a new group); the file descriptor or the kernel's errno.
fn open(kind: u32, config: u64, leader: i32) -> Result<i32, i32> {
    let attr = Attr {
        kind,
        size: std::mem::size_of::<Attr>() as u32,
        config,
        read_format: FORMAT_GROUP,
        flags: EXCLUDE_KERNEL | EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: perf_event_open(attr, pid 0 = this thread, cpu -1 = any,
    // group_fd, flags 0) reads `attr`, a valid 64-byte attribute whose
    // `size` says so.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            leader as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(fd as i32)
    }
}

/// One thread's group.
struct Group {
    /// Leader first.
    fds: Vec<i32>,
    /// The values when the thread's last call ended.
    last: [u64; MAX_COUNTERS],
}

impl Group {
    /// Opens the active counters for this thread; `None` if the kernel
    /// refuses any of them here.
    fn open() -> Option<Group> {
        let active = ACTIVE.get()?;
        let mut fds: Vec<i32> = Vec::with_capacity(active.len());
        for &(_, kind, config) in active {
            match open(kind, config, fds.first().copied().unwrap_or(-1)) {
                Ok(fd) => fds.push(fd),
                Err(_) => {
                    close_all(&fds);
                    return None;
                }
            }
        }
        let mut g = Group { fds, last: [0; MAX_COUNTERS] };
        g.last = g.read()?;
        Some(g)
    }

    /// The group's values (one `read` of the leader).
    fn read(&self) -> Option<[u64; MAX_COUNTERS]> {
        let mut buf = [0u64; MAX_COUNTERS + 1];
        let want = 8 * (self.fds.len() + 1);
        // SAFETY: reads at most `want` <= size_of(buf) bytes into `buf`.
        let got = unsafe { libc::read(self.fds[0], buf.as_mut_ptr().cast(), want) };
        if got != want as isize || buf[0] as usize != self.fds.len() {
            return None;
        }
        let mut out = [0u64; MAX_COUNTERS];
        out[..self.fds.len()].copy_from_slice(&buf[1..=self.fds.len()]);
        Some(out)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        close_all(&self.fds);
    }
}

fn close_all(fds: &[i32]) {
    for &fd in fds {
        // SAFETY: a descriptor this module opened and nothing else uses.
        unsafe { libc::close(fd) };
    }
}

thread_local! {
    /// This thread's group: `None` before its first call, `Some(None)` if
    /// it could not be opened here.
    static GROUP: RefCell<Option<Option<Group>>> = const { RefCell::new(None) };
}

/// Reads `MPITRACE_COUNTERS` and asks the kernel for each counter (at
/// `MPI_Init`, on the thread that initializes MPI); returns the names of
/// those granted. Says once on rank 0 what was refused and why.
pub fn configure(rank: i32) -> Vec<String> {
    let Ok(list) = std::env::var("MPITRACE_COUNTERS") else { return Vec::new() };
    let say = |what: String| {
        if rank == 0 {
            eprintln!("mpitrace: {what}");
        }
    };
    let mut wanted: Vec<(&'static str, u32, u64)> = Vec::new();
    let mut unknown = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match KNOWN.iter().find(|k| k.0 == name) {
            Some(&k) if !wanted.contains(&k) => wanted.push(k),
            Some(_) => {}
            None => unknown.push(name.to_string()),
        }
    }
    if !unknown.is_empty() {
        let known: Vec<&str> = KNOWN.iter().map(|k| k.0).collect();
        say(format!("MPITRACE_COUNTERS: unknown counter {} (known: {})", unknown.join(", "), known.join(", ")));
    }
    if wanted.len() > MAX_COUNTERS {
        say(format!("MPITRACE_COUNTERS: at most {MAX_COUNTERS} counters; the first {MAX_COUNTERS} recorded"));
        wanted.truncate(MAX_COUNTERS);
    }
    // Each alone first, so that one refused counter does not take the
    // others with it.
    let mut granted = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    for &(name, kind, config) in &wanted {
        match open(kind, config, -1) {
            Ok(fd) => {
                close_all(&[fd]);
                granted.push((name, kind, config));
            }
            Err(errno) => refused.push(format!("{name}: {}", std::io::Error::from_raw_os_error(errno))),
        }
    }
    if !refused.is_empty() {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .map(|s| format!("perf_event_paranoid is {}", s.trim()))
            .unwrap_or_else(|_| "no /proc/sys/kernel/perf_event_paranoid".into());
        say(format!(
            "counters refused by the kernel ({}; {paranoid}); tracing goes on {}",
            refused.join(", "),
            if granted.is_empty() {
                "without counters".to_string()
            } else {
                format!("with {}", granted.iter().map(|g| g.0).collect::<Vec<_>>().join(", "))
            }
        ));
    }
    let names = granted.iter().map(|g| g.0.to_string()).collect();
    if !granted.is_empty() && ACTIVE.set(granted).is_ok() {
        // This thread's interval starts now.
        let _ = GROUP.try_with(|g| *g.borrow_mut() = Some(Group::open()));
    }
    names
}

/// Whether counters are recorded.
#[inline]
pub fn on() -> bool {
    ACTIVE.get().is_some()
}

/// The names of the counters recorded.
pub fn names() -> Vec<String> {
    ACTIVE.get().map(|a| a.iter().map(|c| c.0.to_string()).collect()).unwrap_or_default()
}

/// At the start of a recorded call: the counters record of the compute
/// interval that ends here (`None` if this thread has no counters).
pub fn at_entry() -> Option<Record> {
    GROUP
        .try_with(|g| {
            let mut g = g.borrow_mut();
            let group = g.get_or_insert_with(Group::open).as_mut()?;
            let now = group.read()?;
            let n = group.fds.len();
            let deltas: Vec<u64> = (0..n).map(|i| now[i].wrapping_sub(group.last[i])).collect();
            Some(Record::counters(&deltas))
        })
        .ok()
        .flatten()
}

/// At the end of a recorded call: the next compute interval starts.
pub fn at_exit() {
    let _ = GROUP.try_with(|g| {
        if let Some(Some(group)) = g.borrow_mut().as_mut() {
            if let Some(now) = group.read() {
                group.last = now;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_counters_are_the_trace_formats() {
        let names: Vec<String> = super::KNOWN.iter().map(|k| trace_format::columns::name::counter(k.0)).collect();
        assert_eq!(names, trace_format::columns::name::COUNTERS);
    }
}

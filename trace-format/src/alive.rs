//! Whether a traced process still runs, seen from any machine that sees
//! the trace directory (a shared file system).
//!
//! `/proc` answers only on the process's own machine. Instead, each traced
//! process takes a write lock on its side file at `MPI_Init` ([`hold`]) and
//! keeps it: the kernel releases it when the process ends, however it ends
//! (`kill -9`, a crash; on NFS the server releases the locks of a machine
//! that went down when its lease runs out). A reader asks whether the lock
//! is held ([`probe`]) without taking it, so it never disturbs the job. The
//! locks are open-file-description locks (`F_OFD_SETLK`), which closing
//! another descriptor of the file does not release.

use std::os::fd::AsRawFd;
use std::path::Path;

/// The whole file, for `kind` (`F_WRLCK` or `F_RDLCK`).
fn whole_file(kind: libc::c_int) -> libc::flock {
    // SAFETY: `flock` is plain data; all-zero is a valid value (pid 0 is
    // what OFD lock requests require).
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l
}

/// Takes the lock on `path`: held while the returned file is open.
fn lock(path: &Path) -> Option<std::fs::File> {
    let f = std::fs::OpenOptions::new().append(true).open(path).ok()?;
    let l = whole_file(libc::F_WRLCK);
    // SAFETY: a valid descriptor and a live `flock`.
    (unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &l) } == 0).then_some(f)
}

/// Takes the lock on `path` and keeps it until the process ends (the file
/// stays open, never closed). Whether it was taken: not on a file system
/// without locks.
pub fn hold(path: &Path) -> bool {
    // The lock lasts as long as the open file description.
    lock(path).map(std::mem::forget).is_some()
}

/// Whether the process that took the lock on `path` still holds it:
/// `None` when that cannot be told (no file, no locks).
pub fn probe(path: &Path) -> Option<bool> {
    let f = std::fs::File::open(path).ok()?;
    // A read lock conflicts with the holder's write lock only.
    let mut l = whole_file(libc::F_RDLCK);
    // SAFETY: a valid descriptor and a live `flock` for the answer.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut l) } != 0 {
        return None;
    }
    Some(l.l_type != libc::F_UNLCK as libc::c_short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_while_open_and_released_when_closed() {
        let path = std::env::temp_dir().join(format!("tf-alive-{}", std::process::id()));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(probe(&path), Some(false));
        // Open file description locks conflict across descriptions, even of
        // one process: this one asks through a description of its own, as
        // another process would. Closing the holder's is what ending the
        // process does.
        let holder = lock(&path).unwrap();
        assert_eq!(probe(&path), Some(true));
        assert_eq!(probe(&path), Some(true), "asking does not take the lock");
        drop(holder);
        assert_eq!(probe(&path), Some(false));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(probe(&path), None);
    }
}

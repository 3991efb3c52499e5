//! What works on memory of this host without the target: transfers with
//! `process_vm_readv/writev`, the lock words of a window's segment (one
//! cache line per member: the accumulate lock, the barrier counter, the
//! `MPI_Win_lock` word) and the barrier of a shared window.

use super::Win;

/// Writes `len` bytes at `src` to address `addr` of process `pid`
/// (`process_vm_writev`), or reads them into `dst` (`process_vm_readv`).
///
/// # Safety
/// `buf` must be valid for `len` bytes (readable to write, writable to read).
pub unsafe fn cma(pid: i32, addr: usize, buf: *mut u8, len: usize, write: bool) -> std::io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let n = len - done;
        let local = libc::iovec { iov_base: buf.wrapping_add(done) as *mut libc::c_void, iov_len: n };
        let remote = libc::iovec { iov_base: (addr + done) as *mut libc::c_void, iov_len: n };
        // SAFETY: `local` is our own buffer of `n` bytes; the kernel checks
        // the remote range against the other process's mappings.
        let r = unsafe {
            if write {
                libc::process_vm_writev(pid, &local, 1, &remote, 1, 0)
            } else {
                libc::process_vm_readv(pid, &local, 1, &remote, 1, 0)
            }
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if r == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "process_vm_readv/writev moved nothing",
            ));
        }
        done += r as usize;
    }
    Ok(())
}

/// Bytes of the lock words at the start of a shared window segment (one
/// cache line per member).
pub const LOCK_LINE: usize = 64;

/// Runs `f` holding the lock word of member `t` of a shared window whose
/// lock words start at `locks`: accumulates done in place by any process
/// of the node exclude each other through it. A waiter spins briefly, then
/// yields (the holder may be a descheduled process on a busy core).
pub fn with_part_lock<R>(locks: usize, t: usize, f: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicU32, Ordering};
    // SAFETY: `locks` is the start of the window's mapped segment, which
    // holds one lock line per member and outlives the window.
    let word = unsafe { &*((locks + t * LOCK_LINE) as *const AtomicU32) };
    let mut spins = 0u32;
    while word.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let r = f();
    word.store(0, Ordering::Release);
    r
}

/// The barrier counter of member `t` (next to its lock word).
fn barrier_word(locks: usize, t: usize) -> &'static std::sync::atomic::AtomicU64 {
    // SAFETY: as in `with_part_lock`: the lock line of member t, 8 bytes in.
    unsafe { &*((locks + t * LOCK_LINE + 8) as *const std::sync::atomic::AtomicU64) }
}

/// Arrives at the next barrier of a shared window (publishes the count and
/// wakes the members that sleep); returns its number.
pub fn barrier_arrive(w: &mut Win) -> u64 {
    let locks = w.shm_locks.expect("a window in one shared segment");
    w.barriers += 1;
    barrier_word(locks, w.rank).store(w.barriers, std::sync::atomic::Ordering::Release);
    for &c in &w.peer_ctls {
        // SAFETY: control blocks of the node segment, mapped until finalize.
        crate::rt::shm::notify(unsafe { &*(c as *const crate::rt::shm::Ctl) });
    }
    w.barriers
}

/// Whether every member has arrived at barrier `k`.
pub fn barrier_done(w: &Win, k: u64) -> bool {
    let Some(locks) = w.shm_locks else { return true };
    (0..w.group.len()).all(|t| barrier_word(locks, t).load(std::sync::atomic::Ordering::Acquire) >= k)
}

/// Bit of a part's lock word (offset 16 of its lock line) held by an
/// exclusive `MPI_Win_lock`; the bits below count shared holders.
const RW_EXCL: u32 = 1 << 31;

fn rw_word(locks: usize, t: usize) -> &'static std::sync::atomic::AtomicU32 {
    // SAFETY: as in `with_part_lock`: the lock line of member t, 16 bytes in.
    unsafe { &*((locks + t * LOCK_LINE + 16) as *const std::sync::atomic::AtomicU32) }
}

/// Tries to take `MPI_Win_lock` of member `t` in the lock words at `locks`
/// (windows whose members all share a host: no message to the target).
pub fn rw_try_lock(locks: usize, t: usize, exclusive: bool) -> bool {
    use std::sync::atomic::Ordering::{Acquire, Relaxed};
    let w = rw_word(locks, t);
    if exclusive {
        return w.compare_exchange(0, RW_EXCL, Acquire, Relaxed).is_ok();
    }
    let mut v = w.load(Relaxed);
    while v & RW_EXCL == 0 {
        match w.compare_exchange_weak(v, v + 1, Acquire, Relaxed) {
            Ok(_) => return true,
            Err(now) => v = now,
        }
    }
    false
}

/// Releases a lock taken with [`rw_try_lock`] and wakes the members that
/// may sleep waiting for it.
pub fn rw_unlock(w: &Win, locks: usize, t: usize, exclusive: bool) {
    use std::sync::atomic::Ordering::Release;
    if exclusive {
        rw_word(locks, t).store(0, Release);
    } else {
        rw_word(locks, t).fetch_sub(1, Release);
    }
    for &c in &w.peer_ctls {
        // SAFETY: control blocks of the node segment, mapped until finalize.
        crate::rt::shm::notify(unsafe { &*(c as *const crate::rt::shm::Ctl) });
    }
}

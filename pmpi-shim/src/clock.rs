//! The journal clock: the time-stamp counter on x86-64 (a few ns to read),
//! CLOCK_MONOTONIC elsewhere. Calibration points (ticks, monotonic ns) in
//! the side file map ticks to nanoseconds.

use trace_format::journal::ClockKind;

#[cfg(target_arch = "x86_64")]
pub const KIND: ClockKind = ClockKind::Tsc;
#[cfg(not(target_arch = "x86_64"))]
pub const KIND: ClockKind = ClockKind::MonotonicNs;

/// Current journal clock value.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        mono_ns()
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A calibration point: ticks read right between two monotonic reads.
pub fn point() -> (u64, u64) {
    let a = mono_ns();
    let t = ticks();
    let b = mono_ns();
    (t, a + (b - a) / 2)
}

//! What `mpitrace record` hears while its job runs: the signals that ask it
//! to stop (SIGINT, SIGTERM, SIGHUP) and the end of the job (SIGCHLD), both
//! through one self-pipe that the main loop polls.
//!
//! The handler only writes one byte to the pipe; everything else (passing
//! the signal on, the grace period, converting the journals) happens in the
//! main loop, where any call is allowed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The signals that stop a recording.
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Write end of the self-pipe, for the handler (-1: none).
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
/// While the journals are converted: the message a stop signal prints before
/// it ends mpitrace at once (null: no conversion running).
static LAST_WORDS: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static LAST_WORDS_LEN: AtomicUsize = AtomicUsize::new(0);

/// Set in a pipe byte when the kernel sent the signal (a terminal's Ctrl-C or
/// hangup, which reached the terminal's whole foreground process group)
/// rather than a process with kill(2).
const FROM_KERNEL: u8 = 0x80;

/// One thing the main loop learns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A stop signal; `from_terminal` when the kernel sent it to the whole
    /// foreground process group (so the job, if in that group, has it too).
    Stop { signal: i32, from_terminal: bool },
    /// A child changed state (SIGCHLD): look at the job.
    Child,
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // Async-signal safety: this handler touches only atomics, the thread's
    // errno (saved and restored, as the interrupted code may be about to read
    // it), write(2) and _exit(2), all async-signal-safe; it allocates
    // nothing, takes no lock and does not unwind.
    // SAFETY: __errno_location returns this thread's errno, always valid.
    let errno = unsafe { *libc::__errno_location() };
    let words = LAST_WORDS.load(Ordering::Acquire);
    if sig != libc::SIGCHLD && !words.is_null() {
        // SAFETY: LAST_WORDS points to a leaked (never freed) buffer of
        // LAST_WORDS_LEN bytes, published before the pointer (Release).
        unsafe {
            libc::write(2, words.cast(), LAST_WORDS_LEN.load(Ordering::Relaxed));
            libc::_exit(128 + sig);
        }
    }
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let kernel = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
    let byte = sig as u8 | if kernel { FROM_KERNEL } else { 0 };
    let fd = WAKE_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        // A full pipe (thousands of unread signals) drops this byte: the
        // loop has plenty to wake up for already.
        // SAFETY: `byte` is a live local; the pipe is non-blocking.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// The installed handlers and the pipe they write to. One at a time.
pub struct Signals {
    read: OwnedFd,
    write: OwnedFd,
    /// The signals handled and their dispositions before.
    old: Vec<(i32, libc::sigaction)>,
}

impl Signals {
    /// Installs the handlers. A stop signal that this process ignores
    /// already (`nohup` ignores SIGHUP, a shell without job control SIGINT
    /// for background commands) stays ignored, as in the job, which
    /// inherits that.
    pub fn install() -> io::Result<Signals> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 returns.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded: both descriptors are fresh and ours.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        WAKE_FD.store(write.as_raw_fd(), Ordering::Relaxed);
        let mut this = Signals { read, write, old: Vec::new() };
        for sig in STOP_SIGNALS.into_iter().chain([libc::SIGCHLD]) {
            // SAFETY: a zeroed sigaction is a valid value to read into.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: querying only (null new action); `old` is writable.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
                return Err(io::Error::last_os_error());
            }
            if old.sa_sigaction == libc::SIG_IGN && sig != libc::SIGCHLD {
                continue;
            }
            // SAFETY: a zeroed sigaction is valid; the handler is
            // async-signal-safe (see on_signal); SA_RESTART keeps the main
            // loop's other system calls from failing with EINTR; SIGCHLD
            // only for ended children, not stopped ones.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                    as libc::sighandler_t;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_NOCLDSTOP;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            this.old.push((sig, old));
        }
        Ok(this)
    }

    /// Waits until something happens or `until` passes (None: no limit);
    /// returns what happened, in order (empty: the time passed).
    pub fn wait(&self, until: Option<Instant>) -> io::Result<Vec<Event>> {
        let timeout = match until {
            None => -1,
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                // Rounded up, so that the caller does not wake just before
                // its deadline and spin.
                left.as_millis().saturating_add(u128::from(left.subsec_nanos() % 1_000_000 != 0)).min(i32::MAX as u128)
                    as i32
            }
        };
        let mut pfd = libc::pollfd { fd: self.read.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(Vec::new()) } else { Err(e) };
        }
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: `buf` is writable for its length.
            let got = unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if got <= 0 {
                break;
            }
            for &b in &buf[..got as usize] {
                let signal = i32::from(b & !FROM_KERNEL);
                out.push(if signal == libc::SIGCHLD {
                    Event::Child
                } else {
                    Event::Stop { signal, from_terminal: b & FROM_KERNEL != 0 }
                });
            }
        }
        Ok(out)
    }

    /// From now on a stop signal ends mpitrace at once, after printing
    /// `message`: used while the journals are converted, which may take
    /// long and which a user who insists must be able to interrupt (the
    /// journals stay until a rank's Parquet files are complete).
    pub fn exit_on_stop(&self, message: String) {
        let words: &'static mut [u8] = Box::leak(message.into_bytes().into_boxed_slice());
        LAST_WORDS_LEN.store(words.len(), Ordering::Relaxed);
        LAST_WORDS.store(words.as_mut_ptr(), Ordering::Release);
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (sig, old) in &self.old {
            // SAFETY: restoring the disposition read in `install`.
            unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
        }
        LAST_WORDS.store(std::ptr::null_mut(), Ordering::Release);
        // The handlers are gone, the descriptor can close with `self`.
        let _ = WAKE_FD.compare_exchange(self.write.as_raw_fd(), -1, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The name of a signal, `SIGTERM`, or `signal N`.
pub fn name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        _ => format!("signal {sig}"),
    }
}

/// Sends `sig` to a process (`target` > 0) or a process group (< 0); a
/// target already gone is not an error.
pub fn send(target: i32, sig: i32) {
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(target, sig) };
}

/// Whether child `pid` has ended, without reaping it (its pid, and the
/// process group it leads, stay reserved until it is reaped).
pub fn has_ended(pid: i32) -> io::Result<bool> {
    // SAFETY: a zeroed siginfo is valid for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `info` is writable; WNOWAIT leaves the child a zombie.
        let r = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
        };
        if r == 0 {
            // SAFETY: waitid filled `info` (si_pid stays 0 when no child
            // has ended).
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether stdin is a terminal (then the job shares mpitrace's process
/// group: see `record::run`).
pub fn stdin_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdin())
}

/// A grace period in whole seconds when it is one, for messages.
pub fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

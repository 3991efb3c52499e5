//! Thin, safe wrappers over the few system calls the launcher needs beyond
//! the standard library: poll(2), signals, waitpid(2), kill(2), limits.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// Makes sure descriptors 0, 1 and 2 are open (on /dev/null if they were
/// closed), so that sockets and pipes created later never take those numbers.
pub fn ensure_std_fds_open() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only queries the descriptor table.
        let open = unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1;
        if !open {
            // SAFETY: the path is a valid NUL-terminated string; open returns
            // the lowest free descriptor, which is `fd` here. It stays open for
            // the life of the process on purpose.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

/// Sets or clears O_NONBLOCK on a descriptor.
pub fn set_nonblocking(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own; no memory is touched.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        let flags = if on { flags | libc::O_NONBLOCK } else { flags & !libc::O_NONBLOCK };
        if libc::fcntl(fd, libc::F_SETFL, flags) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Reads once from `fd` into `buf`. `Ok(None)` means "would block" (or
/// interrupted), `Ok(Some(0))` is end of file.
pub fn read_some(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let err = io::Error::last_os_error();
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(err),
    }
}

/// Writes once to `fd`. `Ok(0)` means "would block" (or interrupted).
pub fn write_some(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes. MSG_NOSIGNAL is
    // not available for pipes, but SIGPIPE is ignored in the launcher.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(n as usize);
    }
    let err = io::Error::last_os_error();
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
        _ => Err(err),
    }
}

/// poll(2) over `fds`; an interrupted call returns `Ok(0)`.
pub fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        Some(d) => {
            // Round up so that a deadline 0.4 ms away does not spin.
            let ms = d.as_micros().div_ceil(1000);
            ms.min(i32::MAX as u128) as i32
        }
    };
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n >= 0 {
        return Ok(n as usize);
    }
    let err = io::Error::last_os_error();
    if err.kind() == io::ErrorKind::Interrupted {
        Ok(0)
    } else {
        Err(err)
    }
}

/// kill(2). Errors (the process is already gone) are ignored.
pub fn kill(pid: i32, sig: i32) {
    // SAFETY: kill only sends a signal; a stale pid yields ESRCH.
    unsafe { libc::kill(pid, sig) };
}

/// The process group of `pid`, if it still exists.
pub fn getpgid(pid: i32) -> Option<i32> {
    // SAFETY: getpgid only queries the process table.
    let g = unsafe { libc::getpgid(pid) };
    (g >= 0).then_some(g)
}

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// exit(code)
    Code(i32),
    /// killed by this signal
    Signal(i32),
}

/// Whether child `pid` has ended, without blocking. With `reap` false the
/// child stays a zombie (its pid, and the process group it leads, cannot be
/// reused); a later call with `reap` true collects it.
pub fn check_exit(pid: i32, reap: bool) -> Option<ExitKind> {
    let mut flags = libc::WEXITED | libc::WNOHANG;
    if !reap {
        flags |= libc::WNOWAIT;
    }
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-buffer for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid out-pointer; WNOHANG never blocks.
        let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if rc != 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        // SAFETY: waitid filled `info` for a child state change (or left
        // si_pid zero when nothing changed), so these fields are valid.
        let (child, status) = unsafe { (info.si_pid(), info.si_status()) };
        if child == 0 {
            return None;
        }
        return Some(match info.si_code {
            libc::CLD_EXITED => ExitKind::Code(status),
            _ => ExitKind::Signal(status),
        });
    }
}

/// The conventional name of a signal ("SIGSEGV"), or "signal N".
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// Write end of the self-pipe the signal handler writes to (-1: none).
static SIGNAL_PIPE_WR: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE_WR.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    // SAFETY: only async-signal-safe calls: errno is saved and restored
    // around a write(2) of one byte from a local variable.
    unsafe {
        let errno = libc::__errno_location();
        let saved = *errno;
        let byte = sig as u8;
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *errno = saved;
    }
}

/// Signals delivered to the launcher, turned into bytes on a pipe so that the
/// poll loop sees them (the self-pipe trick).
pub struct SignalPipe {
    read: OwnedFd,
    _write: OwnedFd,
}

impl SignalPipe {
    /// Creates the pipe and installs a handler for every signal in `signals`.
    /// Only one `SignalPipe` may exist at a time.
    pub fn install(signals: &[i32]) -> io::Result<SignalPipe> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 returns.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are fresh and ours.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        SIGNAL_PIPE_WR.store(write.as_raw_fd(), Ordering::Relaxed);
        for &sig in signals {
            // SAFETY: a zeroed sigaction is a valid starting value; the
            // handler only performs async-signal-safe operations.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(SignalPipe { read, _write: write })
    }

    /// The descriptor to poll for POLLIN.
    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// The signals received since the last call, in arrival order.
    pub fn drain(&self) -> Vec<i32> {
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(Some(n)) = read_some(self.fd(), &mut buf) {
            if n == 0 {
                break;
            }
            out.extend(buf[..n].iter().map(|&b| i32::from(b)));
        }
        out
    }
}

/// Raises the soft limit on open files to the hard limit and returns the old
/// soft limit (a job of N ranks keeps 3N descriptors open in the launcher).
pub fn raise_nofile_limit() -> Option<libc::rlimit> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let old = lim;
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: raising the soft limit up to the hard limit is always allowed.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
    Some(old)
}

/// This machine's host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is valid for `buf.len()` bytes; gethostname NUL-terminates
    // within that length on Linux (we also keep the last byte zero).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return String::from("localhost");
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `n` random bytes from /dev/urandom (or getrandom(2) if that fails).
pub fn random_bytes(n: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = vec![0u8; n];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        if f.read_exact(&mut buf).is_ok() {
            return Ok(buf);
        }
    }
    let mut filled = 0;
    while filled < n {
        // SAFETY: the pointer and length describe the unfilled tail of `buf`.
        let got = unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), n - filled, 0) };
        if got < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        filled += got as usize;
    }
    Ok(buf)
}

/// Lower-case hexadecimal of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// CPU time used by this process itself (user, system), in seconds.
pub fn own_cpu_time() -> (f64, f64) {
    // SAFETY: a zeroed rusage is a valid out-buffer for getrusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// The IP addresses of this machine's network interfaces.
pub fn interface_addresses() -> Vec<std::net::IpAddr> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `list` is a valid out-pointer; on success it must be freed
    // with freeifaddrs, which happens below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, which
        // stays valid until freeifaddrs; ifa_addr is null or points to a
        // sockaddr whose family tells its real type.
        unsafe {
            let ifa = &*cur;
            let addr = ifa.ifa_addr;
            if !addr.is_null() {
                match i32::from((*addr).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(addr as *const libc::sockaddr_in);
                        out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(addr as *const libc::sockaddr_in6);
                        out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            cur = ifa.ifa_next;
        }
    }
    // SAFETY: `list` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// Reads a non-blocking descriptor (a pipe, a socket) in `slot` up to
/// `max_reads` times, passing the data to `sink`, until it is empty. At end
/// of file or on an error the descriptor is closed (`slot` becomes None)
/// and true is returned.
pub fn drain<F: AsRawFd>(slot: &mut Option<F>, max_reads: usize, mut sink: impl FnMut(&[u8])) -> bool {
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..max_reads {
        let Some(fd) = slot.as_ref() else { return false };
        match read_some(fd.as_raw_fd(), &mut buf) {
            Ok(Some(0)) | Err(_) => {
                *slot = None;
                return true;
            }
            Ok(Some(n)) => sink(&buf[..n]),
            Ok(None) => return false,
        }
    }
    false
}

/// A writer on a raw descriptor (the launcher's stdout or stderr) that
/// writes everything even when the descriptor was left non-blocking by
/// whoever started the launcher: on EAGAIN it waits with poll(2).
pub struct FdWriter(pub RawFd);

impl std::io::Write for FdWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
            let n = unsafe { libc::write(self.0, buf.as_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    let mut pfd = [libc::pollfd { fd: self.0, events: libc::POLLOUT, revents: 0 }];
                    poll(&mut pfd, None)?;
                }
                _ => return Err(err),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

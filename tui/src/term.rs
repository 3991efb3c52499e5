//! The real terminal: raw mode, alternate screen, mouse, the event loop,
//! and restoring the terminal whatever happens.
//!
//! How the viewer ends:
//! - `q` or Ctrl-C (a key in raw mode): the loop ends, the terminal is
//!   restored, [`run`] returns.
//! - A panic of the UI thread: the panic hook restores the terminal first,
//!   then prints the message (so it lands on the normal screen, with line
//!   ends); [`run`] returns [`Error::Internal`].
//! - SIGINT, SIGTERM, SIGHUP: the handler records the signal; the loop sees
//!   it within one poll timeout, the terminal is restored and the process
//!   dies of that signal (the shell sees the usual status).
//! - The terminal going away (tmux pane killed, ssh dropped): its file is
//!   hung up, reads fail with EIO at once, and crossterm's reader retries
//!   that read forever without returning (a busy loop that never sees the
//!   signal flag). So a watchdog thread waits for the terminal to hang up
//!   (POLLHUP, which needs no SIGHUP: a viewer outside the terminal's session
//!   gets none) and for signals (through a self-pipe). When the terminal
//!   hangs up, the watchdog ends the process at once; after a signal it
//!   gives the UI thread [`GRACE`] to end by itself, then restores what it
//!   can and ends the process.

use std::fs::File;
use std::io::{stdout, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind};
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::{execute, Command};
use ratatui::Terminal;

use crate::app::App;
use crate::Error;

/// The signal that ends the viewer (SIGHUP also when the terminal hung up
/// without one), 0 while none.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Write end of the watchdog's self-pipe, -1 when there is none.
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// Whether the terminal is in raw mode and the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Set by SIGTSTP: the loop restores the terminal, stops, and takes the
/// terminal again when continued.
static SUSPEND: AtomicBool = AtomicBool::new(false);

/// How long the watchdog lets the UI thread end by itself.
const GRACE: Duration = Duration::from_millis(1000);

/// The signals that end the viewer.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Environment variable of the test hooks: `panic` makes the UI thread
/// panic right after its first frame, `hang` makes it stop for good after
/// its first frame of the timeline (ignoring everything, as if stuck), `loader-panic` makes the thread that
/// runs the analyses panic.
pub const TEST_ENV: &str = "MPITRACE_TUI_TEST";

/// Whether the test hook `what` is asked for.
pub(crate) fn test_hook(what: &str) -> bool {
    std::env::var(TEST_ENV).is_ok_and(|v| v == what)
}

fn wake_watchdog() {
    let fd = WAKE.load(SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) of one byte from a valid buffer; it is
        // async-signal-safe, and a full pipe (EAGAIN) already wakes.
        unsafe { libc::write(fd, [0u8].as_ptr().cast(), 1) };
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno; the handler
    // keeps the interrupted code's errno intact.
    let errno = unsafe { *libc::__errno_location() };
    if sig == libc::SIGTSTP {
        SUSPEND.store(true, SeqCst);
    } else {
        let _ = SIGNAL.compare_exchange(0, sig, SeqCst, SeqCst);
        wake_watchdog();
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// The escape sequences that leave the viewer's terminal state (mouse
/// capture off, normal screen, cursor shown).
fn restore_sequence() -> &'static [u8] {
    static SEQ: OnceLock<String> = OnceLock::new();
    SEQ.get_or_init(|| {
        let mut s = String::new();
        let _ = DisableMouseCapture.write_ansi(&mut s);
        let _ = LeaveAlternateScreen.write_ansi(&mut s);
        let _ = Show.write_ansi(&mut s);
        s
    })
    .as_bytes()
}

/// Puts the terminal back as it was (once; later calls do nothing).
/// `direct` writes straight to file descriptor 1 instead of through
/// `stdout()`, whose lock a stuck UI thread may hold.
fn restore(direct: bool) {
    if !ACTIVE.swap(false, SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let seq = restore_sequence();
    if direct {
        // SAFETY: write(2) from a valid buffer of `seq.len()` bytes; a
        // failure (the terminal is gone) is ignored on purpose.
        unsafe { libc::write(1, seq.as_ptr().cast(), seq.len()) };
    } else {
        let mut out = stdout();
        let _ = out.write_all(seq);
        let _ = out.flush();
    }
}

/// Ends the process by `sig` (as if it had not been caught).
fn die(sig: libc::c_int) -> ! {
    // SAFETY: resetting a disposition, unblocking a signal and raising it
    // take only valid arguments; `set` is initialised by sigemptyset.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig)
    }
}

/// Restores the terminal when dropped (normal exit and unwinding).
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore(false);
    }
}

/// The signal handlers of the viewer; the previous ones come back on drop.
struct Handlers(Vec<(libc::c_int, libc::sigaction)>);

/// Sets the handler of `sig` to [`on_signal`]; returns the previous action.
fn catch_signal(sig: libc::c_int) -> Option<libc::sigaction> {
    // SAFETY: `act` is fully initialised (zeroed, empty mask, a handler
    // that only touches atomics, errno and write(2)); `prev` receives the
    // old action.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        let mut prev: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(sig, &act, &mut prev) == 0).then_some(prev)
    }
}

impl Handlers {
    fn install() -> Handlers {
        Handlers(SIGNALS.into_iter().chain([libc::SIGTSTP]).filter_map(|sig| Some((sig, catch_signal(sig)?))).collect())
    }
}

/// Whether a stop would stop this process: a shell with job control
/// (our parent, in another process group of our session) can continue it.
/// Otherwise the process group is orphaned and the kernel ignores SIGTSTP.
fn can_stop() -> bool {
    // SAFETY: these calls only read process ids.
    unsafe {
        let parent = libc::getppid();
        libc::getpgid(parent) != libc::getpgrp() && libc::getsid(parent) == libc::getsid(0)
    }
}

/// Gives the terminal back and stops the process (SIGTSTP, as the shell
/// expects); when continued, takes the terminal again.
fn suspend(terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>) -> Result<(), Error> {
    restore(false);
    // SAFETY: the default action of SIGTSTP stops the process until
    // SIGCONT; the handler is set again right after.
    unsafe {
        libc::signal(libc::SIGTSTP, libc::SIG_DFL);
        libc::raise(libc::SIGTSTP);
    }
    catch_signal(libc::SIGTSTP);
    SUSPEND.store(false, SeqCst);
    enable_raw_mode()?;
    ACTIVE.store(true, SeqCst);
    execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    terminal.clear()?;
    Ok(())
}

impl Drop for Handlers {
    fn drop(&mut self) {
        for (sig, prev) in &self.0 {
            // SAFETY: `prev` is the action sigaction returned for `sig`.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

/// The terminal the viewer reads (the one crossterm reads: standard input
/// if it is a terminal, else `/dev/tty`), for the watchdog to see it hang
/// up; `None` if there is none.
fn input_tty() -> Option<OwnedFd> {
    // SAFETY: isatty only inspects descriptor 0.
    if unsafe { libc::isatty(0) } == 1 {
        // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor this function owns.
        let fd = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 0) };
        // SAFETY: `fd` was just created and is owned by nobody else.
        return (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    }
    File::open("/dev/tty").ok().map(OwnedFd::from)
}

/// Waits until the terminal hangs up or a signal comes, and ends the
/// process if the UI thread does not end by itself soon after.
struct Watchdog {
    /// The write end of the self-pipe ([`WAKE`]).
    _wake: OwnedFd,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn drain(fd: RawFd) {
    let mut buf = [0u8; 64];
    // SAFETY: reads into a valid buffer of its length; the pipe is
    // non-blocking, so this ends when it is empty.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

fn poll_fds(fds: &mut [libc::pollfd], timeout: Duration) {
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd entries.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

/// Whether the terminal behind `fd` has hung up.
fn hung_up(fd: RawFd) -> bool {
    let mut p = [libc::pollfd { fd, events: 0, revents: 0 }];
    poll_fds(&mut p, Duration::ZERO);
    p[0].revents & libc::POLLHUP != 0
}

fn watch(wake: OwnedFd, tty: Option<OwnedFd>, done: &AtomicBool) {
    let pfd = |fd: RawFd, events| libc::pollfd { fd, events, revents: 0 };
    // A negative descriptor is ignored by poll; POLLHUP needs no request.
    let mut fds = [pfd(wake.as_raw_fd(), libc::POLLIN), pfd(tty.as_ref().map_or(-1, |t| t.as_raw_fd()), 0)];
    loop {
        fds.iter_mut().for_each(|f| f.revents = 0);
        poll_fds(&mut fds, Duration::from_secs(3600));
        drain(fds[0].fd);
        if done.load(SeqCst) {
            return;
        }
        if fds[1].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            // The UI thread is most likely spinning in crossterm's reader,
            // and there is no terminal left to restore or draw on.
            let _ = SIGNAL.compare_exchange(0, libc::SIGHUP, SeqCst, SeqCst);
            restore(true);
            die(SIGNAL.load(SeqCst));
        }
        if SIGNAL.load(SeqCst) != 0 {
            break;
        }
    }
    let deadline = Instant::now() + GRACE;
    while !done.load(SeqCst) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            restore(true);
            die(SIGNAL.load(SeqCst));
        }
        poll_fds(&mut fds[..1], left);
        drain(fds[0].fd);
    }
}

impl Watchdog {
    fn start() -> Result<Watchdog, Error> {
        let mut p = [0; 2];
        // SAFETY: `p` has room for the two descriptors pipe2 returns.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        // SAFETY: pipe2 just created both descriptors; nobody else owns them.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
        WAKE.store(w.as_raw_fd(), SeqCst);
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let tty = input_tty();
        let thread = std::thread::Builder::new().name("tui-watchdog".into()).spawn(move || watch(r, tty, &d))?;
        Ok(Watchdog { _wake: w, done, thread: Some(thread) })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, SeqCst);
        wake_watchdog();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The pipe closes after this (the field drops last).
        WAKE.store(-1, SeqCst);
    }
}

/// Runs the viewer on the trace in `dir` until the user quits.
///
/// On SIGINT, SIGTERM, SIGHUP or when the terminal goes away, the terminal
/// is restored and the process dies of that signal: this function does not
/// return then.
pub fn run(dir: &Path) -> Result<(), Error> {
    run_last(dir, None)
}

/// [`run`], showing only the last `last` ns of the trace when it opens
/// (`mpitrace top`'s timeline of a running job).
pub fn run_last(dir: &Path, last: Option<i64>) -> Result<(), Error> {
    let ui = std::thread::current().id();
    let previous: Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync> = Arc::from(std::panic::take_hook());
    let prev = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if !ACTIVE.load(SeqCst) {
            prev(info);
        } else if std::thread::current().id() == ui {
            restore(false);
            prev(info);
        }
        // Else a loader thread while the viewer is on screen: the loader
        // catches the panic and the viewer shows its message.
    }));
    let result = {
        let handlers = Handlers::install();
        let watchdog = Watchdog::start()?;
        let result = with_terminal(dir, last);
        let sig = SIGNAL.load(SeqCst);
        if sig != 0 {
            die(sig);
        }
        if result.is_err() && hung_up(1) {
            // Drawing failed because the terminal went away, before the
            // watchdog saw it: there is nobody to tell.
            die(libc::SIGHUP);
        }
        drop(watchdog);
        drop(handlers);
        result
    };
    let _ = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| previous(info)));
    result
}

/// Raw mode and the alternate screen around the event loop.
fn with_terminal(dir: &Path, last: Option<i64>) -> Result<(), Error> {
    enable_raw_mode()?;
    ACTIVE.store(true, SeqCst);
    let _guard = Guard;
    execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| event_loop(&mut terminal, dir, last)));
    match result {
        Ok(r) => r,
        Err(p) => Err(Error::Internal(
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default(),
        )),
    }
}

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    dir: &Path,
    last: Option<i64>,
) -> Result<(), Error> {
    let (test_panic, test_hang) = (test_hook("panic"), test_hook("hang"));
    let mut app = App::open(dir);
    if let Some(ns) = last {
        app.show_last(ns);
    }
    let mut dirty = true;
    while !app.quit && SIGNAL.load(SeqCst) == 0 {
        dirty |= app.poll();
        if dirty {
            let size = terminal.size()?;
            app.size = (size.width, size.height);
            terminal.draw(|f| crate::ui::draw(f, &app))?;
            dirty = false;
            if test_panic {
                panic!("{TEST_ENV}=panic: the viewer panics after its first frame");
            }
            while test_hang && app.lod.is_some() {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        let timeout = if app.loading() { Duration::from_millis(100) } else { Duration::from_millis(250) };
        if event::poll(timeout)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => app.on_key(k),
                Event::Mouse(m) => app.on_mouse(m),
                Event::Resize(w, h) => app.size = (w, h),
                _ => {}
            }
            dirty = true;
        } else if app.loading() {
            dirty = true;
        }
        if SUSPEND.swap(false, SeqCst) | std::mem::take(&mut app.suspend) {
            if can_stop() {
                suspend(terminal)?;
            } else {
                app.message = Some("cannot suspend: no shell with job control to resume the viewer".into());
            }
            dirty = true;
        }
    }
    Ok(())
}

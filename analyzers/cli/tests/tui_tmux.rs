//! End to end: `mpitrace tui` in a real terminal (tmux): keys in, screen
//! out, and how the viewer ends (quit, Ctrl-C, signals, the terminal going
//! away, a panic) with the terminal left clean.
//! Skipped (with a note) where tmux is not installed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use analyzers::synth::{event, SynthTrace};
use trace_format::record::Kind;

/// A tmux session running one command, killed on drop; with the viewer's
/// process id when the command records it (see [`viewer`]).
struct Session {
    name: String,
    pid_file: PathBuf,
    /// The socket of the session's tmux server (removed on drop).
    socket: Option<PathBuf>,
}

impl Session {
    /// Starts `cmd` in a new 100x30 tmux session named after `tag`.
    fn start(tag: &str, cmd: &str) -> Session {
        let name = format!("mpitrace-tui-{tag}-{}", std::process::id());
        let pid_file = std::env::temp_dir().join(format!("{name}.pid"));
        let _ = std::fs::remove_file(&pid_file);
        let cmd = cmd.replace("PIDFILE", &pid_file.display().to_string());
        let mut s = Session { name, pid_file, socket: None };
        let out =
            s.command().args(["new-session", "-d", "-s", &s.name, "-x", "100", "-y", "30", &cmd]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        s.socket = Some(PathBuf::from(s.pane("#{socket_path}")));
        s
    }
    /// tmux on a server of this session's own (tests run in parallel, and
    /// a shared server exits when its last session is killed).
    fn command(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.name]);
        c
    }
    fn tmux(&self, args: &[&str]) -> String {
        let out = self.command().args(args).output().expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.name])
    }
    /// A tmux format of the pane (e.g. `#{alternate_on}`).
    fn pane(&self, format: &str) -> String {
        self.tmux(&["display", "-p", "-t", &self.name, format]).trim().to_string()
    }
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }
    /// Waits until the screen contains `what`; returns the screen.
    fn wait_for(&self, what: &str) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "screen never showed {what:?}:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    /// The viewer's process id, written by the command into PIDFILE.
    fn pid(&self) -> u32 {
        let t = Instant::now();
        loop {
            if let Some(p) = std::fs::read_to_string(&self.pid_file).ok().and_then(|s| s.trim().parse().ok()) {
                return p;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "the viewer never wrote {}", self.pid_file.display());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fn kill(&self) {
        let _ = self.command().args(["kill-session", "-t", &self.name]).output();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.kill();
        // A viewer that outlived its terminal (the bug these tests catch)
        // must not stay behind.
        if let Some(p) = std::fs::read_to_string(&self.pid_file).ok().and_then(|s| s.trim().parse::<u32>().ok()) {
            if !ended(p) {
                let _ = Command::new("kill").args(["-KILL", &p.to_string()]).output();
            }
        }
        let _ = std::fs::remove_file(&self.pid_file);
        if let Some(socket) = &self.socket {
            let _ = std::fs::remove_file(socket);
        }
    }
}

/// Whether process `pid` has ended (gone, or a zombie not yet reaped).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to `limit` for `pid` to end; returns how long it took.
fn wait_ended(pid: u32, limit: Duration) -> Duration {
    let t = Instant::now();
    while !ended(pid) {
        assert!(t.elapsed() < limit, "mpitrace tui (pid {pid}) still runs {limit:?} later");
        std::thread::sleep(Duration::from_millis(20));
    }
    t.elapsed()
}

/// A shell command that runs the viewer on `dir`, recording its process id
/// in PIDFILE (the `sh` execs the viewer, so its pid is the viewer's).
fn viewer(dir: &std::path::Path) -> String {
    format!("sh -c 'echo $$ > PIDFILE; exec {} tui {}'", env!("CARGO_BIN_EXE_mpitrace"), dir.display())
}

/// Ends the test (with a note) where tmux is not installed.
macro_rules! require_tmux {
    () => {
        if tmux_missing() {
            panic!("tmux is not installed (apt-get install tmux; tests/run-all.sh installs it)");
        }
    };
}

fn tmux_missing() -> bool {
    Command::new("tmux").arg("-V").output().map(|o| !o.status.success()).unwrap_or(true)
}

/// Writes the small known trace into a fresh directory named after `tag`.
fn small_trace(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mpitrace-tui-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut t = SynthTrace::new(4);
    t.send(0, 2, 5, 8192, 10_000, 12_000, 0x40);
    t.recv(2, 0, 5, 8192, 5_000, 20_000, 0x50);
    for r in 0..4 {
        t.coll(r, "MPI_Allreduce", if r == 3 { 80_000 } else { 50_000 }, 82_000, 0x60, 8, None);
    }
    t.finalize(100_000);
    // A user region on rank 0 (drawn as a band above its calls).
    for (kind, at) in [(Kind::RegionBegin, 8_000), (Kind::RegionEnd, 60_000)] {
        t.ranks[0].push(event(0, kind, "solve", at, at));
    }
    t.ranks[0].sort_by_key(|e| e.t_start);
    t.write(&dir).unwrap();
    dir
}

/// Writes the small trace and runs `ENV mpitrace tui DIR` in a session
/// named after `tag`; the shell then prints `mpitrace-exited-STATUS` and
/// runs `then`.
fn start_viewer(tag: &str, env: &str, then: &str) -> (Session, PathBuf) {
    let dir = small_trace(tag);
    let cmd =
        format!("{env} {} tui {}; echo mpitrace-exited-$?; {then}", env!("CARGO_BIN_EXE_mpitrace"), dir.display());
    (Session::start(tag, &cmd), dir)
}

/// The pane is back to normal: main screen, cursor shown, no mouse
/// reporting, cooked mode with echo.
fn assert_pane_restored(s: &Session) {
    let f = "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_button_flag} #{mouse_sgr_flag}";
    assert_eq!(s.pane(f), "0 1 0 0 0", "alternate screen, cursor, mouse flags of the pane ({f})");
    // Cooked mode with echo, as the terminal was before.
    let tty = s.pane("#{pane_tty}");
    let out = Command::new("stty").args(["-a", "-F", &tty]).output().expect("run stty");
    let modes = String::from_utf8_lossy(&out.stdout).into_owned();
    for m in ["icanon", "echo", "icrnl", "opost", "isig"] {
        assert!(modes.split_whitespace().any(|w| w == m), "{m} is off on {tty}:\n{modes}");
    }
}

#[test]
fn browse_a_trace_in_tmux() {
    require_tmux!();
    let (s, dir) = start_viewer("browse", "", "sleep 30");

    let screen = s.wait_for("r3");
    assert!(screen.contains("4 ranks, 14 calls") && screen.contains("Allreduce"), "{screen}");
    assert!(screen.contains("-1µs – 102µs"), "{screen}");
    assert_eq!(s.pane("#{alternate_on}"), "1", "the viewer draws on the alternate screen");
    // The band of user regions comes with the analyses; r hides it.
    let band = s.wait_for("solve");
    let lines: Vec<&str> = band.lines().collect();
    let r0 = lines.iter().position(|l| l.starts_with("r0 ")).expect("row r0");
    assert!(lines[r0 - 1].contains("solve"), "the band is above r0's calls:\n{band}");
    s.keys(&["r"]);
    let t = Instant::now();
    while s.screen().contains("solve") {
        assert!(t.elapsed() < Duration::from_secs(10), "r did not hide the regions:\n{}", s.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    s.keys(&["2"]);
    s.wait_for("sorted by time");
    s.keys(&["/", "allreduce", "Enter"]);
    s.wait_for("MPI_Allreduce on rank 0 at 50");
    s.keys(&["5"]);
    s.wait_for("0→2  8.0 KiB  1 msg");
    s.keys(&["+"]);
    let zoomed = s.wait_for("(51.5µs)");
    assert!(zoomed.contains("r0"), "{zoomed}");
    // Worst-first through the N x N waits (t twice from Late Sender): ranks
    // 0-2 each waited 30 µs at the allreduce, rank 0 first.
    s.keys(&["t", "t", "v"]);
    s.wait_for("Wait at N x N #1 of 3: rank 0 lost 30.0µs in MPI_Allreduce waiting for rank 3");
    s.keys(&["x"]);
    s.wait_for("critical path (");
    s.keys(&["?"]);
    s.wait_for("any other key closes");
    s.keys(&["Escape"]);
    // No job control in a bare pane: Ctrl-Z says so and the viewer stays.
    s.keys(&["C-z"]);
    s.wait_for("cannot suspend: no shell with job control");
    assert_eq!(s.pane("#{alternate_on}"), "1");
    s.keys(&["q"]);
    let after = s.wait_for("mpitrace-exited-0");
    assert!(!after.contains("Allreduce"), "the terminal is restored:\n{after}");
    assert_pane_restored(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the viewer, ends it with `end` and checks that the shell sees
/// exit status `status` and the terminal is restored.
/// `env` is put before the viewer's command (test hooks).
fn end_and_check_the_terminal(tag: &str, env: &str, end: impl Fn(&Session), status: u32) {
    let dir = small_trace(tag);
    let s = Session::start(tag, &format!("{env} {}; echo mpitrace-exited-$?; sleep 30", viewer(&dir)));
    s.wait_for("r3");
    end(&s);
    let after = s.wait_for(&format!("mpitrace-exited-{status}"));
    assert!(!after.contains("Allreduce") && !after.contains("r3"), "the terminal is restored:\n{after}");
    assert_pane_restored(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C ends the viewer and leaves the terminal as it was.
#[test]
fn ctrl_c_restores_the_terminal() {
    require_tmux!();
    end_and_check_the_terminal("ctrlc", "", |s| s.keys(&["C-c"]), 0);
}

/// SIGTERM, SIGINT and SIGHUP (sent with kill, the terminal still there)
/// end the viewer at once; the terminal is restored and the shell sees a
/// death by that signal (status 128 + signal).
#[test]
fn signals_end_the_viewer_and_restore_the_terminal() {
    require_tmux!();
    for (sig, status) in [("TERM", 143), ("INT", 130), ("HUP", 129)] {
        end_and_check_the_terminal(&format!("sig{sig}"), "", |s| kill_viewer(s, sig), status);
    }
}

/// Sends SIG`sig` to the viewer and waits (at most 3 s) for it to end.
fn kill_viewer(s: &Session, sig: &str) {
    let pid = s.pid();
    let out = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).output().unwrap();
    assert!(out.status.success());
    let took = wait_ended(pid, Duration::from_secs(3));
    eprintln!("ended {took:?} after SIG{sig}");
}

/// A viewer whose UI thread is stuck (a test hook stops it after its
/// first frame) still ends on SIGTERM: the watchdog restores the terminal
/// and ends the process one second later.
#[test]
fn sigterm_ends_a_stuck_viewer() {
    require_tmux!();
    end_and_check_the_terminal("hang", "MPITRACE_TUI_TEST=hang", |s| kill_viewer(s, "TERM"), 143);
}

/// Runs the viewer through `prefix` (a command it runs under, may be
/// empty), kills the tmux session and returns how long the viewer took to
/// end (at most `limit`, or the test fails).
fn end_by_killing_the_terminal(tag: &str, prefix: &str, check: impl Fn(u32)) -> Duration {
    let dir = small_trace(tag);
    let s = Session::start(tag, &format!("{prefix}{}; sleep 30", viewer(&dir)));
    s.wait_for("r3");
    let pid = s.pid();
    check(pid);
    s.kill();
    let took = wait_ended(pid, Duration::from_secs(4));
    let _ = std::fs::remove_dir_all(&dir);
    took
}

/// Killing the tmux session (the terminal goes away and the viewer gets
/// SIGHUP) ends the viewer within a few seconds.
#[test]
fn killing_the_terminal_ends_the_viewer() {
    require_tmux!();
    let took = end_by_killing_the_terminal("kill", "", |_| {});
    eprintln!("ended {took:?} after the session was killed");
}

/// A viewer in another session than its terminal's gets no SIGHUP when
/// the terminal goes away, only a hung-up terminal (EOF/EIO on input): it
/// ends within a few seconds all the same.
#[test]
fn a_hung_up_terminal_ends_the_viewer_without_sighup() {
    require_tmux!();
    let took = end_by_killing_the_terminal("hangup", "setsid ", |pid| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
        assert_eq!(fields[3], pid.to_string(), "the viewer leads its own session (no SIGHUP reaches it): {stat}");
    });
    eprintln!("ended {took:?} after the terminal hung up");
}

/// A panic in the viewer (forced by a test hook) leaves the terminal
/// usable: normal screen, cursor shown, no mouse reporting, cooked mode
/// with echo (a command typed afterwards runs and shows), and the panic's
/// message printed on the normal screen.
#[test]
fn a_panic_restores_the_terminal_and_prints_its_message() {
    require_tmux!();
    let (s, dir) = start_viewer("panic", "RUST_BACKTRACE=0 MPITRACE_TUI_TEST=panic", "exec sh");
    let after = s.wait_for("mpitrace-exited-2");
    let lines: Vec<&str> = after.lines().collect();
    let at = |what: &str| {
        lines.iter().position(|l| l.contains(what)).unwrap_or_else(|| panic!("no {what:?} on the screen:\n{after}"))
    };
    // Printed after the restore: on the normal screen, starting at the left
    // edge (in raw mode a newline does not return the carriage).
    assert!(lines[at("panicked at")].starts_with("thread 'main'"), "{after}");
    assert!(lines[at("the viewer panics after its first frame")].starts_with("MPITRACE_TUI_TEST=panic"), "{after}");
    assert!(
        lines[at("mpitrace: internal error")].starts_with("mpitrace: internal error: MPITRACE_TUI_TEST=panic"),
        "{after}"
    );
    assert!(!after.contains("Allreduce"), "the viewer's screen is gone:\n{after}");
    assert_pane_restored(&s);
    // Cooked mode with echo: the typed line shows and runs on Enter.
    s.keys(&["stty -a | tr ' ' '\\n' | grep -c -x -e icanon -e echo -e icrnl -e opost | sed s/^/cooked-/", "Enter"]);
    let typed = s.wait_for("cooked-4");
    assert!(typed.contains("grep -c -x -e icanon"), "the typed command was echoed:\n{typed}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A panic in the background thread of the analyses does not touch the
/// terminal: the viewer stays on screen, says the analyses failed and why,
/// and quits cleanly.
#[test]
fn a_loader_panic_leaves_the_viewer_running() {
    require_tmux!();
    let (s, dir) = start_viewer("loaderpanic", "MPITRACE_TUI_TEST=loader-panic", "sleep 30");
    let screen = s.wait_for("analyses failed (6)");
    assert!(screen.contains("r3") && !screen.contains("panicked"), "{screen}");
    assert_eq!(s.pane("#{alternate_on} #{mouse_any_flag}"), "1 1", "still in the viewer's terminal state");
    s.keys(&["6"]);
    s.wait_for("analyses failed: internal error: MPITRACE_TUI_TEST=loader-panic");
    s.keys(&["q"]);
    s.wait_for("mpitrace-exited-0");
    assert_pane_restored(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without a terminal (no controlling terminal, standard streams not
/// terminals) the viewer says so once and ends with status 2 at once.
#[test]
fn without_a_terminal_the_viewer_says_so() {
    let dir = small_trace("noterm");
    // setsid: no controlling terminal, so /dev/tty cannot be opened either.
    let mut child = Command::new("setsid")
        .args(["-w", env!("CARGO_BIN_EXE_mpitrace"), "tui"])
        .arg(&dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run setsid");
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("mpitrace tui without a terminal still runs after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert_eq!(err.matches("terminal:").count(), 1, "{err}");
    assert_eq!(err.matches("os error").count(), 1, "the cause is said once: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-Z (or SIGTSTP from outside) gives the terminal back and stops the
/// viewer; `fg` in the shell brings it back on screen, where it still
/// works. (Needs a shell with job control: in an orphaned process group,
/// such as a bare tmux pane command, the kernel ignores SIGTSTP.)
#[test]
fn suspend_gives_the_terminal_back_and_fg_takes_it_again() {
    require_tmux!();
    let dir = small_trace("suspend");
    let s = Session::start("suspend", "PS1='ready> ' sh -i");
    s.wait_for("ready>");
    let cmd = viewer(&dir).replace("PIDFILE", &s.pid_file.display().to_string());
    s.keys(&[&cmd, "Enter"]);
    s.wait_for("r3");
    let pid = s.pid();
    let state = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|st| st.rsplit(')').next()?.trim_start().chars().next())
    };
    for suspend in ["key", "signal"] {
        match suspend {
            "key" => s.keys(&["C-z"]),
            _ => assert!(Command::new("kill").args(["-TSTP", &pid.to_string()]).status().unwrap().success()),
        }
        let t = Instant::now();
        while state() != Some('T') {
            assert!(t.elapsed() < Duration::from_secs(5), "not stopped by {suspend}: {:?}", state());
            std::thread::sleep(Duration::from_millis(20));
        }
        s.wait_for("Stopped");
        assert_pane_restored(&s);
        s.keys(&["clear; fg", "Enter"]);
        let t = Instant::now();
        while s.pane("#{alternate_on} #{mouse_any_flag}") != "1 1" {
            assert!(t.elapsed() < Duration::from_secs(5), "the viewer did not take the terminal again after {suspend}");
            std::thread::sleep(Duration::from_millis(20));
        }
        s.wait_for("r3");
    }
    s.keys(&["?"]);
    s.wait_for("any other key closes");
    s.keys(&["Escape", "q"]);
    wait_ended(pid, Duration::from_secs(5));
    // (The shell dropped the rest of the command line when the job
    // stopped: ask it for the job's status.)
    s.keys(&["echo status-$?", "Enter"]);
    s.wait_for("status-0");
    assert_pane_restored(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

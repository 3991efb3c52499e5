//! End to end: `mpitrace tui` in a real terminal (tmux): keys in, screen out.
//! Skipped (with a note) where tmux is not installed.

use std::process::Command;
use std::time::{Duration, Instant};

use analyzers::synth::SynthTrace;

struct Session(String);

impl Session {
    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(args).output().expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.0])
    }
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.0];
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
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).output();
    }
}

fn tmux_missing() -> bool {
    Command::new("tmux").arg("-V").output().map(|o| !o.status.success()).unwrap_or(true)
}

/// Writes the small known trace into a fresh directory named after `tag`.
fn small_trace(tag: &str) -> std::path::PathBuf {
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
    t.write(&dir).unwrap();
    dir
}

#[test]
fn browse_a_trace_in_tmux() {
    if tmux_missing() {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let dir = small_trace("tmux");
    let s = Session(format!("mpitrace-tui-{}", std::process::id()));
    let cmd = format!("{} tui {}; echo mpitrace-exited-$?; sleep 30", env!("CARGO_BIN_EXE_mpitrace"), dir.display());
    let out = Command::new("tmux").args(["new-session", "-d", "-s", &s.0, "-x", "100", "-y", "30", &cmd]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let screen = s.wait_for("r3");
    assert!(screen.contains("4 ranks, 14 calls") && screen.contains("Allreduce"), "{screen}");
    assert!(screen.contains("-1µs – 102µs"), "{screen}");
    s.keys(&["2"]);
    s.wait_for("sorted by time");
    s.keys(&["/", "allreduce", "Enter"]);
    s.wait_for("MPI_Allreduce on rank 0 at 50");
    s.keys(&["5"]);
    s.wait_for("0→2  8.0 KiB  1 msg");
    s.keys(&["+"]);
    let zoomed = s.wait_for("(51.5µs)");
    assert!(zoomed.contains("r0"), "{zoomed}");
    s.keys(&["?"]);
    s.wait_for("any other key closes");
    s.keys(&["Escape"]);
    s.keys(&["q"]);
    let after = s.wait_for("mpitrace-exited-0");
    assert!(!after.contains("Allreduce"), "the terminal is restored:\n{after}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C ends the viewer and leaves the terminal as it was.
#[test]
fn ctrl_c_restores_the_terminal() {
    if tmux_missing() {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let dir = small_trace("ctrlc");
    let s = Session(format!("mpitrace-tui-ctrlc-{}", std::process::id()));
    let cmd = format!("{} tui {}; echo mpitrace-exited-$?; sleep 30", env!("CARGO_BIN_EXE_mpitrace"), dir.display());
    let out = Command::new("tmux").args(["new-session", "-d", "-s", &s.0, "-x", "100", "-y", "30", &cmd]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    s.wait_for("r3");
    s.keys(&["C-c"]);
    let after = s.wait_for("mpitrace-exited-");
    assert!(!after.contains("Allreduce") && !after.contains("r3"), "the terminal is restored:\n{after}");
    let _ = std::fs::remove_dir_all(&dir);
}

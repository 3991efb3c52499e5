//! `mpitrace top` in a real terminal (tmux) on a running 8-rank job: the
//! screen shows every rank's call and changes from one refresh to the
//! next; `q` ends the view and the job runs on.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmux(server: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("tmux")
        .args(["-L", server])
        .args(args)
        .output()
        .expect("tmux is not installed (Debian package tmux)");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Kills the tmux server and the job on drop, so a failing test leaves
/// nothing running.
struct Cleanup {
    server: String,
    job: Option<std::process::Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = tmux(&self.server, &["kill-server"]);
        if let Some(j) = &mut self.job {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(j.id() as i32, libc::SIGTERM) };
            let _ = j.wait();
        }
    }
}

#[test]
fn top_shows_a_running_job_and_quits_leaving_it_running() {
    let bin = Path::new(env!("CARGO_BIN_EXE_mpitrace"));
    let dir = bin.parent().unwrap().parent().unwrap().join("mpitrace-tests").join("top-tmux");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "-q", "-p", "pmpi-shim"]);
    assert!(cargo.status().unwrap().success());
    let exe = dir.join("endless");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/endless.c");
    let st = Command::new("mpicc.mpich")
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O1", "-g"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status();
    assert!(st.is_ok_and(|s| s.success()), "compiling endless.c failed (Debian package mpich)");
    let trace: PathBuf = dir.join("trace");
    let job = Command::new(bin)
        .args(["record", "-o"])
        .arg(&trace)
        .args(["--", "mpiexec.mpich", "-n", "8"])
        .arg(&exe)
        .arg("top-tmux-marker")
        .env_remove("LD_LIBRARY_PATH")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = format!("mpitrace-top-{}", std::process::id());
    let mut c = Cleanup { server: server.clone(), job: Some(job) };
    let out = c.job.as_mut().unwrap().stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the job did not start");
    let cmd = format!("{} top {}", bin.display(), trace.display());
    let (ok, _) = tmux(&server, &["new-session", "-d", "-s", "top", "-x", "150", "-y", "30", &cmd]);
    assert!(ok, "tmux new-session failed");
    let screen = || tmux(&server, &["capture-pane", "-p", "-t", "top"]).1;
    let t = Instant::now();
    let first = loop {
        let s = screen();
        if s.contains("8 ranks:") && s.contains("MPI_") {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "top never showed the job:\n{s}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // One line per rank, each naming its call (or the last one).
    for r in 0..8 {
        let row = first.lines().find(|l| l.split_whitespace().next() == Some(&r.to_string()));
        let row = row.unwrap_or_else(|| panic!("no line of rank {r}:\n{first}"));
        assert!(row.contains("MPI_Sendrecv") || row.contains("MPI_Barrier"), "{row}\n{first}");
    }
    // The next refreshes show new counts.
    let t = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let s = screen();
        if s != first && s.contains("8 ranks:") {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "the screen did not change:\n{s}");
    }
    tmux(&server, &["send-keys", "-t", "top", "q"]);
    let t = Instant::now();
    while tmux(&server, &["has-session", "-t", "top"]).0 {
        assert!(t.elapsed() < Duration::from_secs(10), "q did not end the view:\n{}", screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    // The job runs on: mpitrace record has not ended and the journals grow.
    let job = c.job.as_mut().unwrap();
    assert!(job.try_wait().unwrap().is_none(), "the job ended with the view");
    let size = || std::fs::metadata(trace.join("journal/rank-00000.side.jsonl")).map(|m| m.len()).unwrap_or(0);
    let before = size();
    let t = Instant::now();
    while size() == before {
        assert!(t.elapsed() < Duration::from_secs(10), "rank 0 stopped recording");
        std::thread::sleep(Duration::from_millis(200));
    }
}

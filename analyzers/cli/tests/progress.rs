//! Progress lines: drawn on a terminal (here a pseudo-terminal from
//! `script`), never into pipes or files.

use std::path::PathBuf;
use std::process::Command;

use analyzers::synth::{write_stencil, StencilParams};

fn trace(name: &str) -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_mpitrace"));
    let dir = exe.parent().unwrap().join("mpitrace-analyzer-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write_stencil(&dir, &StencilParams::for_events(8, 20_000)).unwrap();
    dir
}

#[test]
fn progress_is_drawn_on_a_terminal_only() {
    let dir = trace("progress");
    let exe = env!("CARGO_BIN_EXE_mpitrace");
    let out_file = dir.join("report.txt");
    let cmd = format!("{exe} report {} -o {}", dir.display(), out_file.display());
    // `script` runs the command on a pseudo-terminal; the threshold of one
    // second is lowered so that a small trace shows it.
    let out = Command::new("timeout")
        .args(["60", "script", "-qec", &cmd, "/dev/null"])
        .env("MPITRACE_PROGRESS_AFTER", "0")
        .output()
        .expect("script (util-linux) runs the command on a terminal");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(tty.contains("mpitrace: reading [") && tty.contains("] 8/8 ranks"), "{tty:?}");
    // The line is erased at the end, and the report itself went to the file.
    assert!(tty.trim_end().ends_with("\x1b[2K"), "{tty:?}");
    assert!(std::fs::read_to_string(&out_file).unwrap().contains("Wait states"));
    // Without a terminal: no progress line on standard error (only the
    // warnings of the trace's problems: its module is not on this machine).
    let plain = Command::new(exe)
        .args(["report", dir.to_str().unwrap(), "--format", "json"])
        .env("MPITRACE_PROGRESS_AFTER", "0")
        .output()
        .unwrap();
    assert!(plain.status.success());
    let stderr = String::from_utf8_lossy(&plain.stderr);
    assert!(stderr.lines().all(|l| l.starts_with("mpitrace: warning: ")), "{stderr}");
    assert!(!stderr.contains("reading") && !stderr.contains('\x1b'), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! Smoke test of the real program: `mpitrace gui DIR` in a window on
//! Xvfb (rendered by wgpu on Mesa's lavapipe), screenshot with `xwd`, and
//! the screenshot must show the trace's calls. Needs the `mpitrace`
//! binary built (`cargo build --workspace`, as `tests/run-all.sh` does)
//! and Debian's `xvfb` and `x11-apps`; without them the test says so and
//! passes. The screenshot is saved as `target/gui-smoke.png`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

fn on_path(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Decodes an XWD dump of a 24/32-bit screen into RGB rows.
fn decode_xwd(d: &[u8]) -> Option<(usize, usize, Vec<[u8; 3]>)> {
    let f = |i: usize| d.get(4 * i..4 * i + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let (hs, w, h, lsb, bpp, bpl, ncol) = (f(0)?, f(4)?, f(5)?, f(7)? == 0, f(11)?, f(12)?, f(19)?);
    if bpp != 32 {
        return None;
    }
    let off = hs + ncol * 12;
    let mut px = Vec::with_capacity(w * h);
    for y in 0..h {
        let row = d.get(off + y * bpl..off + y * bpl + 4 * w)?;
        px.extend(row.chunks_exact(4).map(|p| if lsb { [p[2], p[1], p[0]] } else { [p[1], p[2], p[3]] }));
    }
    Some((w, h, px))
}

#[test]
fn the_real_program_shows_a_trace_on_xvfb() {
    let bin = ["debug", "release"].iter().map(|p| target_dir().join(p).join("mpitrace")).find(|p| p.exists());
    let Some(bin) = bin else {
        panic!("no mpitrace binary (cargo build --workspace first)");
    };
    if !on_path("Xvfb") || !on_path("xwd") {
        panic!("Xvfb or xwd missing (apt-get install xvfb x11-apps; tests/run-all.sh installs them)");
    }
    let display = format!(":{}", 100 + std::process::id() % 800);
    let _x = Killed(
        Command::new("Xvfb")
            .args([display.as_str(), "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb"),
    );
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{}", &display[1..]));
    let t = Instant::now();
    while !socket.exists() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir = common::small_dir("smoke");
    let log = dir.join("gui.log");
    let _app = Killed(
        Command::new(&bin)
            .args(["gui".as_ref(), dir.as_os_str()])
            .env("DISPLAY", &display)
            .env_remove("WAYLAND_DISPLAY")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("mpitrace gui"),
    );
    // The colours of MPI_Send (blue) and MPI_Allreduce (orange) bars.
    let want = [[66u8, 133, 244], [244, 160, 0]];
    let t = Instant::now();
    let mut last = None;
    while t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
        let out = Command::new("xwd").args(["-root", "-silent", "-display", display.as_str()]).output().expect("xwd");
        let Some((w, h, px)) = decode_xwd(&out.stdout) else { continue };
        let found = want.map(|c| px.iter().filter(|p| **p == c).count());
        last = Some((w, h, px, found));
        if found.iter().all(|&n| n > 100) {
            break;
        }
    }
    let (w, h, px, found) = last.expect("no screenshot");
    let img = image::RgbImage::from_fn(w as u32, h as u32, |x, y| image::Rgb(px[y as usize * w + x as usize]));
    let shot = target_dir().join("gui-smoke.png");
    img.save(&shot).expect("save screenshot");
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        found.iter().all(|&n| n > 100),
        "the window does not show the trace (pixels of Send, Allreduce: {found:?}); screenshot {}; stderr:\n{stderr}",
        shot.display()
    );
}

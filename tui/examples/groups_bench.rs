//! Frame time with folded groups: `groups_bench [RANKS] [PER_HOST] [CALLS]`
//! (defaults 8192 ranks, 128 per host, 2000 calls per rank). The ranks of
//! a host fold into rows of at most `tui::app::MAX_GROUP` ranks, each drawn
//! from its member ranks' queries. Prints wall time and the thread's CPU
//! time per frame (the CPU time is what a loaded machine does not distort).

use std::time::Instant;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use trace_lod::{Lod, RawCall};
use tui::view::View;
use tui::App;

/// CPU time of this thread, seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the valid timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (ranks, per_host, calls) = (
        args.first().copied().unwrap_or(8192),
        args.get(1).copied().unwrap_or(128),
        args.get(2).copied().unwrap_or(2000),
    );
    let names = ["MPI_Send", "MPI_Recv", "MPI_Allreduce"].map(String::from).to_vec();
    let t = Instant::now();
    let data = (0..ranks as i32)
        .map(|r| {
            let c = (0..calls as i64)
                .map(|k| {
                    let t0 = k * 1000 + (r as i64 * 37) % 300;
                    RawCall {
                        t_start: t0,
                        t_end: t0 + 200 + (k * 13 + r as i64) % 500,
                        name: (k % 3) as u16,
                        flags: 0,
                        bytes: 8,
                    }
                })
                .collect();
            (r, c)
        })
        .collect();
    let mut lod = Lod::from_calls(names, data);
    for (i, r) in lod.ranks.iter_mut().enumerate() {
        r.host = Some(format!("node{:03}", i / per_host));
    }
    println!("{ranks} ranks x {calls} calls built in {:.1} s", t.elapsed().as_secs_f64());
    let mut app = App::with(lod, None);
    let (lo, hi) = app.lod.as_ref().map(|l| l.span()).unwrap_or((0, 1));
    println!("{} groups, folded: {}", app.groups.len(), app.groups.iter().all(|g| g.folded));
    println!("{:>12} {:>18} {:>18}", "span", "80x24 ms (cpu)", "200x60 ms (cpu)");
    for z in [1i64, 10, 100, 1000] {
        let span = (hi - lo) / z;
        let mut row = Vec::new();
        for (w, h) in [(80u16, 24u16), (200, 60)] {
            app.size = (w, h);
            let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
            let frames = 10;
            let (t, cpu) = (Instant::now(), thread_cpu());
            for k in 0..frames {
                app.view = View::new(lo + k * span / 50, lo + k * span / 50 + span);
                term.draw(|f| tui::ui::draw(f, &app)).expect("draw");
            }
            let per = |x: f64| x * 1e3 / frames as f64;
            row.push(format!("{:.2} ({:.2})", per(t.elapsed().as_secs_f64()), per(thread_cpu() - cpu)));
        }
        println!("{:>12} {:>18} {:>18}", tui::view::fmt_dur(span), row[0], row[1]);
    }
}

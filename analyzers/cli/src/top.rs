//! `mpitrace top DIR` (and `mpitrace record --live`): a live view of a
//! running job from its journals, refreshed every second.
//!
//! Per rank: the call it is in and for how long, its peer, root and
//! communicator, the call site, its share of time in MPI over the last
//! interval and the messages it sent and received; ranks stuck longest
//! first. The state comes from `analyzers::live` (files read, nothing
//! written, no signal sent: the job is never disturbed); the diagnosis of
//! a hang (`hang.json`, written by `record --hang-after`) is shown when
//! there is one. `t` opens the trace so far in the timeline browser
//! (`mpitrace tui`) on its last five minutes (`f` there fits the whole
//! run), `q` leaves (the job runs on).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use analyzers::live::Live;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

/// How much of a running job `t` shows: its last minutes (the timeline's
/// fit key `f` shows the whole run).
pub const TIMELINE_LAST_NS: i64 = 5 * 60 * 1_000_000_000;

/// How often the view reads the journals again.
pub const REFRESH: Duration = Duration::from_secs(1);

/// One rank's line.
#[derive(Clone, Debug, PartialEq)]
pub struct RankLine {
    pub rank: i32,
    /// `in MPI`, `polling`, `computing`, `finished`, `dead`...
    pub state: String,
    /// The call with peer/root/communicator (`MPI_Recv(from 1, tag 7)`), or
    /// the last call for a rank outside MPI.
    pub call: String,
    /// Seconds in the call (or outside MPI since the last call).
    pub for_s: Option<f64>,
    pub site: String,
    /// Share of the last interval spent in MPI (0..1).
    pub mpi_share: Option<f64>,
    pub sent: u64,
    pub received: u64,
}

/// The view's model: what the journals say, refreshed by [`Top::refresh`].
pub struct Top {
    pub dir: PathBuf,
    live: Live,
    /// Per rank at the previous refresh: time in finished calls (ns).
    prev: HashMap<i32, i64>,
    last: Option<Instant>,
    pub lines: Vec<RankLine>,
    /// Messages sent and not yet received, over all pairs.
    pub in_flight: u64,
    /// The pairs (sender, receiver, count) with most messages in flight.
    pub unmatched: Vec<(i32, i32, u64)>,
    /// The hang report of `record --hang-after`, if there is one.
    pub hang: Option<Vec<String>>,
    pub size: usize,
}

impl Top {
    pub fn new(dir: &Path) -> Top {
        Top {
            dir: dir.to_path_buf(),
            live: Live::new(dir),
            prev: HashMap::new(),
            last: None,
            lines: Vec::new(),
            in_flight: 0,
            unmatched: Vec::new(),
            hang: None,
            size: 0,
        }
    }

    /// Reads what the job wrote since the last refresh.
    pub fn refresh(&mut self) {
        let now = Instant::now();
        let dt = self.last.map(|l| (now - l).as_nanos() as i64).filter(|&d| d > 0);
        self.last = Some(now);
        self.live.look();
        let rep = self.live.diagnose(None);
        self.size = rep.ranks.len();
        let mut lines = Vec::new();
        for r in &rep.ranks {
            let track = self.live.ranks.get(&r.rank).map(|l| &l.track);
            let mpi_ns = track.map_or(0, |t| t.mpi_ns);
            let before = self.prev.insert(r.rank, mpi_ns);
            let in_call = r.call.as_ref().and_then(|c| c.since_s).filter(|_| r.state == "in_mpi");
            let share = dt.zip(before).map(|(dt, b)| {
                let current = in_call.map_or(0, |s| ((s * 1e9) as i64).min(dt));
                ((mpi_ns - b + current) as f64 / dt as f64).clamp(0.0, 1.0)
            });
            let (call, site, for_s) = match (&r.call, r.state.as_str()) {
                (Some(c), "in_mpi" | "polling" | "dead") => {
                    (c.describe.clone(), c.site.clone().unwrap_or_default(), c.since_s)
                }
                _ => (
                    r.last_call.clone().map(|c| format!("after {c}")).unwrap_or_default(),
                    r.last_site.clone().unwrap_or_default(),
                    r.idle_s,
                ),
            };
            let state = match r.state.as_str() {
                "in_mpi" => "in MPI".to_string(),
                "not_started" => "starting".to_string(),
                s => s.to_string(),
            };
            lines.push(RankLine {
                rank: r.rank,
                state,
                call,
                for_s,
                site,
                mpi_share: share,
                sent: track.map_or(0, |t| t.sent.values().sum()),
                received: track.map_or(0, |t| t.received.values().sum()),
            });
        }
        // Stuck longest first: ranks in MPI by time in their call, then
        // the others by rank.
        lines.sort_by(|a, b| {
            let key = |l: &RankLine| if l.state == "in MPI" || l.state == "polling" { l.for_s } else { None };
            match (key(a), key(b)) {
                (Some(x), Some(y)) => y.total_cmp(&x).then(a.rank.cmp(&b.rank)),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.rank.cmp(&b.rank),
            }
        });
        self.lines = lines;
        let mut pairs = Vec::new();
        for (s, l) in &self.live.ranks {
            for (&d, &n) in &l.track.sent {
                let got = self.live.ranks.get(&d).and_then(|x| x.track.received.get(s)).copied().unwrap_or(0);
                if n > got {
                    pairs.push((*s, d, n - got));
                }
            }
        }
        self.in_flight = pairs.iter().map(|p| p.2).sum();
        pairs.sort_by_key(|p| std::cmp::Reverse(p.2));
        pairs.truncate(6);
        self.unmatched = pairs;
        self.hang = std::fs::read(self.dir.join(crate::watch::HANG_JSON))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .map(|v| {
                v["findings"].as_array().into_iter().flatten().filter_map(|f| f.as_str().map(String::from)).collect()
            });
    }
}

/// Draws the view.
pub fn draw(f: &mut Frame, t: &Top) {
    let count = |s: &str| t.lines.iter().filter(|l| l.state == s).count();
    let head = format!(
        "mpitrace top {} | {} ranks: {} in MPI, {} polling, {} computing, {} finished, {} dead{} | messages in flight: {}",
        t.dir.display(),
        t.size,
        count("in MPI"),
        count("polling"),
        count("computing"),
        count("finished"),
        count("dead"),
        // Not in MPI on a machine whose processes cannot be checked from
        // here: computing, or dead.
        match count("unknown") {
            0 => String::new(),
            n => format!(", {n} unknown"),
        },
        t.in_flight
    );
    let hang_lines = t.hang.as_ref().map_or(0, |h| h.len().min(4) as u16 + 1);
    let [top, body, unmatched, hang, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(hang_lines),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(Paragraph::new(head).style(Style::new().add_modifier(Modifier::BOLD)), top);
    let header = Row::new(["rank", "state", "call", "for", "site", "MPI", "sent", "recv"])
        .style(Style::new().add_modifier(Modifier::REVERSED));
    let rows = t.lines.iter().map(|l| {
        let colour = match l.state.as_str() {
            "in MPI" if l.for_s.is_some_and(|s| s >= 5.0) => Color::Red,
            "in MPI" | "polling" => Color::Yellow,
            "dead" => Color::Red,
            "finished" => Color::DarkGray,
            _ => Color::Reset,
        };
        Row::new(vec![
            Cell::from(l.rank.to_string()),
            Cell::from(l.state.clone()),
            Cell::from(l.call.clone()),
            Cell::from(l.for_s.map(|s| format!("{s:.1} s")).unwrap_or_default()),
            Cell::from(l.site.rsplit('/').next().unwrap_or("").to_string()),
            Cell::from(l.mpi_share.map(|s| format!("{:.0}%", s * 100.0)).unwrap_or_default()),
            Cell::from(l.sent.to_string()),
            Cell::from(l.received.to_string()),
        ])
        .style(Style::new().fg(colour))
    });
    let widths = [
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Fill(3),
        Constraint::Length(8),
        Constraint::Fill(2),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    f.render_widget(Table::new(rows, widths).header(header), body);
    let pairs: Vec<String> = t.unmatched.iter().map(|(s, d, n)| format!("{s}->{d}: {n}")).collect();
    let text = if pairs.is_empty() {
        "no message waits to be received".to_string()
    } else {
        format!("sent, not yet received: {}", pairs.join("  "))
    };
    f.render_widget(Paragraph::new(text), unmatched);
    if let Some(h) = &t.hang {
        let mut lines =
            vec![Line::styled("hang (hang.json):", Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))];
        lines.extend(h.iter().take(4).map(|s| Line::raw(s.clone())));
        f.render_widget(Paragraph::new(lines), hang);
    }
    f.render_widget(
        Paragraph::new(format!("q quit (the job runs on)  t timeline so far  refreshed every {} s", REFRESH.as_secs()))
            .style(Style::new().fg(Color::DarkGray)),
        keys,
    );
}

/// What ended the view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// `q`, Esc or Ctrl-C.
    Quit,
    /// `ended` was set (the job ended, under `record --live`).
    JobEnded,
}

/// Runs the view in the terminal until `q` (or `ended` becomes true).
pub fn run(dir: &Path, ended: Option<&AtomicBool>) -> anyhow::Result<Ended> {
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    let mut top = Top::new(dir);
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> anyhow::Result<Ended> {
        let mut next = Instant::now();
        loop {
            if ended.is_some_and(|e| e.load(Ordering::Relaxed)) {
                return Ok(Ended::JobEnded);
            }
            if Instant::now() >= next {
                top.refresh();
                terminal.draw(|f| draw(f, &top))?;
                next = Instant::now() + REFRESH;
            }
            // Short polls, so that the end of the job is seen quickly.
            if !event::poll(next.saturating_duration_since(Instant::now()).min(Duration::from_millis(200)))? {
                continue;
            }
            let Event::Key(k) = event::read()? else {
                terminal.draw(|f| draw(f, &top))?;
                continue;
            };
            if k.kind != KeyEventKind::Press {
                continue;
            }
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(Ended::Quit),
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => return Ok(Ended::Quit),
                KeyCode::Char('t') => {
                    // The timeline browser takes the terminal itself, and
                    // reads the journals as those of a crashed run.
                    ratatui::restore();
                    let r = tui::run_last(dir, Some(TIMELINE_LAST_NS));
                    terminal = ratatui::try_init()?;
                    terminal.clear()?;
                    r?;
                    next = Instant::now();
                }
                _ => {}
            }
        }
    })();
    ratatui::restore();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use analyzers::synth::SynthTrace;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(t: &Top) -> String {
        let mut term = Terminal::new(TestBackend::new(150, 14)).unwrap();
        term.draw(|f| draw(f, t)).unwrap();
        let buf = term.backend().buffer().clone();
        let mut s = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                s.push_str(buf[(x, y)].symbol());
            }
            s.push('\n');
        }
        s
    }

    #[test]
    fn shows_each_ranks_call_stuck_longest_first() {
        let dir = std::env::temp_dir().join(format!("mpitrace-top-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut t = SynthTrace::new(3);
        // Times in ns; nobody finalized.
        t.crashed = vec![0, 1, 2];
        t.send(0, 2, 4, 8, 1_500_000_000, 1_600_000_000, 0x80);
        t.recv(1, 0, 7, 4, 3_000_000_000, 3_000_000_001, 0x200);
        t.ranks[1].last_mut().unwrap().t_end = None;
        t.ranks[1].last_mut().unwrap().flags = 0;
        t.coll(2, "MPI_Bcast", 1_000_000_000, 1_000_000_001, 0x300, 8, Some(0));
        t.ranks[2].last_mut().unwrap().t_end = None;
        t.ranks[2].last_mut().unwrap().flags = 0;
        t.write_journals(&dir, false).unwrap();
        let mut top = Top::new(&dir);
        top.refresh();
        let s = screen(&top);
        // Rank 0 is not in MPI, on a machine ("synthetic") whose processes
        // cannot be checked from here: computing, or dead.
        assert!(s.contains("3 ranks: 2 in MPI, 0 polling, 0 computing, 0 finished, 0 dead, 1 unknown"), "{s}");
        assert!(s.contains("messages in flight: 1"), "{s}");
        assert!(s.contains("0->2: 1"), "{s}");
        // Rank 2 has been in its broadcast longest (2 s before the latest
        // time recorded), then rank 1; then rank 0.
        assert!(s.contains("2.0 s") && s.contains("1.4 s"), "{s}");
        let r2 = s.find("MPI_Bcast(root 0)").unwrap();
        let r1 = s.find("MPI_Recv(from 0, tag 7)").unwrap();
        let r0 = s.find("after MPI_Send").unwrap();
        assert!(r2 < r1 && r1 < r0, "{s}");
        assert_eq!(top.lines.iter().map(|l| l.rank).collect::<Vec<_>>(), vec![2, 1, 0]);
        // A hang report in the folder is shown.
        std::fs::write(dir.join("hang.json"), r#"{"findings":["rank 1 waits in MPI_Recv(from 0, tag 7) for rank 0"]}"#)
            .unwrap();
        top.refresh();
        assert!(screen(&top).contains("rank 1 waits in MPI_Recv(from 0, tag 7) for rank 0"));
    }
}

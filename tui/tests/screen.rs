//! The viewer driven through ratatui's TestBackend: what the screen shows.

mod common;
use common::*;

use ratatui::crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::style::Modifier;
use tui::ui::colors;
use tui::view::View;

/// Column of the first `ch` in a line (in characters).
fn col(line: &str, ch: char) -> Option<usize> {
    line.chars().position(|c| c == ch)
}

#[test]
fn opens_a_small_trace() {
    let dir = tmpdir("small");
    small_trace(&dir);
    let mut app = open(&dir, 80, 24);
    let buf = render(&mut app);
    let lines = text(&buf);
    println!("{}", lines.join("\n"));
    assert!(lines[0].contains("4 ranks, 16 calls"), "{}", lines[0]);
    // Axis with units.
    for l in ["0µs", "20µs", "40µs", "60µs", "80µs"] {
        assert!(lines[1].contains(l), "axis: {}", lines[1]);
    }
    let (r0, r1, r2, r3) = (row_of(&lines, "r0"), row_of(&lines, "r1"), row_of(&lines, "r2"), row_of(&lines, "r3"));
    assert_eq!((r1, r2, r3), (r0 + 1, r0 + 2, r0 + 3));
    for r in [r0, r1, r2] {
        assert!(lines[r].contains("Allreduce"), "{}", lines[r]);
    }
    assert!(lines[r2].contains("Recv"));
    // The Allreduce label is drawn in the collective colour, reversed.
    let x = lines[r0].find("Allreduce").map(|b| lines[r0][..b].chars().count()).unwrap() as u16;
    let cell = &buf[(x, r0 as u16)];
    assert_eq!(cell.fg, colors::COLLECTIVE);
    assert!(cell.modifier.contains(Modifier::REVERSED));
    // The status line says what is in view.
    assert!(lines[23].starts_with("-1µs – 102µs (103µs) │ r0 @ 0µs"), "{}", lines[23]);
    assert!(lines[23].ends_with("? help"));
    // Details of the call under the cursor (MPI_Init of rank 0).
    assert!(lines.iter().any(|l| l.contains("MPI_Init  rank 0  at 0µs  for 1.00µs")));
}

#[test]
fn message_lines_join_sender_and_receiver() {
    let dir = tmpdir("lines");
    small_trace(&dir);
    let mut app = open(&dir, 80, 24);
    app.view = View::new(0, 25_000);
    let lines = screen(&mut app);
    let (r0, r1, r2, r3) = (row_of(&lines, "r0"), row_of(&lines, "r1"), row_of(&lines, "r2"), row_of(&lines, "r3"));
    let lw = app.label_width() as usize;
    let n = 80 - lw;
    // Send posted at 10 µs on rank 0, received at 20 µs on rank 2.
    let (xs, xr) = (lw + 10_000 * n / 25_000, lw + 20_000 * n / 25_000);
    assert_eq!(col(&lines[r0], '•'), Some(xs), "{}", lines[r0]);
    assert_eq!(col(&lines[r2], '▸'), Some(xr), "{}", lines[r2]);
    let mid = col(&lines[r1], '╲').expect("the line crosses rank 1");
    assert!(mid > xs && mid < xr);
    assert!(!lines[r3].contains(['•', '▸', '╲']));
    // Zoomed out to the whole run both messages are drawn.
    key(&mut app, '0');
    let lines = screen(&mut app);
    assert!(lines[r1].contains('•') && lines[r3].contains('▸'));
}

#[test]
fn zoom_and_pan_change_the_range_and_axis() {
    let dir = tmpdir("zoom");
    small_trace(&dir);
    let mut app = open(&dir, 80, 24);
    app.cursor_t = 50_000;
    key(&mut app, '+');
    key(&mut app, '+');
    let v = app.view;
    assert!((v.span() - 103_060 / 4).abs() < 20, "{v:?}");
    assert!(v.t0 < 50_000 && v.t1 > 50_000);
    let lines = screen(&mut app);
    assert!(lines[23].starts_with("37.2µs – 63.0µs (25.8µs) │ r0 @ 50.0µs"), "{}", lines[23]);
    assert!(lines[1].contains("40µs") && lines[1].contains("60µs") && !lines[1].contains("20µs"), "{}", lines[1]);
    // Pan right by a quarter screen.
    key(&mut app, 'L');
    assert!((app.view.t0 - (v.t0 + v.span() / 4)).abs() < 2);
    let lines = screen(&mut app);
    assert!(lines[23].starts_with("43.7µs – 69.4µs"), "{}", lines[23]);
    // Finer zoom: labels in smaller steps.
    for _ in 0..6 {
        key(&mut app, 'i');
    }
    let lines = screen(&mut app);
    assert!(lines[1].contains(".") && lines[1].contains("µs"), "{}", lines[1]);
    // Fit brings everything back.
    key(&mut app, 'f');
    assert!(screen(&mut app)[23].starts_with("-1µs – 102µs"));
    // Mark, move, zoom to the selection.
    app.cursor_t = 10_000;
    key(&mut app, 'm');
    for _ in 0..10 {
        code(&mut app, KeyCode::Right);
    }
    key(&mut app, 'z');
    assert!(app.view.t0 >= 9_000 && app.view.t0 <= 10_001 && app.view.span() < 20_000, "{:?}", app.view);
}

/// A trace with its level-of-detail cache (written at conversion): the
/// first frame is drawn from the cache's coarse levels, and the calls,
/// read afterwards, leave the view where the user put it.
#[test]
fn the_first_frame_comes_from_the_cache_and_the_calls_keep_the_view() {
    let dir = tmpdir("cache-first");
    small_trace(&dir);
    trace_lod::Lod::open(&dir, &trace_lod::Progress::default()).unwrap();
    assert!(dir.join("lod/rank-00003.lod").exists());
    let mut app = tui::App::open(&dir);
    app.size = (80, 24);
    assert!(app.wait_one(std::time::Duration::from_secs(60)));
    let lod = app.lod.as_ref().expect("the first level of detail");
    assert!(lod.cached && lod.ranks.iter().all(|r| r.data.is_coarse()));
    let lines = screen(&mut app);
    println!("{}", lines.join("\n"));
    assert!(lines[0].contains("4 ranks, 16 calls"), "{}", lines[0]);
    // Each rank's row shows its time in MPI.
    for r in ["r0", "r1", "r2", "r3"] {
        let line = &lines[row_of(&lines, r)];
        assert!(line.chars().skip(4).any(|c| "░▒▓█".contains(c)), "{line}");
    }
    // A search before the calls are in finds none...
    key(&mut app, '/');
    typed(&mut app, "send");
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.cursor_t, 0);
    let zoomed = View::new(10_000, 50_000);
    app.view = zoomed;
    app.wait_loaded();
    let lod = app.lod.as_ref().expect("loaded");
    assert!(lod.ranks.iter().all(|r| !r.data.is_coarse()) && lod.ranks[0].data.len() == 4);
    assert_eq!(app.view, zoomed);
    // ...and finds them once they are.
    key(&mut app, 'n');
    assert_eq!((app.cursor_row, app.cursor_t), (0, 10_000));
}

#[test]
fn show_last_opens_on_the_end_of_the_trace() {
    let dir = tmpdir("last");
    small_trace(&dir);
    // Asked before the trace has loaded, applied when it has.
    let mut app = tui::App::open(&dir);
    app.show_last(20_000);
    app.wait_loaded();
    app.size = (80, 24);
    let (lo, hi) = app.lod.as_ref().expect("loaded").span();
    assert!(hi - lo > 20_000, "{lo}..{hi}");
    assert_eq!((app.view.t0, app.cursor_t), (hi - 20_000, hi - 20_000), "{:?}", app.view);
    assert!(app.view.t1 >= hi && app.view.span() < 21_000, "{:?}", app.view);
    // The status line shows the range from the trace's start.
    let lines = screen(&mut app);
    assert!(lines[23].contains(" – ") && !lines[23].starts_with("-1µs"), "{}", lines[23]);
    // On a loaded trace at once; a window longer than the trace shows it all.
    let mut whole = open(&dir, 80, 24);
    let fit = whole.view;
    whole.show_last(hi - lo + 1);
    assert_eq!(whole.view, fit);
    whole.show_last(10_000);
    assert_eq!(whole.view.t0, hi - 10_000);
}

#[test]
fn mouse_zooms_pans_and_selects() {
    let dir = tmpdir("mouse");
    small_trace(&dir);
    let mut app = open(&dir, 80, 24);
    render(&mut app);
    let ev = |kind, column, row| MouseEvent { kind, column, row, modifiers: KeyModifiers::NONE };
    let before = app.view;
    app.on_mouse(ev(MouseEventKind::ScrollUp, 40, 3));
    assert!(app.view.span() < before.span());
    let zoomed = app.view;
    app.on_mouse(ev(MouseEventKind::Down(MouseButton::Left), 40, 3));
    app.on_mouse(ev(MouseEventKind::Drag(MouseButton::Left), 30, 3));
    app.on_mouse(ev(MouseEventKind::Up(MouseButton::Left), 30, 3));
    assert!(app.view.t0 > zoomed.t0, "dragging left shows later times");
    assert_eq!(app.view.span(), zoomed.span());
    key(&mut app, '0');
    app.on_mouse(ev(MouseEventKind::Down(MouseButton::Right), 20, 4));
    app.on_mouse(ev(MouseEventKind::Drag(MouseButton::Right), 40, 4));
    app.on_mouse(ev(MouseEventKind::Up(MouseButton::Right), 40, 4));
    assert!(app.view.span() < 40_000, "zoomed to the selection: {:?}", app.view);
    assert_eq!(app.cursor_row, 2, "clicked on rank 2 (screen row 4)");
}

#[test]
fn panels_show_the_analyses() {
    let dir = tmpdir("panels");
    small_trace(&dir);
    let mut app = open(&dir, 100, 30);
    key(&mut app, '2');
    let lines = screen(&mut app);
    let all = lines.join("\n");
    assert!(all.contains("sorted by time ▼"));
    let ar = lines.iter().find(|l| l.starts_with("MPI_Allreduce")).expect("profile row");
    assert!(ar.split_whitespace().nth(1) == Some("4"), "{ar}");
    // Sort by calls, then by name.
    key(&mut app, 's');
    assert!(screen(&mut app).join("\n").contains("sorted by calls ▼"));
    key(&mut app, 's');
    key(&mut app, 's');
    let lines = screen(&mut app);
    let first = lines.iter().position(|l| l.starts_with("MPI_Allreduce")).unwrap();
    let last = lines.iter().position(|l| l.starts_with("MPI_Send")).unwrap();
    assert!(first < last, "by name ascending");

    key(&mut app, '3');
    let all = screen(&mut app).join("\n");
    assert!(all.contains("1 instances"), "{all}");
    let row = all.lines().find(|l| l.starts_with("MPI_Allreduce")).expect("collective row");
    assert!(row.contains("WORLD") && row.contains("30.0µs") && row.contains("r3 100%"), "{row}");

    key(&mut app, '4');
    let all = screen(&mut app).join("\n");
    let ls = all.lines().find(|l| l.starts_with("Late Sender")).expect("late sender row");
    assert!(ls.contains("5.00µs") && ls.contains("r2 5.00µs") && ls.contains("r0 5.00µs"), "{ls}");
    assert!(all.contains("1 late senders"));

    key(&mut app, '5');
    let all = screen(&mut app).join("\n");
    assert!(all.contains("0→2  8.0 KiB  1 msg") && all.contains("1→3  4.0 KiB  1 msg"), "{all}");
    let r0 = all.lines().find(|l| l.starts_with("r0 ·")).unwrap();
    assert!(r0.starts_with("r0 · · ██·"), "{r0}");

    key(&mut app, '6');
    let all = screen(&mut app).join("\n");
    assert!(all.contains("16 calls over") && all.contains("level of detail: built"), "{all}");
}

#[test]
fn details_show_the_matched_message() {
    let dir = tmpdir("details");
    small_trace(&dir);
    let mut app = open(&dir, 100, 30);
    code(&mut app, KeyCode::Down);
    code(&mut app, KeyCode::Down);
    app.cursor_t = 15_000;
    let all = screen(&mut app).join("\n");
    assert!(all.contains("MPI_Recv  rank 2  at 5"), "{all}");
    assert!(all.contains("recv from 0 tag 5 8.0 KiB comm WORLD seq 1 ← sent by rank 0 in MPI_Send"), "{all}");
    assert!(all.contains("late sender: waited 5.00µs for rank 0"));
    // g goes to the sender.
    key(&mut app, 'g');
    assert_eq!(app.cursor_row, 0);
    assert_eq!(app.cursor_t, 10_000);
    let all = screen(&mut app).join("\n");
    assert!(all.contains("send to 2 tag 5 8.0 KiB comm WORLD seq 1 → received by rank 2 in MPI_Recv"), "{all}");
    // On the Allreduce: the instance, and its members underlined on every rank.
    app.cursor_t = 60_000;
    let buf = render(&mut app);
    let lines = text(&buf);
    let all = lines.join("\n");
    assert!(
        all.contains("MPI_Allreduce #1 on WORLD: 4/4 ranks, 8 B each, arrival spread 30.0µs, rank 3 last"),
        "{all}"
    );
    assert!(all.contains("this rank waited 30.0µs for rank 3"), "{all}");
    let r3 = row_of(&lines, "r3") as u16;
    let lw = app.label_width();
    let x = lw + ((80_500 - app.view.t0) * (100 - lw as i64) / app.view.span()) as u16;
    assert!(buf[(x, r3)].modifier.contains(Modifier::UNDERLINED), "rank 3's part of the instance");
}

#[test]
fn search_finds_calls() {
    let dir = tmpdir("search");
    small_trace(&dir);
    let mut app = open(&dir, 80, 24);
    key(&mut app, '/');
    typed(&mut app, "send");
    assert!(screen(&mut app)[23].starts_with("/send"));
    code(&mut app, KeyCode::Enter);
    assert_eq!((app.cursor_row, app.cursor_t), (0, 10_000));
    assert!(screen(&mut app)[0].contains("MPI_Send on rank 0 at 10"), "title");
    key(&mut app, 'n');
    assert_eq!((app.cursor_row, app.cursor_t), (1, 40_000));
    key(&mut app, 'n');
    assert!(app.message.as_deref().unwrap_or("").contains("no later match"));
    key(&mut app, 'N');
    assert_eq!((app.cursor_row, app.cursor_t), (0, 10_000));
    // Rank range and duration; filtered rows are hidden.
    key(&mut app, '/');
    for _ in 0..4 {
        code(&mut app, KeyCode::Backspace);
    }
    typed(&mut app, "allreduce rank=2-3 dur>10us");
    code(&mut app, KeyCode::Enter);
    let lines = screen(&mut app);
    assert!(!lines.iter().any(|l| l.starts_with("r0 ")), "rank 0 hidden");
    assert_eq!(app.rows().len(), 2);
    assert!(lines[0].contains("MPI_Allreduce on rank 2 at 50"), "{}", lines[0]);
    // Communicator and tag (through the analyses).
    key(&mut app, '/');
    for _ in 0..40 {
        code(&mut app, KeyCode::Backspace);
    }
    app.cursor_t = 0;
    typed(&mut app, "comm=world tag=9");
    code(&mut app, KeyCode::Enter);
    assert!(app.message.as_deref().unwrap_or("").contains("MPI_Send on rank 1"), "{:?}", app.message);
    // A bad term says why.
    key(&mut app, '/');
    typed(&mut app, " foo=1");
    code(&mut app, KeyCode::Enter);
    assert!(app.message.as_deref().unwrap_or("").contains("foo=1"));
    code(&mut app, KeyCode::Esc);
    assert!(app.filter.is_empty() && app.rows().len() == 4);
}

/// Search over many blocks of calls: rare calls far from the cursor are
/// found in time order across ranks, forwards and backwards, and the index
/// rules out the blocks without them.
#[test]
fn search_skips_blocks_without_a_match() {
    use trace_lod::{Lod, RawCall};
    use tui::search::{Filter, SearchIndex, BLOCK};
    let n = 50_000;
    let names = ["MPI_Send", "MPI_Barrier", "MPI_Recv"].map(String::from).to_vec();
    let rank = |r: i32, special: &[(usize, u16, i64)]| {
        let calls = (0..n)
            .map(|k| {
                let (name, dur) = special.iter().find(|s| s.0 == k).map_or((0, 50), |s| (s.1, s.2));
                RawCall { t_start: k as i64 * 100, t_end: k as i64 * 100 + dur, name, flags: 0, bytes: 8 }
            })
            .collect();
        (r, calls)
    };
    let ranks = vec![rank(0, &[(45_000, 1, 50)]), rank(1, &[(40_000, 1, 50)]), rank(2, &[(10_000, 2, 5_000)])];
    let lod = Lod::from_calls(names, ranks);
    let index = SearchIndex::build(&lod);
    let barrier = Filter::parse("barrier").unwrap();
    let mask = index.mask(&lod, &barrier);
    let blocks = n.div_ceil(BLOCK);
    let may: usize = (0..3).map(|i| (0..blocks).filter(|&b| index.may_match(i, b, &mask, None)).count()).sum();
    assert_eq!(may, 2, "only the blocks holding a barrier");
    let long: usize = (0..3)
        .map(|i| {
            (0..blocks).filter(|&b| index.may_match(i, b, &index.mask(&lod, &Filter::default()), Some(1_000))).count()
        })
        .sum();
    assert_eq!(long, 1, "only the block of the long call");

    let mut app = tui::App::with(lod, None);
    app.size = (100, 30);
    key(&mut app, '/');
    typed(&mut app, "barrier");
    code(&mut app, KeyCode::Enter);
    assert_eq!((app.cursor_row, app.cursor_t), (1, 4_000_000), "{:?}", app.message);
    key(&mut app, 'n');
    assert_eq!((app.cursor_row, app.cursor_t), (0, 4_500_000), "{:?}", app.message);
    key(&mut app, 'n');
    assert!(app.message.as_deref().unwrap_or("").contains("no later match"), "{:?}", app.message);
    key(&mut app, 'N');
    assert_eq!((app.cursor_row, app.cursor_t), (1, 4_000_000), "{:?}", app.message);
    key(&mut app, 'N');
    assert!(app.message.as_deref().unwrap_or("").contains("no earlier match"), "{:?}", app.message);
    key(&mut app, '/');
    for _ in 0..7 {
        code(&mut app, KeyCode::Backspace);
    }
    typed(&mut app, "dur>1us");
    app.cursor_t = 0;
    code(&mut app, KeyCode::Enter);
    assert_eq!((app.cursor_row, app.cursor_t), (2, 1_000_000), "{:?}", app.message);
}

#[test]
fn jumps_to_late_senders_and_slow_collectives() {
    let dir = tmpdir("jumps");
    small_trace(&dir);
    let mut app = open(&dir, 80, 24);
    key(&mut app, 'w');
    assert_eq!((app.cursor_row, app.cursor_t), (2, 5_000));
    assert!(screen(&mut app)[0].contains("late sender: rank 2 waited 5.00µs in MPI_Recv for rank 0"));
    key(&mut app, 'w');
    assert!(app.message.as_deref().unwrap_or("").contains("no later late sender"));
    key(&mut app, 'c');
    assert_eq!((app.cursor_row, app.cursor_t), (3, 80_000));
    let status = screen(&mut app)[0].clone();
    assert!(
        status.contains("Allreduce #1 on WORLD: arrivals spread over 30.0µs, rank 3 last (1 slow of 1)"),
        "{status}"
    );
    key(&mut app, 'C');
    assert!(app.message.as_deref().unwrap_or("").contains("no earlier slow collective"));
}

#[test]
fn help_lists_every_key() {
    let dir = tmpdir("help");
    small_trace(&dir);
    let mut app = open(&dir, 160, 60);
    key(&mut app, '?');
    let all = screen(&mut app).join("\n");
    for b in tui::keys::BINDINGS {
        assert!(all.contains(b.label) && all.contains(b.help), "help lacks {} {}", b.label, b.help);
    }
    for (k, _) in tui::keys::MOUSE.iter().chain(tui::keys::SEARCH) {
        assert!(all.contains(k), "help lacks {k}");
    }
    // Any key closes it; at 80x24 it scrolls.
    key(&mut app, 'x');
    assert!(!app.help);
    app.size = (80, 24);
    key(&mut app, '?');
    let first = screen(&mut app);
    assert!(first.join("\n").contains("q  Ctrl-C"));
    for _ in 0..4 {
        code(&mut app, KeyCode::PageDown);
    }
    let later = screen(&mut app).join("\n");
    assert!(app.help && later.contains("Esc") && !later.contains("q  Ctrl-C"), "{later}");
}

#[test]
fn too_small_terminal_says_so() {
    let dir = tmpdir("small-term");
    small_trace(&dir);
    let mut app = open(&dir, 40, 10);
    let all = screen(&mut app).join("\n");
    assert!(all.contains("Terminal too small") && all.contains("40x10: need at least 60x16"), "{all}");
    app.size = (60, 16);
    assert!(screen(&mut app).join("\n").contains("r3"));
}

#[test]
fn corrupt_rank_file_opens_the_rest_and_says_what_is_missing() {
    let dir = tmpdir("corrupt");
    small_trace(&dir);
    std::fs::write(trace_format::layout::events(&dir, 1), b"PAR1 this is not parquet").unwrap();
    let mut app = open(&dir, 100, 30);
    let lines = screen(&mut app);
    let all = lines.join("\n");
    assert!(lines[0].contains("1 incomplete") && lines[0].contains("problems (6)"), "{}", lines[0]);
    assert!(lines.iter().any(|l| l.starts_with("r1?")), "rank 1 marked missing");
    assert!(lines[row_of(&lines, "r0")].contains("Allreduce"));
    assert!(all.contains("rank 1: missing") && all.contains("rank-00001.parquet"), "info panel: {all}");
}

#[test]
fn not_a_trace_says_so() {
    let dir = tmpdir("nothing");
    let mut app = open(&dir, 80, 24);
    let all = screen(&mut app).join("\n");
    assert!(all.contains("Cannot open the trace") && all.contains("not a trace directory"), "{all}");
    key(&mut app, 'q');
    assert!(app.quit);
}

#[test]
fn crashed_run_journals_open() {
    use trace_format::journal::{ClockKind, JournalHeader, JournalWriter};
    use trace_format::record::{flags, head, Kind, Record};
    let dir = tmpdir("crashed");
    std::fs::create_dir_all(dir.join("journal")).unwrap();
    let names = trace_format::events::call_names();
    let id = |n: &str| names.iter().position(|x| *x == n).unwrap() as u16;
    for rank in 0..2 {
        let hdr =
            JournalHeader { clock: ClockKind::MonotonicNs, pid: 1, thread: 0, rank, table_len: names.len() as u32 };
        let mut w = JournalWriter::create(&trace_format::layout::journal(&dir, rank, 0), hdr).unwrap();
        let rec = |call: &str, t0: u64, t1: u64, done: bool| Record {
            head: head(id(call), Kind::Call, if done { flags::DONE } else { 0 }),
            t_enter: t0,
            t_exit: t1,
            ..Default::default()
        };
        w.append(&rec("MPI_Init", 1000, 2000, true)).unwrap();
        w.append(&rec("MPI_Barrier", 3000, 40_000, true)).unwrap();
        w.append(&rec("MPI_Recv", 50_000, 0, rank == 1)).unwrap();
    }
    let mut app = open(&dir, 100, 30);
    let lines = screen(&mut app);
    let all = lines.join("\n");
    assert!(lines.iter().any(|l| l.starts_with("r0!")) && lines.iter().any(|l| l.starts_with("r1!")), "{all}");
    assert!(all.contains("Barrier"), "{all}");
    assert!(all.contains("did not finalize"), "{all}");
}

#[test]
fn many_ranks_scroll_and_fold() {
    let dir = tmpdir("fold");
    let mut t = analyzers::synth::SynthTrace::new(40);
    for r in 0..40 {
        t.coll(r, "MPI_Barrier", 2_000 + r as i64 * 100, 10_000, 0x60, 0, None);
    }
    t.finalize(20_000);
    t.write(&dir).unwrap();
    let mut app = open(&dir, 80, 24);
    assert_eq!(app.groups.len(), 3, "blocks of 16");
    let lines = screen(&mut app);
    assert!(lines.iter().any(|l| l.starts_with("r0 ")) && !lines.iter().any(|l| l.starts_with("r39")));
    code(&mut app, KeyCode::PageDown);
    code(&mut app, KeyCode::PageDown);
    code(&mut app, KeyCode::PageDown);
    let lines = screen(&mut app);
    assert!(lines.iter().any(|l| l.starts_with("r39")), "scrolled to the end");
    code(&mut app, KeyCode::Enter);
    let lines = screen(&mut app);
    assert!(lines.iter().any(|l| l.starts_with("▸32-39")), "{}", lines.join("\n"));
    key(&mut app, 'F');
    let lines = screen(&mut app);
    for g in ["▸0-15", "▸16-31", "▸32-39"] {
        assert!(lines.iter().any(|l| l.starts_with(g)), "{g}");
    }
    assert_eq!(app.rows().len(), 3);
    let r = row_of(&lines, "▸0-15");
    assert!(lines[r].contains("Barrier") || lines[r].contains('█'), "{}", lines[r]);
    key(&mut app, 'F');
    assert_eq!(app.rows().len(), 40);
}

/// User regions: a band above each rank's calls, the innermost region per
/// column in its colour with its name where it fits; `r` hides it; the
/// details say which regions the call under the cursor runs in.
#[test]
fn user_regions_band_above_the_calls() {
    let dir = tmpdir("regions");
    regions_trace(&dir);
    let mut app = open(&dir, 80, 30);
    app.view = View::new(0, 100_000);
    let buf = render(&mut app);
    let lines = text(&buf);
    println!("{}", lines.join("\n"));
    let (r0, r1, r2, r3) = (row_of(&lines, "r0"), row_of(&lines, "r1"), row_of(&lines, "r2"), row_of(&lines, "r3"));
    assert_eq!((r1, r2, r3), (r0 + 2, r0 + 4, r0 + 6), "two lines per rank: the band, then the calls");
    let lw = app.label_width() as usize;
    let n = 80 - lw;
    let col = |t: i64| app.view.col_of(t, n) as usize;
    let band = |row: usize| -> Vec<(char, ratatui::style::Color, bool)> {
        (0..n)
            .map(|x| {
                let c = &buf[((lw + x) as u16, (row - 1) as u16)];
                (c.symbol().chars().next().unwrap(), c.fg, c.modifier.contains(Modifier::REVERSED))
            })
            .collect()
    };
    // Rank 0: `halo` (innermost) over its columns, `solve` around it.
    let b0 = band(r0);
    let (solve, halo) = (tui::ui::region_color("solve"), tui::ui::region_color("halo"));
    assert_ne!(solve, halo);
    let covered: Vec<usize> = (0..n).filter(|&x| b0[x].0 != ' ' || b0[x].2).collect();
    assert_eq!((covered[0], *covered.last().unwrap()), (col(8_000), col(60_000)), "solve spans 8–60 µs");
    assert!(b0[col(9_000) + 1..col(21_000)].iter().all(|c| c.1 == halo), "{}", lines[r0 - 1]);
    assert!(b0[col(21_000) + 1..col(60_000)].iter().all(|c| c.1 == solve), "{}", lines[r0 - 1]);
    let text0 = &lines[r0 - 1];
    assert!(text0.contains("halo") && text0.contains("solve"), "{text0}");
    let at = |s: &str| text0[..text0.find(s).unwrap()].chars().count();
    assert!(at("halo") > col(9_000) && at("halo") < col(21_000), "{text0}");
    assert!(b0[at("solve") - lw].2, "names are drawn reversed in the region's colour");
    // Rank 1: `io` from 90 µs, never closed: to the end of the rank.
    let b1 = band(r1);
    let io = tui::ui::region_color("io");
    // (Message lines may cross the band; no region is drawn there.)
    assert!((0..col(90_000)).all(|x| b1[x].0 != '▄' && !b1[x].2 && b1[x].1 != io), "{}", lines[r1 - 1]);
    assert!((col(90_000)..=col(99_999)).all(|x| b1[x].1 == io), "{}", lines[r1 - 1]);
    // Ranks without regions have an empty band.
    assert!(band(r2).iter().all(|c| c.0 != '▄' && !c.2), "{}", lines[r2 - 1]);
    // The details of the Send at 10 µs on rank 0 name its regions.
    app.cursor_t = 10_500;
    app.set_row(0);
    let s = screen(&mut app);
    assert!(s.iter().any(|l| l.contains("in region solve › halo")), "details name the regions");
    // A click on rank 1's band selects rank 1.
    let ev = MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: (lw + 5) as u16,
        row: (r1 - 1) as u16,
        modifiers: KeyModifiers::NONE,
    };
    app.on_mouse(ev);
    assert_eq!(app.cursor_row, 1);
    // `r` hides the band: one line per rank again.
    key(&mut app, 'r');
    let s = screen(&mut app);
    let (q0, q1) = (row_of(&s, "r0"), row_of(&s, "r1"));
    assert_eq!(q1, q0 + 1);
    assert!(!s[q0 - 1].contains("solve") && !s[q0].contains("solve"), "{}", s[q0]);
    key(&mut app, 'r');
    assert_eq!(app.row_lines(), 2);
}

/// A trace without regions keeps one line per rank, and `r` says why
/// nothing changes.
#[test]
fn no_regions_no_band() {
    let dir = tmpdir("noregions");
    small_trace(&dir);
    let mut app = open(&dir, 80, 24);
    assert_eq!(app.row_lines(), 1);
    key(&mut app, 'r');
    assert_eq!(app.row_lines(), 1);
    let s = screen(&mut app);
    assert!(s[0].contains("no user regions in this trace"), "{}", s[0]);
}

/// A message to a rank scrolled out of view is drawn to the edge with an
/// arrow towards it; with the groups folded it joins the group rows.
#[test]
fn message_lines_to_ranks_out_of_view() {
    let dir = tmpdir("offscreen");
    let mut t = analyzers::synth::SynthTrace::new(40);
    t.send(1, 30, 3, 1024, 10_000, 11_000, 0x40);
    t.recv(30, 1, 3, 1024, 12_000, 20_000, 0x50);
    t.finalize(40_000);
    t.write(&dir).unwrap();
    let mut app = open(&dir, 80, 24);
    app.view = View::new(0, 40_000);
    let g = app.geometry(ratatui::layout::Rect::new(0, 0, 80, 24));
    let (top, bottom) = (g.timeline.y as usize, (g.timeline.y + g.timeline.height - 1) as usize);
    let n = g.timeline.width as usize;
    let view = app.view;
    let x = |t: i64| g.timeline.x as usize + view.col_of(t, n) as usize;
    let lines = screen(&mut app);
    let r1 = row_of(&lines, "r1");
    assert!(!lines.iter().any(|l| l.starts_with("r30")), "rank 30 is out of view");
    assert_eq!(col(&lines[r1], '•'), Some(x(10_000)), "{}", lines[r1]);
    assert_eq!(
        col(&lines[bottom], '↓'),
        Some(x(10_000) + (x(20_000) - x(10_000)) * (bottom - r1) / (29)),
        "{}",
        lines[bottom]
    );
    // Scrolled to the end: the line comes in at the top edge.
    for _ in 0..3 {
        code(&mut app, KeyCode::PageDown);
    }
    let lines = screen(&mut app);
    let r30 = row_of(&lines, "r30");
    assert_eq!(col(&lines[r30], '▸'), Some(x(20_000)), "{}", lines[r30]);
    assert!(lines[top].contains('↑'), "{}", lines[top]);
    // Folded: from the group of rank 1 to the group of rank 30.
    key(&mut app, 'F');
    let lines = screen(&mut app);
    let (g0, g1) = (row_of(&lines, "▸0-15"), row_of(&lines, "▸16-31"));
    let in_timeline =
        |l: &str, ch: char| l.chars().enumerate().skip(g.timeline.x as usize).find(|c| c.1 == ch).map(|c| c.0);
    assert_eq!(in_timeline(&lines[g0], '•'), Some(x(10_000)), "{}", lines[g0]);
    assert_eq!(in_timeline(&lines[g1], '▸'), Some(x(20_000)), "{}", lines[g1]);
}

/// Ranks fold by host; a host with more than `MAX_GROUP` ranks folds into
/// several rows (a folded row costs one query per member and frame).
#[test]
fn large_hosts_fold_into_rows_of_at_most_max_group_ranks() {
    use trace_lod::{Lod, RawCall};
    let calls = |r: i32| {
        (0..10)
            .map(|k| RawCall { t_start: k * 1000 + r as i64, t_end: k * 1000 + 500, name: 0, flags: 0, bytes: 8 })
            .collect()
    };
    let mut lod = Lod::from_calls(vec!["MPI_Barrier".into()], (0..300).map(|r| (r, calls(r))).collect());
    for (i, r) in lod.ranks.iter_mut().enumerate() {
        r.host = Some(format!("node{}", i / 100));
    }
    let mut app = tui::App::with(lod, None);
    app.size = (80, 24);
    assert!(app.groups.iter().all(|g| g.folded && g.members.len() <= tui::app::MAX_GROUP));
    let names: Vec<&str> = app.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(&names[..5], ["node0:0-31", "node0:32-63", "node0:64-95", "node0:96-99", "node1:100-131"]);
    assert_eq!(app.groups.len(), 12);
    assert_eq!(app.groups.iter().map(|g| g.members.len()).sum::<usize>(), 300);
    let lines = screen(&mut app);
    let r = row_of(&lines, "▸node0:32-63");
    assert!(
        lines[r].contains('█') || lines[r].contains('▓') || lines[r].contains('▒') || lines[r].contains('░'),
        "{}",
        lines[r]
    );
}

/// `region=` searches user regions: in time order across ranks, with
/// `dur>` on the region's length.
#[test]
fn search_finds_regions() {
    let dir = tmpdir("regionsearch");
    regions_trace(&dir);
    let mut app = open(&dir, 80, 30);
    let search = |app: &mut tui::App, q: &str| {
        key(app, '/');
        for _ in 0..40 {
            code(app, KeyCode::Backspace);
        }
        typed(app, q);
        code(app, KeyCode::Enter);
        app.message.clone().unwrap_or_default()
    };
    let m = search(&mut app, "region=halo");
    assert_eq!((app.cursor_row, app.cursor_t), (0, 9_000), "{m}");
    assert!(m.starts_with("region halo on rank 0") && m.contains("12.0µs"), "{m}");
    key(&mut app, 'n');
    assert!(app.message.as_deref().unwrap_or("").contains("no later region"), "{:?}", app.message);
    // "o" is in every name; only solve (52 µs) lasts over 40 µs.
    app.cursor_t = 0;
    let m = search(&mut app, "region=o dur>40us");
    assert_eq!((app.cursor_row, app.cursor_t), (0, 8_000), "{m}");
    assert!(m.starts_with("region solve"), "{m}");
    // From there on: halo (rank 0, 9 µs), then io (rank 1, 90 µs), backwards again.
    let _ = search(&mut app, "region=o");
    assert_eq!((app.cursor_row, app.cursor_t), (0, 9_000), "{:?}", app.message);
    key(&mut app, 'n');
    assert_eq!((app.cursor_row, app.cursor_t), (1, 90_000), "{:?}", app.message);
    key(&mut app, 'N');
    assert_eq!((app.cursor_row, app.cursor_t), (0, 9_000), "{:?}", app.message);
    let m = search(&mut app, "region=io rank=0");
    assert!(m.contains("no later region"), "{m}");
    let m = search(&mut app, "region=io send");
    assert!(m.contains("region= goes with rank= and dur> only"), "{m}");
}

/// Three late senders on rank 1 of 2, 6 and 4 µs (in that order in time),
/// then an allreduce where rank 3 comes last: ranks 0, 1, 2 wait 10, 9
/// and 8 µs at it (N x N).
fn worst_waits_trace(dir: &std::path::Path) {
    let mut t = analyzers::synth::SynthTrace::new(4);
    for (i, wait) in [2_000, 6_000, 4_000].into_iter().enumerate() {
        let t0 = (i as i64 + 1) * 10_000;
        t.recv(1, 0, i as i32, 8, t0, t0 + wait + 1_000, 0x50);
        t.send(0, 1, i as i32, 8, t0 + wait, t0 + wait + 1_000, 0x40);
    }
    for r in 0..4 {
        t.coll(r, "MPI_Allreduce", if r == 3 { 60_000 } else { 50_000 + r as i64 * 1_000 }, 61_000, 0x60, 8, None);
    }
    t.finalize(70_000);
    t.write(dir).unwrap();
}

#[test]
fn worst_first_jumps_land_on_the_largest_wait() {
    let dir = tmpdir("worst");
    worst_waits_trace(&dir);
    let mut app = open(&dir, 100, 30);
    // In time order `w` finds the 2 µs one first; worst first, `v` the 6 µs one.
    key(&mut app, 'w');
    assert_eq!((app.cursor_row, app.cursor_t), (1, 10_000));
    key(&mut app, 'v');
    assert_eq!((app.cursor_row, app.cursor_t), (1, 20_000));
    let status = screen(&mut app)[0].clone();
    assert!(status.contains("Late Sender #1 of 3: rank 1 lost 6.00µs in MPI_Recv waiting for rank 0"), "{status}");
    key(&mut app, 'v');
    assert_eq!(app.cursor_t, 30_000, "then the 4 µs one");
    key(&mut app, 'v');
    assert_eq!(app.cursor_t, 10_000, "then the 2 µs one");
    key(&mut app, 'v');
    assert!(app.message.as_deref().unwrap_or("").contains("no more Late Sender: all 3 shown"));
    key(&mut app, 'V');
    assert_eq!(app.cursor_t, 30_000, "V goes back to the worse one");
    key(&mut app, 'V');
    assert_eq!(app.cursor_t, 20_000, "and back to the worst");
    // Late receivers: none here, and the viewer says so.
    key(&mut app, 't');
    assert!(app.message.as_deref().unwrap_or("").contains("Late Receiver: 0 of them"));
    key(&mut app, 'v');
    assert!(app.message.as_deref().unwrap_or("").contains("no Late Receiver in this trace"));
    // N x N: rank 0 waited longest (10 µs) at the allreduce.
    key(&mut app, 't');
    key(&mut app, 'v');
    assert_eq!((app.cursor_row, app.cursor_t), (0, 50_000));
    let status = screen(&mut app)[0].clone();
    assert!(
        status.contains("Wait at N x N #1 of 3: rank 0 lost 10.0µs in MPI_Allreduce waiting for rank 3"),
        "{status}"
    );
    key(&mut app, 'v');
    assert_eq!((app.cursor_row, app.cursor_t), (1, 51_000));
}

#[test]
fn critical_path_overlay_marks_the_calls_on_the_path() {
    use ratatui::style::Color;
    let dir = tmpdir("critical");
    small_trace(&dir);
    let mut app = open(&dir, 100, 24);
    let an = app.an.as_deref().unwrap();
    // The path ends on rank 0, comes from rank 3 (last at the allreduce,
    // 80 µs) whose receive from rank 1 is on it; rank 2's late-sender
    // receive is not (rank 2 only waited).
    assert!(an.critical.on_path(3, 40_500, 45_000));
    assert!(an.critical.on_path(0, 90_000, 95_000));
    assert!(!an.critical.on_path(2, 5_000, 20_000));
    assert!(!an.critical.on_path(1, 40_000, 41_000));
    let bg = |b: &ratatui::buffer::Buffer, x: u16, y: u16| b[(x, y)].bg;
    let before = render(&mut app);
    let lines = text(&before);
    let (y3, y2) = (row_of(&lines, "r3") as u16, row_of(&lines, "r2") as u16);
    // Columns of rank 3's receive and rank 2's receive.
    let g = app.geometry(ratatui::layout::Rect::new(0, 0, 100, 24));
    let col = |t: i64| g.timeline.x + app.view.col_of(t, g.timeline.width as usize) as u16;
    let (x3, x2) = (col(42_000), col(12_000));
    assert_ne!(bg(&before, x3, y3), Color::Indexed(52), "hidden until x");
    key(&mut app, 'x');
    let after = render(&mut app);
    println!("{}", text(&after).join("\n"));
    assert_eq!(bg(&after, x3, y3), Color::Indexed(52), "rank 3's receive is on the path");
    assert_ne!(bg(&after, x2, y2), Color::Indexed(52), "rank 2's waiting receive is not");
    // Every column of rank 3's row is red exactly where the path runs.
    let n = g.timeline.width as usize;
    let mut cols = Vec::new();
    app.an.as_deref().unwrap().critical.columns(3, app.view.t0, app.view.t1, n, &mut cols);
    for (k, on) in cols.iter().enumerate() {
        assert_eq!(bg(&after, g.timeline.x + k as u16, y3) == Color::Indexed(52), *on, "column {k}");
    }
    assert!(text(&after)[0].contains("critical path ("), "{}", text(&after)[0]);
    key(&mut app, 'x');
    assert_ne!(bg(&render(&mut app), x3, y3), Color::Indexed(52));
}

/// Each thread of a rank has its own row, grouped under the rank and
/// foldable with Enter: overlapping calls of two threads no longer share
/// one row.
#[test]
fn thread_lanes_grouped_under_their_rank_and_foldable() {
    let dir = tmpdir("threads");
    threads_trace(&dir);
    let mut app = open(&dir, 100, 24);
    let lines = screen(&mut app);
    let r0 = row_of(&lines, "r0");
    assert!(lines[r0].starts_with("r0 t0"), "{}", lines[r0]);
    assert!(lines[r0 + 1].trim_start().starts_with("t1"), "{}", lines[r0 + 1]);
    let r1 = row_of(&lines, "r1");
    assert_eq!(r1, r0 + 2);
    assert!(lines[r1 + 1].trim_start().starts_with("t1"), "{}", lines[r1 + 1]);
    // Thread 0 of rank 0 shows only its send (to 40 µs), thread 1 only
    // its receive (from 20 µs): at 15 µs only t0 is busy, at 45 µs only t1,
    // each in its call's colour. (Message lines may cross the rows.)
    let buf = render(&mut app);
    let g = app.geometry(ratatui::layout::Rect::new(0, 0, 100, 24));
    let x = |t: i64| g.timeline.x + app.view.col_of(t, g.timeline.width as usize) as u16;
    let fg = |t: i64, y: usize| {
        let c = &buf[(x(t), y as u16)];
        // A labelled run is blanks in reverse video.
        (c.symbol() != " " || c.modifier.contains(ratatui::style::Modifier::REVERSED)).then_some(c.fg)
    };
    let (send, recv) = (tui::ui::call_color("MPI_Send"), tui::ui::call_color("MPI_Recv"));
    assert_eq!((fg(15_000, r0), fg(15_000, r0 + 1)), (Some(send), None));
    assert_eq!((fg(45_000, r0), fg(45_000, r0 + 1)), (None, Some(recv)));
    assert_eq!((fg(10_000, r1), fg(10_000, r1 + 1)), (Some(recv), None));
    assert_eq!((fg(45_000, r1), fg(45_000, r1 + 1)), (None, Some(send)));
    assert!(lines[r0].contains("Send") && !lines[r0].contains("Recv"), "{}", lines[r0]);
    // The call under the cursor on thread 1's lane is that thread's call.
    app.cursor_t = 45_000;
    app.set_row(1);
    let (i, c) = app.cursor_call().expect("a call");
    let lod = app.lod.as_ref().unwrap();
    assert_eq!(lod.name(lod.ranks[i].data.call(c).name), "MPI_Recv");
    assert_eq!(lod.ranks[i].data.call(c).t_start, 20_000);
    let details = screen(&mut app).join("\n");
    assert!(details.contains("MPI_Recv  rank 0 thread 1  at 20µs"), "{details}");
    // Enter folds rank 0's threads into one row, and unfolds them again.
    app.set_row(0);
    code(&mut app, KeyCode::Enter);
    let folded = screen(&mut app);
    let f0 = row_of(&folded, "▸r0");
    assert!(folded[f0].starts_with("▸r0 2t"), "{}", folded[f0]);
    assert!(folded[f0 + 1].starts_with("r1 t0"), "{}", folded[f0 + 1]);
    assert_eq!(app.rows().len(), 3);
    code(&mut app, KeyCode::Enter);
    assert_eq!(app.rows().len(), 4);
    // A jump to a call lands on the lane of its thread.
    key(&mut app, 'v');
    assert!(app.message.as_deref().unwrap_or("").contains("Late Sender"), "{:?}", app.message);
    assert_eq!((app.cursor_row, app.cursor_t), (2, 5_000), "rank 1's receive, on its thread 0's lane");
    // The late sender's partner (rank 0's send) is on rank 0's thread 0.
    key(&mut app, 'g');
    assert_eq!(app.cursor_row, 0);
}

/// Panel 8: the call-tree profile of a trace with call paths
/// (`analyzers::synth::call_paths`: 1 and 3 sends through two callers).
#[test]
fn call_paths_panel_shows_the_tree() {
    let dir = tmpdir("call-paths");
    let t = analyzers::synth::call_paths();
    t.write(&dir).unwrap();
    let mut app = open(&dir, 120, 60);
    key(&mut app, '8');
    let mut seen = screen(&mut app);
    for _ in 0..20 {
        key(&mut app, 'J');
        seen.extend(screen(&mut app));
    }
    let all = seen.join("\n");
    assert!(all.contains("8 Call paths") && all.contains("Call paths"), "{all}");
    let row = |name: &str| -> Vec<String> {
        let mut v: Vec<String> =
            seen.iter().filter(|l| l.trim_start().starts_with(name)).map(|l| l.trim().to_string()).collect();
        v.dedup();
        v
    };
    // The outer function, then the two callers: 1 and 3 sends below them.
    assert!(row("app+0x900").iter().any(|l| l.split_whitespace().nth(1) == Some("4")), "{all}");
    assert!(row("app+0x500").iter().any(|l| l.split_whitespace().nth(1) == Some("1")), "{all}");
    assert!(row("app+0x600").iter().any(|l| l.split_whitespace().nth(1) == Some("3")), "{all}");
    let sends = row("MPI_Send");
    assert!(sends.iter().any(|l| l.split_whitespace().nth(1) == Some("1")), "{sends:?}");
    assert!(sends.iter().any(|l| l.split_whitespace().nth(1) == Some("3")), "{sends:?}");
    // Depth-first: the heavier caller (3 sends) before the lighter.
    let at = |s: &str| seen.iter().position(|l| l.trim_start().starts_with(s)).unwrap();
    assert!(at("app+0x900") < at("app+0x600") && at("app+0x600") < at("app+0x500"), "{all}");
}

/// Panel 8 of a trace without call paths says how to record them.
#[test]
fn call_paths_panel_without_paths() {
    let dir = tmpdir("no-call-paths");
    small_trace(&dir);
    let mut app = open(&dir, 120, 40);
    key(&mut app, '8');
    let all = screen(&mut app).join("\n");
    assert!(all.contains("No call paths") && all.contains("--callpath"), "{all}");
}

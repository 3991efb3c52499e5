//! The HTML report: one well-formed, self-contained page with the numbers
//! of the analyses and the plots.

use analyzers::html::{overview, render, MAX_ROWS};
use analyzers::report::analyze;
use analyzers::synth::SynthTrace;
use quick_xml::events::Event;

const MS: i64 = 1_000_000;
const US: i64 = 1_000;

/// Parses the page with an XML parser (end tags must match) and returns
/// (element names in order, text of every `<title>` inside SVGs, all text).
fn parse(html: &str) -> (Vec<String>, Vec<String>, String) {
    let mut r = quick_xml::Reader::from_str(html);
    r.config_mut().check_end_names = true;
    let (mut elems, mut titles, mut text) = (Vec::new(), Vec::new(), String::new());
    let mut stack: Vec<String> = Vec::new();
    loop {
        match r.read_event().unwrap_or_else(|e| panic!("not well-formed at {}: {e}", r.buffer_position())) {
            Event::Start(e) => {
                let n = String::from_utf8_lossy(e.name().as_ref()).to_string();
                elems.push(n.clone());
                stack.push(n);
            }
            Event::Empty(e) => elems.push(String::from_utf8_lossy(e.name().as_ref()).to_string()),
            Event::End(_) => {
                stack.pop();
            }
            Event::Text(t) => {
                let s = t.decode().expect("utf-8").to_string();
                if stack.last().map(|s| s == "title").unwrap_or(false) && stack.iter().any(|e| e == "svg") {
                    titles.push(s.clone());
                }
                text.push_str(&s);
                text.push('\n');
            }
            Event::GeneralRef(e) => {
                // &amp; and friends between text pieces.
                let name = String::from_utf8_lossy(&e).to_string();
                text.push_str(match name.as_str() {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    _ => "'",
                });
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    (elems, titles, text)
}

fn late_sender_trace() -> SynthTrace {
    let mut t = SynthTrace::new(4);
    t.with_modules = true;
    // Rank 1 waits 5 ms for rank 0; rank 2 sends 3000 bytes to rank 3.
    t.send(0, 1, 7, 800, 10 * MS, 10 * MS + 10 * US, 0x100);
    t.recv(1, 0, 7, 800, 5 * MS, 10 * MS + 20 * US, 0x200);
    t.send(2, 3, 1, 3000, 2 * MS, 2 * MS + 10 * US, 0x100);
    t.recv(3, 2, 1, 3000, 2 * MS, 2 * MS + 20 * US, 0x200);
    // Rank 1 finishes last, so the critical path ends there.
    for r in 0..4 {
        let end = if r == 1 { 21 * MS } else { 20 * MS };
        t.call(r, "MPI_Finalize", end, end + US, 0x20);
    }
    t
}

#[test]
fn html_report_is_one_well_formed_self_contained_page() {
    let a = analyze(late_sender_trace().model());
    let r = a.report();
    let ov = overview(&a);
    let html = render(&r, Some(&ov));
    assert!(html.starts_with("<!DOCTYPE html>"));
    let (elems, titles, text) = parse(&html);
    // Self-contained: no scripts, stylesheets, images or frames to fetch,
    // links only within the page.
    for bad in ["script", "link", "img", "iframe", "object", "embed"] {
        assert!(!elems.iter().any(|e| e == bad), "<{bad}> in the page");
    }
    assert!(!html.contains("src=") && !html.contains("url("), "external reference");
    assert!(html.match_indices("href=\"").all(|(i, _)| html[i + 6..].starts_with('#')), "link out of the page");
    assert_eq!(elems.iter().filter(|e| *e == "style").count(), 1);
    assert_eq!(elems.iter().filter(|e| *e == "svg").count(), 2, "timeline and heatmap");
    // The numbers of the analyses are in it.
    assert!(text.contains("Late Sender"), "{text}");
    assert!(text.contains("5.00 ms"), "late sender time");
    assert!(text.contains("MPI_Recv at app+0x200"), "worst wait site by module+offset");
    // Heatmap: 4 x 4 cells with exact tooltips.
    assert!(titles.contains(&"0 \u{2192} 1: 800 B in 1 messages".to_string()), "{titles:?}");
    assert!(titles.contains(&"2 \u{2192} 3: 2.9 KiB in 1 messages".to_string()), "{titles:?}");
    assert_eq!(titles.iter().filter(|t| t.contains('\u{2192}')).count(), 16);
    // Timeline: rank 1 is in MPI_Recv from 5 to 10 ms, so some bin of it is 100% MPI;
    // rank 0 computes then, so a bin of it is 0%.
    assert!(titles.iter().any(|t| t.starts_with("rank 1 at") && t.ends_with(": 100% in MPI")), "{titles:?}");
    assert!(titles.iter().any(|t| t.starts_with("rank 0 at") && t.ends_with(": 0% in MPI")), "{titles:?}");
    assert!(titles.contains(&"critical path".to_string()));
    // Symbolized sites show file:line, function and module+offset.
    let mut model = late_sender_trace().model();
    model.symbolize(|s, _| {
        (s.offset == 0x200).then(|| analyzers::model::Location {
            function: Some("halo".into()),
            file: "/src/st.c".into(),
            line: 77,
        })
    });
    let (_, _, text3) = parse(&render(&analyze(model).report(), None));
    assert!(text3.contains("MPI_Recv at st.c:77"), "{text3}");
    assert!(text3.contains("\nhalo\n") && text3.contains("\napp+0x200\n"), "{text3}");
    // Without the overview (a report read back from JSON) the page has no plots but the same tables.
    let (elems, _, text2) = parse(&render(&r, None));
    assert_eq!(elems.iter().filter(|e| *e == "svg").count(), 0);
    assert!(text2.contains("Late Sender"));
}

#[test]
fn timeline_shares_and_critical_path_are_exact() {
    let a = analyze(late_sender_trace().model());
    let ov = overview(&a);
    let (t0, t1) = (ov.t0, ov.t1);
    assert_eq!((t0, t1), (0, 21 * MS + US), "Init at 0, the last Finalize ends at 21 ms + 1 us");
    assert_eq!(ov.rows.len(), 4);
    let bin = (t1 - t0) as f64 / analyzers::html::BINS as f64;
    // Rank 1, bin containing 7.5 ms: inside MPI_Recv (5 ms .. 10.02 ms).
    let b = (7.5 * MS as f64 / bin) as usize;
    assert_eq!(ov.rows[1].2[b], 1.0);
    assert_eq!(ov.rows[0].2[b], 0.0);
    // The path: rank 0 until its send starts (10 ms), then rank 1 to the
    // start of its MPI_Finalize (the window's end).
    assert_eq!(ov.path, vec![(0, US, 10 * MS), (1, 10 * MS, 21 * MS)]);
    // Matrix blocks are single ranks here.
    let gm = ov.matrix.as_ref().unwrap();
    let (g, bytes, msgs) = (&gm.groups, &gm.bytes, &gm.messages);
    assert_eq!(g.len(), 4);
    assert_eq!((bytes[1], msgs[1], bytes[2 * 4 + 3]), (800, 1, 3000));
}

#[test]
fn many_ranks_are_grouped() {
    // 200 ranks in a ring: rows and heatmap blocks are groups of ranks.
    let n = 200;
    let mut t = SynthTrace::new(n);
    for r in 0..n as i32 {
        t.send(r, (r + 1) % n as i32, 0, 100, MS, MS + US, 0x100);
    }
    for r in 0..n as i32 {
        t.recv(r, (r + n as i32 - 1) % n as i32, 0, 100, MS, 2 * MS, 0x200);
    }
    t.finalize(3 * MS);
    let a = analyze(t.model());
    let ov = overview(&a);
    assert_eq!(ov.rows.len(), MAX_ROWS);
    assert_eq!(ov.rows.first().map(|r| (r.0, r.1)), Some((0, 2)));
    assert_eq!(ov.rows.last().map(|r| r.1), Some(n - 1));
    let gm = ov.matrix.as_ref().unwrap();
    let (g, bytes, msgs) = (&gm.groups, &gm.bytes, &gm.messages);
    assert_eq!(g.len(), MAX_ROWS);
    assert_eq!(bytes.iter().sum::<i64>(), 100 * n as i64);
    assert_eq!(msgs.iter().sum::<u64>(), n as u64);
    let (_, titles, _) = parse(&render(&a.report(), Some(&ov)));
    assert_eq!(titles.iter().filter(|t| t.contains('\u{2192}')).count(), MAX_ROWS * MAX_ROWS);
}

#[test]
fn collective_costs_are_plotted_from_the_report() {
    // Rank 3 arrives 30 ms after the others at one allreduce.
    let mut t = SynthTrace::new(4);
    for r in 0..4 {
        let arrive = if r == 3 { 40 * MS } else { 10 * MS };
        t.coll(r, "MPI_Allreduce", arrive, 41 * MS, 0x300, 8, None);
    }
    t.finalize(50 * MS);
    let r = analyze(t.model()).report();
    // The plot needs only the report (also one read back from JSON).
    let (elems, titles, _) = parse(&render(&r, None));
    assert_eq!(elems.iter().filter(|e| *e == "svg").count(), 2, "costs and waiting per rank");
    assert!(
        titles.contains(&"WORLD MPI_Allreduce 8 B..15 B: waiting 90.0 ms of 94.0 ms in 1 instances".to_string()),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"WORLD MPI_Allreduce 8 B..15 B: working 4.00 ms (time minus waiting)".to_string()),
        "{titles:?}"
    );
    for rank in 0..3 {
        assert!(
            titles.contains(&format!("rank {rank}: waited 30.0 ms in collectives, arrived last 0 times")),
            "{titles:?}"
        );
    }
    assert!(titles.contains(&"rank 3: waited 0 ns in collectives, arrived last 1 times".to_string()), "{titles:?}");
}

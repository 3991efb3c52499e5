//! The panel below the timeline: details of the call under the cursor,
//! profile, collective costs, wait states, communication matrix, trace info.

use analyzers::model::NONE;
use analyzers::{fmt_bytes, Stats};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::{call_color, colors, region_color};
use crate::app::{App, Row, SortKey, CALL_PATHS_PANEL, IO_RMA_PANEL, PANELS};
use crate::data::Analysed;
use crate::view::fmt_dur;

pub fn draw(buf: &mut Buffer, r: Rect, app: &App) {
    let mut title = vec![Span::raw(" ")];
    for (i, p) in PANELS.iter().enumerate() {
        let s = format!("{} {p}", i + 1);
        title.push(if i == app.panel {
            Span::styled(s, Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD))
        } else {
            Span::raw(s)
        });
        title.push(Span::raw(" "));
    }
    let block = Block::default().borders(Borders::TOP).title(Line::from(title));
    let inner = block.inner(r);
    block.render(r, buf);
    let lines = lines(app, inner.width as usize);
    let scroll = app.panel_scroll.min(lines.len().saturating_sub(inner.height as usize));
    Paragraph::new(lines).scroll((scroll as u16, 0)).render(inner, buf);
}

/// The lines of the current panel, for a width of `w` columns.
pub fn lines(app: &App, w: usize) -> Vec<Line<'static>> {
    if app.panel == 5 {
        return info(app);
    }
    if app.lod.is_none() {
        return vec![Line::from("loading…")];
    }
    if app.panel == 0 {
        return details(app);
    }
    let Some(an) = app.an.as_deref() else {
        return vec![Line::from(match &app.an_error {
            Some(e) => format!("The analyses failed: {e}"),
            None => "The analyses are still running; the timeline can be browsed meanwhile.".to_string(),
        })];
    };
    match app.panel {
        1 => profile(app, an),
        2 => collectives(an),
        3 => wait_states(an),
        IO_RMA_PANEL => io_rma(an, w),
        CALL_PATHS_PANEL => call_paths(an, w),
        _ => matrix(an, w),
    }
}

fn bold(s: impl Into<String>) -> Span<'static> {
    Span::styled(s.into(), Style::default().add_modifier(Modifier::BOLD))
}

fn dim(s: impl Into<String>) -> Span<'static> {
    Span::styled(s.into(), Style::default().add_modifier(Modifier::DIM))
}

fn details(app: &App) -> Vec<Line<'static>> {
    let Some(lod) = &app.lod else { return Vec::new() };
    let rows = app.rows();
    if let Some(Row::Group(g)) = rows.get(app.cursor_row) {
        let grp = &app.groups[*g];
        return vec![Line::from(format!(
            "Group {}: {} ranks, folded (Enter unfolds, F unfolds all)",
            grp.name,
            grp.members.len()
        ))];
    }
    let Some((i, j)) = app.cursor_call() else {
        let at = app.cursor_rank().map(|i| format!("rank {} ", lod.ranks[i].rank)).unwrap_or_default();
        return vec![Line::from(format!(
            "No call under the cursor ({at}at {}); e and E go to the next and previous call.",
            app.fmt_abs(app.cursor_t)
        ))];
    };
    let rank = lod.ranks[i].rank;
    let c = lod.ranks[i].data.call(j);
    let name = lod.name(c.name).to_string();
    let mut head = vec![
        Span::styled(name.clone(), Style::default().fg(call_color(&name)).add_modifier(Modifier::BOLD)),
        Span::raw(format!(
            "  rank {rank}{}  at {}  for {}",
            thread_of_row(app),
            app.fmt_abs(c.t_start),
            fmt_dur(c.duration())
        )),
    ];
    if c.flags & trace_lod::flags::UNFINISHED != 0 {
        head.push(Span::styled("  never returned (the rank died in it)", Style::default().fg(colors::WAIT)));
    }
    if c.flags & trace_lod::flags::FAILED != 0 {
        head.push(Span::styled("  returned an error", Style::default().fg(colors::WAIT)));
    }
    let mut out = vec![Line::from(head)];
    let Some(an) = app.an.as_deref() else {
        out.push(Line::from(dim(match &app.an_error {
            Some(e) => format!("(no peer, tag or message: the analyses failed: {e})"),
            None => "(peer, tag, bytes and the matched message come when the analyses are done)".to_string(),
        })));
        return out;
    };
    let Some(idx) = an.model_call(rank, c.t_start, &name) else {
        out.push(Line::from(dim("(not found in the analyses' model)")));
        return out;
    };
    let m = &an.an.model;
    let r = &m.ranks[rank as usize];
    let site = r.calls.at(idx as usize).site;
    out.push(Line::from(vec![
        Span::raw(format!("call site {}", m.site_label(site))),
        dim("   (g: go to the other end of a message)"),
    ]));
    if let Some(regs) = an.regions_of(rank) {
        let mut spans = vec![Span::raw("in region ")];
        for (k, x) in regs.at(c.t_start).into_iter().enumerate() {
            let name = m.name(x.name);
            if k > 0 {
                spans.push(Span::raw(" › "));
            }
            spans.push(Span::styled(
                name.to_string(),
                Style::default().fg(region_color(name)).add_modifier(Modifier::BOLD),
            ));
        }
        if spans.len() > 1 {
            out.push(Line::from(spans));
        }
    }
    for (k, send) in [(Analysed::p2p_of(&r.sends, idx), true), (Analysed::p2p_of(&r.recvs, idx), false)]
        .into_iter()
        .flat_map(|(v, s)| v.into_iter().map(move |k| (k, s)))
        .take(8)
    {
        out.extend(p2p_lines(app, an, rank, k, send));
    }
    for k in an.colls_of(rank, idx).into_iter().take(2) {
        out.extend(coll_lines(an, rank, k));
    }
    out
}

fn p2p_lines(app: &App, an: &Analysed, rank: i32, k: usize, send: bool) -> Vec<Line<'static>> {
    let m = &an.an.model;
    let r = &m.ranks[rank as usize];
    let p = if send { &r.sends.at(k) } else { &r.recvs.at(k) };
    let seq = if p.seq == NONE { String::new() } else { format!(" seq {}", p.seq) };
    let bytes = if p.bytes >= 0 { fmt_bytes(p.bytes) } else { "? B".into() };
    let mut s = format!(
        "{} {} {} tag {} {} comm {}{seq}",
        if send { "send" } else { "recv" },
        if send { "to" } else { "from" },
        p.peer,
        p.tag,
        bytes,
        m.comm_label(p.comm)
    );
    let partner = if send { &an.an.matching.send_to_recv } else { &an.an.matching.recv_to_send };
    match partner.get(rank as usize).and_then(|v| v.get(k)) {
        Some(q) if q.is_some() => {
            let pr = &m.ranks[q.rank as usize];
            if send {
                let rv = &pr.recvs.at(q.idx as usize);
                let call = if rv.done != NONE { rv.done } else { rv.post };
                let c = &pr.calls.at(call as usize);
                s += &format!(
                    " → received by rank {} in {} at {}",
                    q.rank,
                    m.name(c.name),
                    app.fmt_abs(an.raw(q.rank as i32, c.t_end))
                );
            } else {
                let sd = &pr.sends.at(q.idx as usize);
                let c = &pr.calls.at(sd.post as usize);
                let t_send = an.raw(q.rank as i32, c.t_start);
                s += &format!(" ← sent by rank {} in {} at {}", q.rank, m.name(c.name), app.fmt_abs(t_send));
                if p.done != NONE {
                    let done = &r.calls.at(p.done as usize);
                    let wait = c.t_start.min(done.t_end) - done.t_start;
                    if wait > 0 {
                        let late = format!("  late sender: waited {} for rank {}", fmt_dur(wait), q.rank);
                        return vec![Line::from(s), Line::from(Span::styled(late, Style::default().fg(colors::WAIT)))];
                    }
                }
            }
        }
        _ => s += "  (unmatched)",
    }
    vec![Line::from(s)]
}

fn coll_lines(an: &Analysed, rank: i32, k: usize) -> Vec<Line<'static>> {
    let m = &an.an.model;
    let c = &m.ranks[rank as usize].colls[k];
    let inst = an.coll_instance.get(rank as usize).and_then(|v| v.get(k)).copied().unwrap_or(NONE);
    let Some(i) = an.an.collectives.instances.get(inst as usize) else {
        return vec![Line::from(format!(
            "collective #{} on {}, {} bytes (instance not found)",
            c.seq,
            m.comm_label(c.comm),
            c.bytes
        ))];
    };
    let mine =
        an.an.collectives.members[i.first as usize..(i.first + i.n) as usize].iter().find(|x| x.rank as i32 == rank);
    let s = format!(
        "{} #{} on {}: {}/{} ranks, {} each, arrival spread {}, rank {} last",
        m.name(i.name),
        i.seq,
        m.comm_label(i.comm),
        i.n,
        i.expected,
        fmt_bytes(c.bytes.max(c.recv_bytes).max(0)),
        fmt_dur(i.spread()),
        i.last_rank
    );
    let mut out = vec![Line::from(s)];
    if let Some(x) = mine.filter(|x| x.wait > 0) {
        let w = format!("  this rank waited {} for rank {}", fmt_dur(x.wait), x.cause);
        out.push(Line::from(Span::styled(w, Style::default().fg(colors::WAIT))));
    }
    out
}

/// Formats rows of cells into aligned columns (`true`: right-aligned).
fn table(head: &[(&str, bool)], rows: Vec<Vec<String>>) -> Vec<Line<'static>> {
    let mut w: Vec<usize> = head.iter().map(|h| h.0.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let fmt =
        |cells: Vec<String>| {
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if head[i].1 {
                        format!("{c:>width$}", width = w[i])
                    } else {
                        format!("{c:<width$}", width = w[i])
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
    let mut out = vec![Line::from(bold(fmt(head.iter().map(|h| h.0.to_string()).collect())))];
    out.extend(rows.into_iter().map(|r| Line::from(fmt(r))));
    out
}

fn stats_max(s: &Stats) -> String {
    format!("{} (r{})", fmt_dur(s.max as i64), s.max_rank)
}

fn profile(app: &App, an: &Analysed) -> Vec<Line<'static>> {
    let p = &an.an.profile;
    let t = &p.totals;
    let mut calls: Vec<&analyzers::profile::CallProfile> = p.calls.iter().collect();
    match app.sort {
        SortKey::Time => calls.sort_by_key(|c| c.time_ns),
        SortKey::Calls => calls.sort_by_key(|c| c.count),
        SortKey::Bytes => calls.sort_by_key(|c| c.bytes),
        SortKey::Name => calls.sort_by(|a, b| a.name.cmp(&b.name)),
    }
    if app.sort_desc {
        calls.reverse();
    }
    let mut out = vec![Line::from(vec![
        Span::raw(format!(
            "MPI {:.1}% of {} ranks × {}, {} calls, {}, compute cv {:.2}  ",
            t.mpi_fraction * 100.0,
            t.ranks,
            fmt_dur(if t.ranks > 0 { t.rank_ns / t.ranks as i64 } else { 0 }),
            t.calls,
            fmt_bytes(t.bytes),
            t.compute_cv
        )),
        dim(format!("sorted by {} {} (s, S)", app.sort.title(), if app.sort_desc { "▼" } else { "▲" })),
    ])];
    let rows = calls
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.count.to_string(),
                fmt_dur(c.time_ns),
                format!("{:.1}%", c.mpi_share * 100.0),
                fmt_bytes(c.bytes),
                fmt_dur(c.time.mean as i64),
                stats_max(&c.time),
                format!("{:.2}", c.time.cv),
            ]
        })
        .collect();
    out.extend(table(
        &[
            ("call", false),
            ("calls", true),
            ("time", true),
            ("%MPI", true),
            ("bytes", true),
            ("mean/rank", true),
            ("max/rank", true),
            ("cv", true),
        ],
        rows,
    ));
    out
}

fn collectives(an: &Analysed) -> Vec<Line<'static>> {
    let r = &an.an.collectives.report;
    let mut out = vec![Line::from(format!(
        "{} instances ({} incomplete); arrival spread mean {} max {}; {} slow (spread ≥ {}, c and C jump to them)",
        r.instances,
        r.incomplete,
        fmt_dur(r.spread.mean as i64),
        fmt_dur(r.spread.max as i64),
        an.slow_colls.len(),
        fmt_dur(an.slow_threshold)
    ))];
    let rows = r
        .summaries
        .iter()
        .map(|s| {
            vec![
                s.call.clone(),
                s.comm.clone(),
                if s.size_lo == s.size_hi {
                    fmt_bytes(s.size_lo)
                } else {
                    format!("{}-{}", fmt_bytes(s.size_lo), fmt_bytes(s.size_hi))
                },
                s.instances.to_string(),
                fmt_dur(s.time_ns),
                fmt_dur(s.wait_ns),
                fmt_dur(s.mean_spread_ns),
                fmt_dur(s.max_spread_ns),
                format!("r{} {:.0}%", s.last_rank, s.last_rank_share * 100.0),
            ]
        })
        .collect();
    out.extend(table(
        &[
            ("op", false),
            ("comm", false),
            ("size", true),
            ("count", true),
            ("time", true),
            ("wait", true),
            ("spread", true),
            ("max spread", true),
            ("last", true),
        ],
        rows,
    ));
    out
}

/// The rank with the largest value, and the value.
fn top_rank(v: &[i64]) -> String {
    match v.iter().enumerate().max_by_key(|(i, x)| (**x, std::cmp::Reverse(*i))) {
        Some((i, &x)) if x > 0 => format!("r{i} {}", fmt_dur(x)),
        _ => "-".into(),
    }
}

fn wait_states(an: &Analysed) -> Vec<Line<'static>> {
    let w = &an.an.waits.states;
    let mut out = vec![Line::from(format!(
        "{} lost waiting in all; {} late senders (w and W jump to them)",
        fmt_dur(w.total_ns),
        an.late_senders.len()
    ))];
    let rows = w
        .patterns
        .iter()
        .map(|p| {
            let site = p.sites.first().map(|s| format!("{} at {}", s.call, s.site)).unwrap_or_else(|| "-".into());
            vec![
                p.name.clone(),
                fmt_dur(p.time_ns),
                p.count.to_string(),
                top_rank(&p.by_rank),
                top_rank(&p.by_cause),
                site,
            ]
        })
        .collect();
    out.extend(table(
        &[
            ("pattern", false),
            ("time", true),
            ("calls", true),
            ("most waiting", true),
            ("most responsible", true),
            ("where", false),
        ],
        rows,
    ));
    out
}

/// The report's I/O and one-sided sections, as the text report prints them.
fn io_rma(an: &Analysed, w: usize) -> Vec<Line<'static>> {
    let doc = analyzers::iorma::document(&an.an.io_rma);
    if doc.is_empty() {
        return vec![Line::from("No MPI-IO or one-sided calls.")];
    }
    let text = analyzers::report::render_text(&doc, analyzers::report::TextOptions { width: w.max(40), color: false });
    text.lines().map(|l| Line::from(l.to_string())).collect()
}

/// The report's call-tree and counters sections, as the text report
/// prints them (the tree depth-first, indented; scroll with the panel keys).
fn call_paths(an: &Analysed, w: usize) -> Vec<Line<'static>> {
    let mut doc = analyzers::calltree::document(&an.an.call_tree);
    doc.extend(analyzers::counters::document(&an.an.counters));
    if doc.is_empty() {
        return vec![
            Line::from("No call paths or hardware counters in this trace."),
            Line::from("Record with `mpitrace record --callpath 8` (call paths) or `--counters cycles,instructions`."),
        ];
    }
    let text = analyzers::report::render_text(&doc, analyzers::report::TextOptions { width: w.max(40), color: false });
    text.lines().map(|l| Line::from(l.to_string())).collect()
}

fn matrix(an: &Analysed, w: usize) -> Vec<Line<'static>> {
    let mx = &an.an.matrix;
    let n = mx.ranks;
    if n == 0 || mx.pairs.is_empty() {
        return vec![Line::from("No point-to-point messages.")];
    }
    // Blocks of ranks per heatmap cell so it fits in about half the width.
    let cols = ((w / 2).saturating_sub(6) / 2).max(1);
    let per = n.div_ceil(cols);
    let k = n.div_ceil(per);
    // Summed from the pairs that communicated (the matrix is sparse; a
    // trace may claim far more ranks than it has pairs).
    let mut cells: Vec<Vec<i64>> = vec![vec![0; k]; k];
    for p in &mx.pairs {
        if let Some(v) = cells.get_mut(p.src as usize / per).and_then(|row| row.get_mut(p.dst as usize / per)) {
            *v = v.saturating_add(p.bytes);
        }
    }
    let max = cells.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let shade = |v: i64| {
        if v <= 0 {
            "· "
        } else {
            let f = (v as f64).ln_1p() / max.ln_1p();
            if f > 0.9 {
                "██"
            } else if f > 0.7 {
                "▓▓"
            } else if f > 0.45 {
                "▒▒"
            } else {
                "░░"
            }
        }
    };
    let label =
        |a: usize| if per == 1 { format!("r{a}") } else { format!("{}-{}", a * per, ((a + 1) * per).min(n) - 1) };
    let lw = (0..k).map(|a| label(a).len()).max().unwrap_or(2);
    let heat = Style::default().fg(colors::COLLECTIVE);
    let mut left: Vec<Line> = vec![Line::from(dim(format!("bytes from row to column, max {}", fmt_bytes(max as i64))))];
    if per == 1 {
        left.push(Line::from(dim(format!(
            "{:lw$} {}",
            "",
            (0..k).map(|b| format!("{:<2}", b % 100)).collect::<String>()
        ))));
    }
    for (a, row) in cells.iter().enumerate() {
        let mut spans = vec![Span::raw(format!("{:>lw$} ", label(a)))];
        spans.extend(row.iter().map(|&v| Span::styled(shade(v), heat)));
        left.push(Line::from(spans));
    }
    let mut pairs = vec![bold("top pairs")];
    let pairs_lines: Vec<String> =
        mx.top(12).iter().map(|p| format!("{}→{}  {}  {} msg", p.src, p.dst, fmt_bytes(p.bytes), p.messages)).collect();
    let left_w = (lw + 1 + 2 * k).max(40);
    let mut out = Vec::new();
    for i in 0..left.len().max(pairs_lines.len() + 1) {
        let mut spans = left.get(i).map(|l| l.spans.clone()).unwrap_or_default();
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        spans.push(Span::raw(" ".repeat(left_w.saturating_sub(used) + 2)));
        if i == 0 {
            spans.append(&mut pairs);
        } else if let Some(p) = pairs_lines.get(i - 1) {
            spans.push(Span::raw(p.clone()));
        }
        out.push(Line::from(spans));
    }
    out
}

fn info(app: &App) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    out.push(Line::from(vec![bold("Trace "), Span::raw(app.dir.display().to_string())]));
    let Some(lod) = &app.lod else {
        if let Some(e) = &app.lod_error {
            out.push(Line::from(Span::styled(e.clone(), Style::default().fg(colors::WAIT))));
        }
        return out;
    };
    if let Some(m) = &lod.meta {
        out.push(Line::from(format!("command: {}", m.command.join(" "))));
        out.push(Line::from(format!(
            "{} ranks on {} hosts; {}",
            m.ranks,
            m.hosts.len(),
            m.mpi_library.lines().next().unwrap_or("").trim()
        )));
    }
    let (lo, hi) = lod.span();
    out.push(Line::from(format!("{} calls over {}", lod.calls(), fmt_dur(hi - lo))));
    let how = if lod.cached {
        "opened from the cache".to_string()
    } else {
        format!("built in {}", app.lod_time.map(|t| fmt_dur(t.as_nanos() as i64)).unwrap_or_default())
    };
    let cache = lod.cache_dir.as_ref().map(|d| format!(", cache in {}", d.display())).unwrap_or_default();
    out.push(Line::from(format!(
        "level of detail: {how}, {}{cache}{}",
        fmt_bytes(lod.size_bytes() as i64),
        lod.cache_note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
    )));
    match (&app.an, &app.an_error) {
        (Some(a), _) => {
            let c = &a.an.clocks;
            out.push(Line::from(format!(
                "analyses: {} ({} messages matched; clock violations {} → {})",
                fmt_dur(a.elapsed.as_nanos() as i64),
                a.an.matching.summary.matched,
                c.violations_before,
                c.violations_after
            )));
        }
        (None, Some(e)) => {
            out.push(Line::from(Span::styled(format!("analyses failed: {e}"), Style::default().fg(colors::WAIT))))
        }
        (None, None) => out.push(Line::from("analyses: running…")),
    }
    for r in &lod.ranks {
        let what = match &r.state {
            trace_lod::RankState::Complete => continue,
            trace_lod::RankState::Partial(why) => format!("rank {}: partial: {why}", r.rank),
            trace_lod::RankState::Missing => format!("rank {}: missing", r.rank),
        };
        out.push(Line::from(Span::styled(what, Style::default().fg(colors::WAIT))));
    }
    if !lod.problems.is_empty() {
        out.push(Line::from(bold(format!("{} problems:", lod.problems.len()))));
        out.extend(lod.problems.iter().map(|p| Line::from(format!("  {p}"))));
    }
    out
}

/// " thread N" when the cursor is on a thread's row, else nothing.
fn thread_of_row(app: &App) -> String {
    match app.rows().get(app.cursor_row) {
        Some(Row::Thread(i, lane)) => {
            app.thread_lanes(*i).iter().find(|x| x.1 == *lane).map(|x| format!(" thread {}", x.0)).unwrap_or_default()
        }
        _ => String::new(),
    }
}

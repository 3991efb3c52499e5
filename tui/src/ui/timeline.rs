//! The timeline: time axis, one row per rank (or folded group), message
//! lines, the collective instance under the cursor, the cursor.

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};
use trace_lod::{flags, Cell, Lod};
use trace_view::Edge;

use super::{call_color, colors, put, region_color};
use crate::app::{App, Geometry, Row};
use crate::view::{fmt_time, tick_step, View};

/// Most message lines drawn; with more in view, none are.
pub const MAX_LINES: usize = 64;

/// Characters for a column's share of time in MPI.
fn shade(frac: f64) -> char {
    if frac >= 0.75 {
        '█'
    } else if frac >= 0.5 {
        '▓'
    } else if frac >= 0.25 {
        '▒'
    } else {
        '░'
    }
}

/// The rows on screen and where they are.
struct Shown {
    /// (index into `App::rows`, row), top to bottom.
    rows: Vec<(usize, Row)>,
    /// Screen lines per row (2 with the band of user regions).
    lines: usize,
}

impl Shown {
    /// Line (from the top of the timeline) of the calls of the `k`-th row shown.
    fn line(&self, k: usize) -> usize {
        k * self.lines + self.lines - 1
    }
    /// Line of the calls of lod rank `i`, if it is on screen.
    fn line_of_rank(&self, i: usize) -> Option<usize> {
        self.rows
            .iter()
            .position(|(_, r)| matches!(*r, Row::Rank(x) | Row::Thread(x, _) if x == i))
            .map(|k| self.line(k))
    }
}

pub fn draw(buf: &mut Buffer, g: &Geometry, app: &App, lod: &Lod) {
    let n = g.timeline.width as usize;
    let v = app.view;
    axis(buf, g, app, lod);
    let lines = app.row_lines();
    let rows = app.rows();
    let shown = Shown {
        rows: rows.iter().copied().enumerate().skip(app.scroll).take(g.timeline.height as usize / lines).collect(),
        lines,
    };
    let name_ok: Vec<bool> = lod.names.iter().map(|s| app.filter.name_matches(s)).collect();
    let colors: Vec<Color> = lod.names.iter().map(|s| call_color(s)).collect();
    // Thread lanes name their calls as the analyses' model does.
    let threads = app.an.as_deref().map(|an| &an.threads).filter(|t| t.any());
    let thread_names: &[String] = threads.map(|t| t.lod.names.as_slice()).unwrap_or(&[]);
    let t_name_ok: Vec<bool> = thread_names.iter().map(|s| app.filter.name_matches(s)).collect();
    let t_colors: Vec<Color> = thread_names.iter().map(|s| call_color(s)).collect();
    let mut cells = Vec::new();
    let mut band = Vec::new();
    let mut on_path = Vec::new();
    let col_w = v.span() as f64 / n as f64;
    for (k, (ri, row)) in shown.rows.iter().enumerate() {
        let y = g.timeline.y + shown.line(k) as u16;
        let (label, label_style) = row_label(app, lod, *row);
        let ls = if *ri == app.cursor_row { label_style.add_modifier(Modifier::REVERSED) } else { label_style };
        put(buf, g.labels.x, y, &format!("{:<w$}", label, w = g.labels.width as usize - 1), g.labels.width - 1, ls);
        for line in y + 1 - lines as u16..=y {
            put(buf, g.labels.x + g.labels.width - 1, line, "│", 1, Style::default().add_modifier(Modifier::DIM));
        }
        let (names_of, name_ok, colors) = match (row, threads) {
            (Row::Thread(_, lane), Some(th)) => {
                th.data(*lane).cells(v.t0, v.t1, n, &mut cells);
                (&th.lod, &t_name_ok, &t_colors)
            }
            (Row::Thread(i, _) | Row::Rank(i), _) => {
                lod.ranks[*i].data.cells(v.t0, v.t1, n, &mut cells);
                (lod, &name_ok, &colors)
            }
            (Row::Group(gi), _) => {
                merged_cells(lod, &app.groups[*gi].members, v, n, &mut cells);
                (lod, &name_ok, &colors)
            }
        };
        let members = match row {
            Row::Group(gi) => app.groups[*gi].members.len().max(1),
            _ => 1,
        } as f64;
        for (x, c) in cells.iter().enumerate() {
            let Some(d) = c.dominant else { continue };
            let frac = c.busy as f64 / col_w / members;
            let mut style = Style::default().fg(colors.get(d as usize).copied().unwrap_or(colors::OTHER));
            let mut ch = shade(frac);
            if !app.filter.calls.is_empty() && !name_ok.get(d as usize).copied().unwrap_or(false) {
                style = Style::default().fg(colors::FILTERED);
                ch = '░';
            }
            if c.flags & (flags::FAILED | flags::UNFINISHED) != 0 {
                style = style.add_modifier(Modifier::ITALIC);
            }
            buf[(g.timeline.x + x as u16, y)].set_char(ch).set_style(style);
        }
        if let Row::Rank(i) | Row::Thread(i, _) = row {
            labels(buf, g.timeline.x, y, &cells, names_of, name_ok, app);
            critical_path(buf, g.timeline.x, y, app, lod.ranks[*i].rank, n, &mut on_path);
            if lines == 2 {
                regions(buf, g.timeline.x, y - 1, app, lod.ranks[*i].rank, n, &mut band);
            }
        }
    }
    collective(buf, g, app, &shown);
    message_lines(buf, g, app, &shown, &rows);
    // The cursor and the selection.
    let cc = app.cursor_col();
    if cc >= 0 && (cc as usize) < n {
        if let Some(k) = shown.rows.iter().position(|(ri, _)| *ri == app.cursor_row) {
            let cell = &mut buf[(g.timeline.x + cc as u16, g.timeline.y + shown.line(k) as u16)];
            if cell.symbol() == " " {
                cell.set_char('┃');
            }
            cell.modifier.insert(Modifier::REVERSED);
        }
    }
}

/// The critical path on the calls line `y` of world rank `rank`, when shown
/// (`x`): the columns where the path runs on this rank get a red
/// background (a gap, computation on the path, a red `─`).
fn critical_path(buf: &mut Buffer, x0: u16, y: u16, app: &App, rank: i32, n: usize, cols: &mut Vec<bool>) {
    if !app.show_critical {
        return;
    }
    let Some(an) = app.an.as_deref() else { return };
    an.critical.columns(rank, app.view.t0, app.view.t1, n, cols);
    for (x, _) in cols.iter().enumerate().filter(|(_, on)| **on) {
        let cell = &mut buf[(x0 + x as u16, y)];
        if cell.symbol() == " " && !cell.modifier.contains(Modifier::REVERSED) {
            cell.set_char('─').set_fg(colors::CRITICAL);
        }
        cell.set_bg(colors::CRITICAL_BG);
    }
}

/// The band of user regions of world rank `rank` on line `y`: per column
/// the innermost region there, as `▄` in the region's colour, with its
/// name (reversed) where it fits.
fn regions(buf: &mut Buffer, x0: u16, y: u16, app: &App, rank: i32, n: usize, cols: &mut Vec<Option<(u16, u32)>>) {
    let Some(an) = app.an.as_deref() else { return };
    let Some(regs) = an.regions_of(rank) else { return };
    regs.columns(app.view, n, cols);
    let mut x = 0;
    while x < n {
        let Some(id) = cols[x] else {
            x += 1;
            continue;
        };
        let end = x + cols[x..].iter().take_while(|c| **c == Some(id)).count();
        let name = an.an.model.name(regs.get(id).name);
        let color = region_color(name);
        let len = name.chars().count();
        if end - x >= len + 2 {
            let style = Style::default().fg(color).add_modifier(Modifier::REVERSED);
            for k in x..end {
                buf[(x0 + k as u16, y)].set_char(' ').set_style(style);
            }
            put(buf, x0 + (x + (end - x - len) / 2) as u16, y, name, len as u16, style);
        } else {
            for k in x..end {
                buf[(x0 + k as u16, y)].set_char('▄').set_style(Style::default().fg(color));
            }
        }
        x = end;
    }
}

/// The label of a row and its style (incomplete ranks stand out).
fn row_label(app: &App, lod: &Lod, row: Row) -> (String, Style) {
    let threaded = |i: usize| !app.thread_lanes(i).is_empty();
    match row {
        Row::Thread(i, lane) => {
            let lanes = app.thread_lanes(i);
            let k = lanes.iter().position(|&(_, l)| l == lane).unwrap_or(0);
            let thread = lanes.get(k).map(|x| x.0).unwrap_or(0);
            // The rank's number on its first lane, the thread's on each.
            let rank = if k == 0 { format!("r{}", lod.ranks[i].rank) } else { String::new() };
            let w = format!("r{}", lod.ranks[i].rank).len();
            (format!("{rank:<w$} t{thread}"), Style::default())
        }
        Row::Rank(i) if threaded(i) => {
            (format!("▸r{} {}t", lod.ranks[i].rank, app.thread_lanes(i).len()), Style::default())
        }
        Row::Rank(i) => {
            let r = &lod.ranks[i];
            match &r.state {
                trace_lod::RankState::Complete => (format!("r{}", r.rank), Style::default()),
                trace_lod::RankState::Partial(_) => (format!("r{}!", r.rank), Style::default().fg(colors::WAIT)),
                trace_lod::RankState::Missing => (format!("r{}?", r.rank), Style::default().fg(colors::WAIT)),
            }
        }
        Row::Group(g) => (format!("▸{}", app.groups[g].name), Style::default().add_modifier(Modifier::BOLD)),
    }
}

/// Cells of a folded group: the members' cells added up; the dominant
/// call is the one of the member with the most time in MPI there.
fn merged_cells(lod: &Lod, members: &[usize], v: View, n: usize, out: &mut Vec<Cell>) {
    out.clear();
    out.resize(n, Cell::default());
    let mut best = vec![-1i64; n];
    let mut tmp = Vec::new();
    for &m in members {
        lod.ranks[m].data.cells(v.t0, v.t1, n, &mut tmp);
        for (k, c) in tmp.iter().enumerate() {
            let o = &mut out[k];
            o.count += c.count;
            o.busy += c.busy;
            o.flags |= c.flags;
            if c.dominant.is_some() && c.busy > best[k] {
                best[k] = c.busy;
                o.dominant = c.dominant;
            }
        }
    }
}

/// Names on runs of columns covered by one call, where they fit.
fn labels(buf: &mut Buffer, x0: u16, y: u16, cells: &[Cell], lod: &Lod, name_ok: &[bool], app: &App) {
    let mut x = 0;
    while x < cells.len() {
        let Some(e) = cells[x].event else {
            x += 1;
            continue;
        };
        let end = x + cells[x..].iter().take_while(|c| c.event == Some(e)).count();
        let name = cells[x].dominant.map(|d| lod.name(d)).unwrap_or("");
        let short = name.strip_prefix("MPI_").unwrap_or(name);
        let len = short.chars().count();
        if end - x >= len + 2 && (app.filter.calls.is_empty() || cells[x].dominant.is_some_and(|d| name_ok[d as usize]))
        {
            let at = x + (end - x - len) / 2;
            let style = Style::default().fg(call_color(name)).add_modifier(Modifier::REVERSED);
            for k in x..end {
                buf[(x0 + k as u16, y)].set_char(' ').set_style(style);
            }
            put(buf, x0 + at as u16, y, short, len as u16, style);
        }
        x = end;
    }
}

fn axis(buf: &mut Buffer, g: &Geometry, app: &App, lod: &Lod) {
    let n = g.axis.width as usize;
    let v = app.view;
    let origin = lod.span().0;
    let step = tick_step(v.span() as f64 / (n as f64 / 12.0));
    let dim = Style::default().add_modifier(Modifier::DIM);
    let mut t = (v.t0 - origin).div_euclid(step) * step;
    let mut free_from = 0i64;
    while origin + t < v.t1 {
        let x = v.col_of(origin + t, n);
        let label = fmt_time(t, step);
        let len = label.chars().count() as i64;
        if x >= free_from && x >= 0 && x + len <= n as i64 {
            put(buf, g.axis.x + x as u16, g.axis.y, &label, len as u16, Style::default());
            free_from = x + len + 1;
        } else if x >= 0 && x < n as i64 && x >= free_from {
            put(buf, g.axis.x + x as u16, g.axis.y, "╷", 1, dim);
        }
        t += step;
    }
    put(buf, g.labels.x, g.axis.y, "rank", g.labels.width - 1, dim);
    let cc = app.cursor_col();
    if let Some(m) = app.mark {
        let (a, b) = (v.col_of(m, n).min(cc), v.col_of(m, n).max(cc));
        for x in a.max(0)..=b.min(n as i64 - 1) {
            buf[(g.axis.x + x as u16, g.axis.y)].modifier.insert(Modifier::REVERSED);
        }
    }
    if cc >= 0 && (cc as usize) < n {
        let cell = &mut buf[(g.axis.x + cc as u16, g.axis.y)];
        if cell.symbol() == " " {
            cell.set_char('▼');
        }
        cell.modifier.insert(Modifier::BOLD);
    }
}

/// Underlines the members of the collective instance under the cursor.
fn collective(buf: &mut Buffer, g: &Geometry, app: &App, shown: &Shown) {
    let (Some(an), Some(lod)) = (app.an.as_deref(), app.lod.as_ref()) else { return };
    let Some((i, j)) = app.cursor_call() else { return };
    let rank = lod.ranks[i].rank;
    let c = lod.ranks[i].data.call(j);
    let Some(idx) = an.model_call(rank, c.t_start, lod.name(c.name)) else { return };
    let Some(&k) = an.colls_of(rank, idx).first() else { return };
    let Some(&inst) = an.coll_instance.get(rank as usize).and_then(|v| v.get(k)) else { return };
    let Some(inst) = an.an.collectives.instances.get(inst as usize) else { return };
    let n = g.timeline.width as i64;
    for mb in &an.an.collectives.members[inst.first as usize..(inst.first + inst.n) as usize] {
        let Some(li) = lod.ranks.binary_search_by_key(&(mb.rank as i32), |r| r.rank).ok() else { continue };
        let Some(y) = shown.line_of_rank(li) else { continue };
        let (a, b) = (an.raw(mb.rank as i32, mb.arrival), an.raw(mb.rank as i32, mb.end));
        let (xa, xb) = (app.view.col_of(a, n as usize), app.view.col_of((b - 1).max(a), n as usize));
        for x in xa.max(0)..=xb.min(n - 1) {
            let cell = &mut buf[(g.timeline.x + x as u16, g.timeline.y + y as u16)];
            cell.modifier.insert(Modifier::UNDERLINED | Modifier::BOLD);
        }
    }
}

/// Lines from send to receive of the matched messages in view, when few
/// enough are there to be told apart. An end on a rank scrolled out of view
/// is cut at the edge of the timeline with an arrow towards it (`↑`, `↓`);
/// an end inside a folded group is drawn on the group's row.
fn message_lines(buf: &mut Buffer, g: &Geometry, app: &App, shown: &Shown, rows: &[Row]) {
    let (Some(an), Some(lod)) = (app.an.as_deref(), app.lod.as_ref()) else { return };
    let v = app.view;
    if an.messages.count_starting(v.t0, v.t1) > 100 * MAX_LINES {
        return;
    }
    // The row of every lod rank: its own, or its folded group's.
    let mut row_of_lod = vec![None; lod.ranks.len()];
    // Ranks with thread lanes: (row, lane) of each.
    let mut lanes_of_lod: Vec<Vec<(usize, usize)>> = vec![Vec::new(); lod.ranks.len()];
    for (k, r) in rows.iter().enumerate() {
        match r {
            Row::Rank(i) => row_of_lod[*i] = Some(k),
            Row::Thread(i, lane) => {
                row_of_lod[*i].get_or_insert(k);
                lanes_of_lod[*i].push((k, *lane));
            }
            Row::Group(gi) => app.groups[*gi].members.iter().for_each(|&m| row_of_lod[m] = Some(k)),
        }
    }
    let h = g.timeline.height as i64;
    // Timeline line of a rank's calls; outside `0..h` when scrolled away.
    // The lane of the thread in a call at `t`, else the rank's first row.
    let line_of = |rank: i32, t: i64, edge: Edge| {
        let i = lod.ranks.binary_search_by_key(&rank, |r| r.rank).ok()?;
        let lane = an.threads.lane_at(rank, t, edge);
        let busy = lanes_of_lod[i].iter().find(|(_, l)| Some(*l) == lane);
        let k = busy.map(|x| x.0).or(row_of_lod[i])? as i64 - app.scroll as i64;
        Some(k * shown.lines as i64 + shown.lines as i64 - 1)
    };
    let mut lines = Vec::new();
    for m in an.messages.overlapping(v.t0, v.t1) {
        let (Some(ys), Some(yr)) = (line_of(m.src, m.t_send, Edge::Start), line_of(m.dst, m.t_recv, Edge::End)) else {
            continue;
        };
        if ys == yr || (ys < 0 && yr < 0) || (ys >= h && yr >= h) {
            continue;
        }
        lines.push((ys, yr, m.t_send, m.t_recv));
        if lines.len() > MAX_LINES {
            return;
        }
    }
    let n = g.timeline.width as i64;
    let style = Style::default().fg(Color::Reset).add_modifier(Modifier::BOLD);
    let mut set = |x: i64, y: i64, ch: char| {
        if x >= 0 && x < n && y >= 0 && y < h {
            buf[(g.timeline.x + x as u16, g.timeline.y + y as u16)].set_char(ch).set_style(style);
        }
    };
    for (ys, yr, ts, tr) in lines {
        let (xs, xr) = (v.col_of(ts, n as usize), v.col_of(tr, n as usize));
        let dy = yr - ys;
        let x_at = |y: i64| xs + (xr - xs) * (y - ys) / dy;
        for k in 1..dy.abs() {
            let ch = match ((xr - xs).signum(), dy.signum()) {
                (0, _) => '│',
                (a, b) if a == b => '╲',
                _ => '╱',
            };
            let y = ys + k * dy.signum();
            set(x_at(y), y, ch);
        }
        set(xs, ys, '•');
        set(xr, yr, if xr >= xs { '▸' } else { '◂' });
        // Where an end is out of view, an arrow at the edge points to it.
        for end in [ys, yr] {
            if end < 0 {
                set(x_at(0), 0, '↑');
            } else if end >= h {
                set(x_at(h - 1), h - 1, '↓');
            }
        }
    }
}

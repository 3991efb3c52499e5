//! Drawing: a pure function of the [`App`] state onto a ratatui frame.

mod panels;
mod timeline;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::App;
use crate::keys::{BINDINGS, MOUSE, SEARCH};
use crate::view::fmt_dur;

/// Colours of call kinds, from the viewers' palette (its 256-colour form).
pub mod colors {
    use ratatui::style::Color;
    use trace_view::CallKind;

    const fn of(kind: CallKind) -> Color {
        Color::Indexed(kind.swatch().xterm)
    }
    pub const SEND: Color = of(CallKind::Send);
    pub const RECV: Color = of(CallKind::Recv);
    pub const SENDRECV: Color = of(CallKind::Sendrecv);
    pub const WAIT: Color = of(CallKind::Wait);
    pub const BARRIER: Color = of(CallKind::Barrier);
    /// Every collective but barriers.
    pub const COLLECTIVE: Color = of(CallKind::AllToAll);
    pub const OTHER: Color = of(CallKind::Other);
    /// Calls a search filtered out.
    pub const FILTERED: Color = Color::Indexed(250);
    /// The critical path: background under its calls (dark red, so every
    /// call colour stays readable on it) and the mark of its gaps.
    pub const CRITICAL_BG: Color = Color::Indexed(52);
    pub const CRITICAL: Color = Color::Indexed(196);
}

/// The colour of a call.
pub fn call_color(name: &str) -> Color {
    Color::Indexed(trace_view::palette::swatch_of(name).xterm)
}

/// Colours of user regions: muted medium tones of the 256-colour palette,
/// apart from the call colours, readable on dark and light backgrounds.
const REGION_COLORS: [u8; 12] = [65, 67, 71, 96, 98, 107, 131, 133, 137, 139, 143, 30];

/// The colour of a user region, by its name (the same in every trace).
pub fn region_color(name: &str) -> Color {
    let h = name.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193));
    Color::Indexed(REGION_COLORS[(h % REGION_COLORS.len() as u32) as usize])
}

/// The legend: (kind, colour).
pub const LEGEND: [(&str, Color); 7] = [
    ("send", colors::SEND),
    ("recv", colors::RECV),
    ("sendrecv", colors::SENDRECV),
    ("wait", colors::WAIT),
    ("barrier", colors::BARRIER),
    ("collective", colors::COLLECTIVE),
    ("other", colors::OTHER),
];

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    let g = app.geometry(area);
    let buf = f.buffer_mut();
    if g.too_small {
        too_small(buf, area);
        return;
    }
    title(buf, g.title, app);
    status(buf, g.status, app);
    match (&app.lod, &app.lod_error) {
        (_, Some(e)) => centered(
            buf,
            Rect::new(area.x, g.axis.y, area.width, g.labels.height + 1),
            &[
                Line::from(Span::styled("Cannot open the trace", Style::default().add_modifier(Modifier::BOLD))),
                Line::from(e.clone()),
                Line::from(""),
                Line::from("q quits"),
            ],
        ),
        (None, None) => {
            let pct = app.loader.as_ref().map(|l| l.progress.fraction() * 100.0).unwrap_or(0.0);
            centered(
                buf,
                Rect::new(area.x, g.axis.y, area.width, g.labels.height + 1),
                &[Line::from(format!("Building the level of detail of {}… {pct:.0}%", app.dir.display()))],
            );
        }
        (Some(lod), None) => timeline::draw(buf, &g, app, lod),
    }
    if let Some(p) = g.panel {
        panels::draw(buf, p, app);
    }
    if app.help {
        help(f, area, app);
    }
}

fn too_small(buf: &mut Buffer, area: Rect) {
    let lines = [
        Line::from("Terminal too small"),
        Line::from(format!(
            "{}x{}: need at least {}x{}",
            area.width,
            area.height,
            crate::app::MIN_SIZE.0,
            crate::app::MIN_SIZE.1
        )),
        Line::from("q quits"),
    ];
    centered(buf, area, &lines);
}

/// Writes lines centred in `area`.
fn centered(buf: &mut Buffer, area: Rect, lines: &[Line]) {
    let top = area.y + area.height.saturating_sub(lines.len() as u16) / 2;
    for (i, l) in lines.iter().enumerate() {
        let y = top + i as u16;
        if y >= area.y + area.height {
            break;
        }
        let w = (l.width() as u16).min(area.width);
        buf.set_line(area.x + (area.width - w) / 2, y, l, w);
    }
}

/// Writes `text` at (x, y), clipped to `max` columns.
fn put(buf: &mut Buffer, x: u16, y: u16, text: &str, max: u16, style: Style) {
    buf.set_stringn(x, y, text, max as usize, style);
}

fn title(buf: &mut Buffer, r: Rect, app: &App) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    if let Some(m) = &app.message {
        // Feedback on what the user just did takes the title line (Esc clears it).
        let line = Line::from(Span::styled(m.clone(), bold));
        buf.set_line(r.x, r.y, &line, r.width);
        return;
    }
    let mut spans = vec![Span::styled("mpitrace tui", bold), Span::raw("  "), Span::raw(app.dir.display().to_string())];
    if let Some(lod) = &app.lod {
        spans.push(Span::raw(format!("  {} ranks, {} calls", lod.ranks.len(), lod.calls())));
        let bad = lod.ranks.iter().filter(|r| r.state != trace_lod::RankState::Complete).count();
        if bad > 0 {
            spans.push(Span::styled(format!("  {bad} incomplete"), Style::default().fg(colors::WAIT)));
        }
        if !lod.problems.is_empty() {
            spans.push(Span::styled(
                format!("  {} problems (6)", lod.problems.len()),
                Style::default().fg(colors::WAIT),
            ));
        }
        if app.an.is_none() {
            let s = match &app.an_error {
                Some(_) => "  analyses failed (6)".to_string(),
                None => "  analysing…".to_string(),
            };
            spans.push(Span::styled(s, Style::default().add_modifier(Modifier::DIM)));
        }
    }
    buf.set_line(r.x, r.y, &Line::from(spans), r.width);
}

fn status(buf: &mut Buffer, r: Rect, app: &App) {
    if let Some(p) = &app.prompt {
        let line = Line::from(vec![
            Span::styled("/", Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(p.clone()),
            Span::styled(" ", Style::default().add_modifier(Modifier::REVERSED)),
            Span::styled(
                "  Enter: search  Esc: cancel  (? lists the syntax)",
                Style::default().add_modifier(Modifier::DIM),
            ),
        ]);
        buf.set_line(r.x, r.y, &line, r.width);
        return;
    }
    let v = app.view;
    let mut s = format!("{} – {} ({})", app.fmt_abs(v.t0), app.fmt_abs(v.t1), fmt_dur(v.span()));
    if let Some(lod) = &app.lod {
        if let Some(i) = app.cursor_rank() {
            s += &format!(" │ r{} @ {}", lod.ranks[i].rank, app.fmt_abs(app.cursor_t));
        } else {
            s += &format!(" │ @ {}", app.fmt_abs(app.cursor_t));
        }
    }
    if let Some(m) = app.mark {
        s += &format!(" │ sel {}", fmt_dur((app.cursor_t - m).abs()));
    }
    if !app.filter.is_empty() {
        s += &format!(" │ /{}", app.filter.text);
    }
    let hint = " ? help";
    let w = r.width.saturating_sub(hint.len() as u16);
    put(buf, r.x, r.y, &s, w, Style::default());
    put(buf, r.x + w, r.y, hint, hint.len() as u16, Style::default().add_modifier(Modifier::DIM));
}

/// The lines of the help.
pub fn help_lines() -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut out = vec![Line::from(Span::styled("Keys", bold))];
    for b in BINDINGS {
        out.push(Line::from(format!("  {:<12} {}", b.label, b.help)));
    }
    out.push(Line::from(Span::styled("Mouse", bold)));
    for (k, h) in MOUSE {
        out.push(Line::from(format!("  {k:<12} {h}")));
    }
    out.push(Line::from(Span::styled("Search (/), terms combined", bold)));
    for (k, h) in SEARCH {
        out.push(Line::from(format!("  {k:<20} {h}")));
    }
    out.push(Line::from(Span::styled("Colours", bold)));
    let mut legend = vec![Span::raw("  ")];
    for (name, c) in LEGEND {
        legend.push(Span::styled("██", Style::default().fg(c)));
        legend.push(Span::raw(format!(" {name}  ")));
    }
    out.push(Line::from(legend));
    out.push(Line::from("  ░▒▓█ share of the column's time in MPI; labels on calls wide enough"));
    out.push(Line::from("  • send  ▸◂ receive of a message line; underlined: the collective under the cursor"));
    out
}

fn help(f: &mut Frame, area: Rect, app: &App) {
    let r = Rect::new(area.x + 1, area.y + 1, area.width - 2, area.height - 2);
    let lines = help_lines();
    let inner_h = r.height.saturating_sub(2) as usize;
    let cols = if r.width >= 120 && lines.len() > inner_h { 2 } else { 1 };
    let per = lines.len().div_ceil(cols);
    let scroll = app.help_scroll.min(per.saturating_sub(inner_h));
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Help: ↑↓ PgUp PgDn scroll, any other key closes ")
        .title_style(Style::default().add_modifier(Modifier::BOLD));
    f.render_widget(Clear, r);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let w = inner.width / cols as u16;
    for c in 0..cols {
        let part: Vec<Line> = lines.iter().skip(c * per).take(per).cloned().collect();
        let rr = Rect::new(inner.x + c as u16 * w, inner.y, w, inner.height);
        f.render_widget(Paragraph::new(part).scroll((scroll as u16, 0)).wrap(Wrap { trim: false }), rr);
    }
}

//! The HTML report: one self-contained file (inline CSS and SVG, no
//! scripts, no external assets) that people open in a browser and CI
//! systems archive.
//!
//! It renders the same [`document`] as the text and Markdown reports
//! (tables, bars) and draws the [`Figure`]s the document places: the
//! timeline overview (per rank, or group of ranks, the share of time in MPI
//! in each of [`BINS`] time bins, with the critical path drawn over it),
//! the communication matrix as a heatmap, and the collective costs (time and
//! waiting per operation, waiting per rank). The output is well-formed XML
//! (XHTML syntax), so any XML parser can check it.

use std::fmt::Write;

use crate::matrix::Matrix;
use crate::report::{document, Align, Analyses, Block, Figure, Report, Table, Tone};
use crate::{fmt_bytes, fmt_ns, par_map};

/// Time bins of the timeline overview.
pub const BINS: usize = 240;
/// Largest number of rows of the timeline and of the heatmap (ranks are
/// grouped beyond).
pub const MAX_ROWS: usize = 64;

/// What the plots need beyond the [`Report`] (computed from the model).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overview {
    /// Time range of the timeline (ns, reference clock).
    pub t0: i64,
    pub t1: i64,
    /// Per row: its first and last rank and the share of time in MPI per bin
    /// (0..1, averaged over the row's ranks).
    pub rows: Vec<(usize, usize, Vec<f32>)>,
    /// Critical path stretches as (row, start, end).
    pub path: Vec<(usize, i64, i64)>,
    /// The matrix, ranks grouped into at most [`MAX_ROWS`] blocks.
    pub matrix: Option<GroupedMatrix>,
}

/// A communication matrix over groups of ranks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupedMatrix {
    /// First and last rank of each group.
    pub groups: Vec<(usize, usize)>,
    /// `bytes[src_group * groups + dst_group]`.
    pub bytes: Vec<i64>,
    pub messages: Vec<u64>,
}

/// Splits `n` ranks into at most `max` contiguous groups.
fn groups(n: usize, max: usize) -> Vec<(usize, usize)> {
    let k = n.min(max);
    (0..k).map(|g| (g * n / k, (g + 1) * n / k - 1)).collect()
}

/// Computes the plots' data from the analyses.
pub fn overview(a: &Analyses) -> Overview {
    let m = &a.model;
    let (t0, t1) = m.span();
    let mut ov = Overview { t0, t1, ..Default::default() };
    let n = m.ranks.len();
    if n == 0 {
        return ov;
    }
    let rows = groups(n, MAX_ROWS);
    let width = ((t1 - t0).max(1) as f64) / BINS as f64;
    // Per row: time in MPI per bin, summed over the row's ranks (one
    // table per row, not per rank: a trace may claim many ranks).
    let sums: Vec<Vec<f64>> = par_map(&rows, |&(lo, hi)| {
        let mut bins = vec![0f64; BINS];
        for r in m.ranks.get(lo..=hi).unwrap_or(&[]) {
            for c in &r.calls {
                let (s, e) = ((c.t_start - t0) as f64, (c.t_end - t0) as f64);
                if e <= s {
                    continue;
                }
                let (b0, b1) = (((s / width) as usize).min(BINS - 1), ((e / width) as usize).min(BINS - 1));
                if b0 == b1 {
                    // Most calls lie within one bin.
                    bins[b0] += e - s;
                    continue;
                }
                for (b, v) in bins.iter_mut().enumerate().take(b1 + 1).skip(b0) {
                    let (lo, hi) = (b as f64 * width, (b + 1) as f64 * width);
                    *v += (e.min(hi) - s.max(lo)).max(0.0);
                }
            }
        }
        bins
    });
    for (&(lo, hi), sum) in rows.iter().zip(&sums) {
        let k = (hi - lo + 1) as f64;
        let v = sum.iter().map(|x| (x / k / width).clamp(0.0, 1.0) as f32).collect();
        ov.rows.push((lo, hi, v));
    }
    let row_of = |r: usize| (r < n).then(|| rows.partition_point(|&(_, b)| b < r));
    ov.path =
        a.critical_path.segments.iter().filter_map(|s| Some((row_of(s.rank as usize)?, s.start, s.end))).collect();
    ov.matrix = Some(group_matrix(&a.matrix, &groups(a.matrix.ranks, MAX_ROWS)));
    ov
}

fn group_matrix(mx: &Matrix, g: &[(usize, usize)]) -> GroupedMatrix {
    let k = g.len();
    let mut bytes = vec![0i64; k * k];
    let mut msgs = vec![0u64; k * k];
    // The group of a rank, found among the groups (sorted, disjoint) by
    // search: the pairs that communicated are summed, not every cell of
    // the ranks' square.
    let group = |r: usize| g.partition_point(|&(_, b)| b < r).min(k.saturating_sub(1));
    for p in &mx.pairs {
        let i = group(p.src as usize) * k + group(p.dst as usize);
        if let (Some(b), Some(m)) = (bytes.get_mut(i), msgs.get_mut(i)) {
            *b = b.saturating_add(p.bytes);
            *m += p.messages;
        }
    }
    GroupedMatrix { groups: g.to_vec(), bytes, messages: msgs }
}

/// Escapes text for HTML/XML content and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

const CSS: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2330;margin:0;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:8px 24px 40px;background:#fff}
h1{font-size:22px;margin:16px 0 8px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
nav{font-size:13px;margin:8px 0 4px}nav a{margin-right:12px;color:#2859a8;text-decoration:none}
p{margin:6px 0}.warn{background:#fff6dc;border-left:4px solid #e0a800;padding:4px 8px}
.bad{background:#fde8e6;border-left:4px solid #c0392b;padding:4px 8px;font-weight:600}.dim{color:#6b7485}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{padding:3px 9px;border-bottom:1px solid #e6e9ef}
th{background:#f0f2f6;text-align:left}td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
td.t-warn{color:#a86b00;font-weight:600}td.t-bad{color:#c0392b;font-weight:700}td.t-dim{color:#9aa2b1}td.t-good{color:#1e7b34}
.bars{display:grid;grid-template-columns:max-content 320px auto;gap:3px 10px;align-items:center;font-size:13px;margin:8px 0}
.bar{height:12px;background:#e8ebf0;border-radius:2px}.bar span{display:block;height:12px;background:#3b7dd8;border-radius:2px}
figure{margin:10px 0}figcaption{font-size:12px;color:#6b7485}svg text{font:11px system-ui,sans-serif;fill:#3a4252}
code{font-size:12px}footer{margin-top:32px;font-size:12px;color:#6b7485}
";

/// Colour of an MPI share: light grey (computing) to red (all in MPI).
fn share_color(f: f32) -> String {
    let f = f.clamp(0.0, 1.0);
    let mix = |a: f32, b: f32| (a + (b - a) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(234.0, 200.0), mix(238.0, 45.0), mix(243.0, 40.0))
}

/// Colour of a heatmap cell (`f` in 0..1, log scale already applied).
fn heat_color(f: f64) -> String {
    let f = f.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(238.0, 16.0), mix(243.0, 60.0), mix(250.0, 130.0))
}

fn rank_label(lo: usize, hi: usize) -> String {
    if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo}-{hi}")
    }
}

fn timeline_svg(ov: &Overview, out: &mut String) {
    if ov.rows.is_empty() || ov.t1 <= ov.t0 {
        return;
    }
    let (left, w) = (56.0, 960.0);
    let rh = (440.0 / ov.rows.len() as f64).clamp(5.0, 16.0);
    let h = rh * ov.rows.len() as f64;
    let bw = w / BINS as f64;
    let span = (ov.t1 - ov.t0) as f64;
    let _ = write!(
        out,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">",
        left + w + 4.0,
        h + 22.0,
        left + w + 4.0,
        h + 22.0
    );
    let label_every = (ov.rows.len() / 16).max(1);
    for (i, (lo, hi, bins)) in ov.rows.iter().enumerate() {
        let y = i as f64 * rh;
        if i % label_every == 0 {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 4.0,
                y + rh * 0.5 + 4.0,
                rank_label(*lo, *hi)
            );
        }
        // Runs of equal colour become one rectangle.
        let mut b = 0;
        while b < BINS {
            let c = share_color(bins[b]);
            let mut e = b + 1;
            while e < BINS && share_color(bins[e]) == c {
                e += 1;
            }
            let mean = bins[b..e].iter().sum::<f32>() / (e - b) as f32;
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{c}\"><title>rank {} at {}: {:.0}% in MPI</title></rect>",
                left + b as f64 * bw,
                y,
                (e - b) as f64 * bw + 0.05,
                rh - if rh > 6.0 { 1.0 } else { 0.0 },
                rank_label(*lo, *hi),
                fmt_ns(((b as f64 + 0.5) * span / BINS as f64) as i64),
                100.0 * mean
            );
            b = e;
        }
    }
    // The critical path: a line along each stretch, and jumps between ranks.
    let x = |t: i64| left + (t - ov.t0) as f64 / span * w;
    let y = |row: usize| row as f64 * rh + rh * 0.5;
    if !ov.path.is_empty() {
        let mut d = String::new();
        for (k, &(row, s, e)) in ov.path.iter().enumerate() {
            let _ =
                write!(d, "{}{:.1} {:.1} L{:.1} {:.1} ", if k == 0 { "M" } else { "L" }, x(s), y(row), x(e), y(row));
        }
        let _ = write!(
            out,
            "<path d=\"{}\" fill=\"none\" stroke=\"#111\" stroke-width=\"1.5\" stroke-linejoin=\"round\"><title>critical path</title></path>",
            d.trim_end()
        );
    }
    for k in 0..=4 {
        let t = k as f64 / 4.0;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{}\">{}</text>",
            left + t * w,
            h + 15.0,
            match k {
                0 => "start",
                4 => "end",
                _ => "middle",
            },
            fmt_ns((t * span) as i64)
        );
    }
    out.push_str("</svg><figcaption>Ranks (rows) over time: share of time in MPI per bin, from grey (computing) to red (all in MPI); the black line is the critical path.</figcaption></figure>\n");
}

fn matrix_svg(ov: &Overview, out: &mut String) {
    let Some(GroupedMatrix { groups: g, bytes, messages: msgs }) = &ov.matrix else { return };
    let k = g.len();
    let max = bytes.iter().copied().max().unwrap_or(0);
    if k == 0 || max <= 0 && msgs.iter().all(|&m| m == 0) {
        return;
    }
    let cell = (512.0 / k as f64).clamp(6.0, 40.0);
    let left = 48.0;
    let size = left + cell * k as f64;
    let _ = write!(
        out,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"{0:.0}\" height=\"{0:.0}\" viewBox=\"0 0 {0:.0} {0:.0}\">",
        size + 4.0
    );
    let label_every = (k / 16).max(1);
    let lmax = ((max.max(1)) as f64).ln_1p();
    for (i, &(a, b)) in g.iter().enumerate() {
        if i % label_every == 0 {
            let p = left + (i as f64 + 0.5) * cell;
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 4.0,
                p + 4.0,
                rank_label(a, b)
            );
            let _ = write!(
                out,
                "<text x=\"{p:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                left - 6.0,
                rank_label(a, b)
            );
        }
    }
    for s in 0..k {
        for d in 0..k {
            let (by, n) = (bytes[s * k + d], msgs[s * k + d]);
            let fill = if n == 0 { "#fafbfc".to_string() } else { heat_color((by.max(0) as f64).ln_1p() / lmax) };
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"><title>{} \u{2192} {}: {} in {} messages</title></rect>",
                left + d as f64 * cell,
                left + s as f64 * cell,
                cell - 1.0,
                cell - 1.0,
                rank_label(g[s].0, g[s].1),
                rank_label(g[d].0, g[d].1),
                fmt_bytes(by),
                n
            );
        }
    }
    out.push_str("</svg><figcaption>Point-to-point bytes from sender (row) to receiver (column), logarithmic colour scale; hover a cell for the numbers.</figcaption></figure>\n");
}

/// Collective costs from the report: per operation (the table's rows) time
/// split into waiting and the rest; waiting per rank (or group of ranks).
fn collectives_svg(r: &Report, out: &mut String) {
    let c = &r.collectives;
    let rows: Vec<&crate::collectives::CollSummary> = c.summaries.iter().take(crate::report::ROWS).collect();
    let max = rows.iter().map(|s| s.time_ns).max().unwrap_or(0);
    if rows.is_empty() || max <= 0 {
        return;
    }
    let (left, w, rh) = (260.0, 600.0, 18.0);
    let h = rh * rows.len() as f64 + 4.0;
    let _ = write!(
        out,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"collectives\" width=\"{0:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {0:.0} {h:.0}\">",
        left + w + 120.0
    );
    for (i, s) in rows.iter().enumerate() {
        let y = i as f64 * rh;
        let size = if s.size_hi == 0 {
            "0 B".to_string()
        } else {
            format!("{}..{}", fmt_bytes(s.size_lo), fmt_bytes(s.size_hi))
        };
        let label = format!("{} {} {size}", s.comm, s.call);
        let total = s.time_ns as f64 / max as f64 * w;
        let wait = s.wait_ns.clamp(0, s.time_ns) as f64 / max as f64 * w;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 13.0,
            esc(&label)
        );
        let _ = write!(
            out,
            "<rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{wait:.1}\" height=\"14\" fill=\"#c8372d\"><title>{}: waiting {} of {} in {} instances</title></rect>",
            y + 2.0,
            esc(&label),
            fmt_ns(s.wait_ns),
            fmt_ns(s.time_ns),
            s.instances
        );
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"14\" fill=\"#3b7dd8\"><title>{}: working {} (time minus waiting)</title></rect>",
            left + wait,
            y + 2.0,
            (total - wait).max(0.0),
            esc(&label),
            fmt_ns(s.time_ns - s.wait_ns.clamp(0, s.time_ns))
        );
        let _ = write!(out, "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>", left + total + 6.0, y + 13.0, fmt_ns(s.time_ns));
    }
    out.push_str("</svg><figcaption>Time in each collective operation summed over the ranks: waiting for the last to arrive (red) and the rest (blue).</figcaption></figure>\n");
    // Waiting per rank.
    let n = c.wait_by_rank.len();
    let wmax = c.wait_by_rank.iter().copied().max().unwrap_or(0);
    if n == 0 || wmax <= 0 {
        return;
    }
    let g = groups(n, 128);
    let (left, ch) = (56.0, 120.0);
    let cw = (720.0 / g.len() as f64).clamp(3.0, 24.0);
    let width = left + cw * g.len() as f64 + 4.0;
    let _ = write!(
        out,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"collective-wait\" width=\"{width:.0}\" height=\"{0:.0}\" viewBox=\"0 0 {width:.0} {0:.0}\">",
        ch + 20.0
    );
    let sums: Vec<(i64, u64)> = g
        .iter()
        .map(|&(a, b)| {
            (
                (a..=b).map(|r| c.wait_by_rank[r]).sum::<i64>(),
                (a..=b).map(|r| c.last_by_rank.get(r).copied().unwrap_or(0)).sum(),
            )
        })
        .collect();
    let smax = sums.iter().map(|s| s.0).max().unwrap_or(1).max(1) as f64;
    let _ = write!(out, "<text x=\"{:.1}\" y=\"12\" text-anchor=\"end\">{}</text>", left - 4.0, fmt_ns(smax as i64));
    for (i, (&(a, b), &(wait, last))) in g.iter().zip(&sums).enumerate() {
        let hh = wait as f64 / smax * ch;
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{hh:.1}\" fill=\"#c8372d\"><title>rank {}: waited {} in collectives, arrived last {} times</title></rect>",
            left + i as f64 * cw,
            ch - hh,
            (cw - 1.0).max(1.0),
            rank_label(a, b),
            fmt_ns(wait),
            last
        );
    }
    let _ = write!(out, "<text x=\"{left:.1}\" y=\"{:.1}\">rank 0</text>", ch + 14.0);
    let _ =
        write!(out, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">rank {}</text>", width - 4.0, ch + 14.0, n - 1);
    out.push_str("</svg><figcaption>Waiting in collectives per rank: the ranks that wait least are the ones the others wait for.</figcaption></figure>\n");
}

fn tone_class(t: Tone) -> &'static str {
    match t {
        Tone::Plain => "",
        Tone::Good => "t-good",
        Tone::Warn => "t-warn",
        Tone::Bad => "t-bad",
        Tone::Dim => "t-dim",
    }
}

fn table_html(t: &Table, out: &mut String) {
    out.push_str("<table><thead><tr>");
    for (h, a) in t.headers.iter().zip(&t.align) {
        let _ = write!(out, "<th{}>{}</th>", if *a == Align::Right { " class=\"r\"" } else { "" }, esc(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, (text, tone)) in r.iter().enumerate() {
            let mut class = tone_class(*tone).to_string();
            if t.align.get(i) == Some(&Align::Right) {
                class = format!("r {class}").trim().to_string();
            }
            // Leading spaces indent (the call tree's levels): kept, where
            // HTML would collapse them.
            let body = text.trim_start_matches(' ');
            let indent = "&nbsp;".repeat(text.len() - body.len());
            if class.is_empty() {
                let _ = write!(out, "<td>{indent}{}</td>", esc(body));
            } else {
                let _ = write!(out, "<td class=\"{class}\">{indent}{}</td>", esc(body));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

fn anchor(h: &str) -> String {
    let a: String = h.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let mut s = String::new();
    for part in a.split('-').filter(|p| !p.is_empty()) {
        if !s.is_empty() {
            s.push('-');
        }
        s.push_str(part);
    }
    s
}

/// Renders the report as one self-contained HTML page; `ov` adds the plots
/// (without it, e.g. for a report read back from JSON, they are left out).
pub fn render(r: &Report, ov: Option<&Overview>) -> String {
    render_page(&document(r), Some(r), ov)
}

/// Renders any report document (e.g. [`crate::check::diff_document`]) as a
/// self-contained page; its figures are left out.
pub fn render_document(doc: &[Block]) -> String {
    render_page(doc, None, None)
}

fn render_page(doc: &[Block], r: Option<&Report>, ov: Option<&Overview>) -> String {
    let mut out = String::with_capacity(64 << 10);
    let title = doc
        .iter()
        .find_map(|b| if let Block::Heading(h) = b { Some(h.clone()) } else { None })
        .unwrap_or_else(|| "mpitrace report".into());
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/><meta name=\"generator\" content=\"mpitrace {}\"/><title>{}</title><style>{CSS}</style></head>\n<body><main>\n",
        esc(env!("CARGO_PKG_VERSION")),
        esc(&title)
    );
    let headings: Vec<&String> =
        doc.iter().filter_map(|b| if let Block::Heading(h) = b { Some(h) } else { None }).skip(1).collect();
    let mut first = true;
    for b in doc {
        match b {
            Block::Heading(h) if first => {
                first = false;
                let _ = write!(out, "<h1>{}</h1>\n<nav>", esc(h));
                for h in &headings {
                    let _ = write!(out, "<a href=\"#{}\">{}</a>", anchor(h), esc(h));
                }
                out.push_str("</nav>\n");
            }
            Block::Heading(h) => {
                let _ = writeln!(out, "<h2 id=\"{}\">{}</h2>", anchor(h), esc(h));
            }
            Block::Para(s, tone) => {
                let class = match tone {
                    Tone::Bad => " class=\"bad\"",
                    Tone::Warn => " class=\"warn\"",
                    Tone::Dim => " class=\"dim\"",
                    _ => "",
                };
                let _ = writeln!(out, "<p{class}>{}</p>", esc(s.trim_start()));
            }
            Block::Table(t) => table_html(t, &mut out),
            Block::Bars(bars) => {
                out.push_str("<div class=\"bars\">\n");
                for (label, f, text) in bars {
                    let _ = writeln!(
                        out,
                        "<span>{}</span><div class=\"bar\"><span style=\"width:{:.1}%\"></span></div><span>{}</span>",
                        esc(label),
                        100.0 * f.clamp(0.0, 1.0),
                        esc(text)
                    );
                }
                out.push_str("</div>\n");
            }
            Block::Figure(Figure::Timeline) => {
                if let Some(ov) = ov {
                    timeline_svg(ov, &mut out)
                }
            }
            Block::Figure(Figure::Matrix) => {
                if let Some(ov) = ov {
                    matrix_svg(ov, &mut out)
                }
            }
            Block::Figure(Figure::Collectives) => {
                if let Some(r) = r {
                    collectives_svg(r, &mut out)
                }
            }
        }
    }
    let _ = write!(
        out,
        "<footer>mpitrace {} report (JSON schema {}). Call sites are shown as source lines where the trace was symbolized, else as module+offset (<code>addr2line -e MODULE OFFSET</code>).</footer>\n</main></body></html>\n",
        esc(env!("CARGO_PKG_VERSION")),
        crate::report::SCHEMA_VERSION
    );
    out
}

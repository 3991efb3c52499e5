//! The report: every analysis of a trace together, rendered as terminal
//! text, Markdown or JSON.
//!
//! [`analyze`] runs the analyses on a model; [`Analyses::report`] gives the
//! serializable [`Report`] (the JSON output, schema [`SCHEMA_VERSION`],
//! documented in `analyzers/REPORT-SCHEMA.md`); [`document`] lays a report
//! out as headings, paragraphs and tables, which [`render_text`] and
//! [`render_markdown`] print.

use serde::{Deserialize, Serialize};

use crate::calltree::{call_tree, CallTree};
use crate::collectives::{collectives, CollReport, Collectives};
use crate::counters::{counters, CounterReport};
use crate::critical_path::{critical_path, CriticalPath};
use crate::iorma::{io_rma, IoReport, IoRma, RmaReport};
use crate::matching::{correct_clocks, match_messages, ClockCorrection, MatchSummary, Matching};
use crate::matrix::{matrix, DenseMatrix, Matrix, Pair};
use crate::model::Model;
use crate::profile::{profile, Histogram, Profile};
use crate::waitstates::{wait_states, Analysis, WaitStates};
use crate::{fmt_bytes, fmt_ns};

/// Version of the JSON report schema.
pub const SCHEMA_VERSION: u32 = 1;

/// What the trace is of.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceInfo {
    pub dir: String,
    pub command: Vec<String>,
    pub ranks: usize,
    pub hosts: Vec<String>,
    pub mpi_library: String,
    /// `MPI_Get_version` ("3.1").
    #[serde(default)]
    pub mpi_version: String,
    /// The library's ABI ("MPICH", "Open MPI").
    #[serde(default)]
    pub mpi_abi: String,
    pub tool_version: String,
    pub rows: u64,
    /// Whether every rank finalized.
    pub complete: bool,
    /// Ranks that did not finalize or are missing, with why.
    pub incomplete_ranks: Vec<(i32, String)>,
    /// Damaged or missing files, one line each.
    pub problems: Vec<String>,
}

/// The matrix in the report: full when small, top pairs always.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MatrixReport {
    pub ranks: usize,
    pub bytes: i64,
    pub messages: u64,
    pub top_pairs: Vec<Pair>,
    /// The whole matrix when there are at most [`FULL_MATRIX`] ranks.
    pub full: Option<DenseMatrix>,
}

/// Largest number of ranks for which the report includes the full matrix.
pub const FULL_MATRIX: usize = 64;

/// Everything, serializable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always "mpitrace-report".
    pub schema: String,
    pub schema_version: u32,
    pub trace: TraceInfo,
    pub profile: Profile,
    pub messages: MatchSummary,
    pub clocks: ClockCorrection,
    pub collectives: CollReport,
    pub wait_states: WaitStates,
    pub matrix: MatrixReport,
    pub critical_path: CriticalPath,
    /// MPI-IO.
    #[serde(default)]
    pub io: IoReport,
    /// One-sided communication.
    #[serde(default)]
    pub rma: RmaReport,
    /// The call-tree profile, when the trace has call paths.
    #[serde(default, skip_serializing_if = "CallTree::is_empty")]
    pub call_tree: CallTree,
    /// Hardware counters, when recorded.
    #[serde(default, skip_serializing_if = "CounterReport::is_empty")]
    pub counters: CounterReport,
}

/// Full results of every analysis (for viewers), with the model.
pub struct Analyses {
    pub model: Model,
    pub matching: Matching,
    pub clocks: ClockCorrection,
    pub collectives: Collectives,
    pub waits: Analysis,
    pub profile: Profile,
    pub matrix: Matrix,
    pub critical_path: CriticalPath,
    pub io_rma: IoRma,
    pub call_tree: CallTree,
    pub counters: CounterReport,
}

/// Runs every analysis. Clock violations are corrected first (the model's
/// times change; see [`crate::matching::correct_clocks`]).
pub fn analyze(model: Model) -> Analyses {
    analyze_timed(model).0
}

/// One analysis as [`analyze_timed`] ran it.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    pub name: &'static str,
    pub took: std::time::Duration,
    /// The process's peak resident memory when it ended, KiB (`VmHWM`;
    /// 0 where `/proc` does not tell): which analysis raised the peak.
    pub peak_rss_kib: u64,
}

/// The process's peak resident memory so far, KiB (0 if unknown).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:"));
    line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0)
}

/// [`analyze`], also returning the wall time of each analysis and the
/// memory peak after it.
pub fn analyze_timed(mut model: Model) -> (Analyses, Vec<Phase>) {
    let mut times = Vec::new();
    let mut t = std::time::Instant::now();
    let mut lap = |name: &'static str, times: &mut Vec<_>| {
        let now = std::time::Instant::now();
        times.push(Phase { name, took: now - t, peak_rss_kib: peak_rss_kib() });
        t = now;
    };
    let matching = match_messages(&model);
    lap("matching", &mut times);
    let clocks = correct_clocks(&mut model, &matching);
    lap("clock correction", &mut times);
    let colls = collectives(&model);
    lap("collectives", &mut times);
    let waits = wait_states(&model, &matching, &colls);
    lap("wait states", &mut times);
    let prof = profile(&model);
    lap("profile", &mut times);
    let mat = matrix(&model);
    lap("matrix", &mut times);
    let cp = critical_path(&model, &waits.causes);
    lap("critical path", &mut times);
    let io_rma = io_rma(&model);
    lap("I/O and one-sided", &mut times);
    let tree = call_tree(&model, &waits);
    lap("call tree", &mut times);
    let ctr = counters(&model);
    lap("counters", &mut times);
    let an = Analyses {
        model,
        matching,
        clocks,
        collectives: colls,
        waits,
        profile: prof,
        matrix: mat,
        critical_path: cp,
        io_rma,
        call_tree: tree,
        counters: ctr,
    };
    (an, times)
}

impl Analyses {
    pub fn report(&self) -> Report {
        let m = &self.model;
        let trace = TraceInfo {
            dir: String::new(),
            command: m.meta.command.clone(),
            ranks: m.ranks.len(),
            hosts: m.meta.hosts.clone(),
            mpi_library: m
                .meta
                .mpi_library
                .lines()
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            mpi_version: m.meta.mpi_version.clone(),
            mpi_abi: m.meta.mpi_abi.clone(),
            tool_version: m.meta.tool_version.clone(),
            rows: m.rows(),
            complete: m.ranks.iter().all(|r| r.completeness == trace_format::Completeness::Complete),
            incomplete_ranks: m
                .ranks
                .iter()
                .filter(|r| r.completeness != trace_format::Completeness::Complete)
                .map(|r| (r.rank, crate::profile::state(&r.completeness)))
                .collect(),
            problems: m.problems.iter().map(|p| p.to_string()).collect(),
        };
        let mx = &self.matrix;
        Report {
            schema: "mpitrace-report".into(),
            schema_version: SCHEMA_VERSION,
            trace,
            profile: self.profile.clone(),
            messages: self.matching.summary.clone(),
            clocks: self.clocks.clone(),
            collectives: self.collectives.report.clone(),
            wait_states: self.waits.states.clone(),
            matrix: MatrixReport {
                ranks: mx.ranks,
                bytes: mx.total_bytes(),
                messages: mx.total_messages(),
                top_pairs: mx.top(10),
                full: mx.dense(FULL_MATRIX),
            },
            // The segments are for plots (see [`crate::html::overview`]), not the JSON.
            critical_path: CriticalPath { segments: Vec::new(), ..self.critical_path.clone() },
            io: self.io_rma.io.clone(),
            rma: self.io_rma.rma.clone(),
            call_tree: self.call_tree.clone(),
            counters: self.counters.clone(),
        }
    }
}

/// Cell alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// How a cell should stand out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Warn,
    Bad,
    Dim,
}

/// A table: headers, alignment per column, rows of (text, tone).
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub headers: Vec<String>,
    pub align: Vec<Align>,
    pub rows: Vec<Vec<(String, Tone)>>,
}

impl Table {
    pub fn new(cols: &[(&str, Align)]) -> Table {
        Table {
            headers: cols.iter().map(|c| c.0.to_string()).collect(),
            align: cols.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }
    pub fn row(&mut self, cells: Vec<(String, Tone)>) {
        self.rows.push(cells);
    }
}

/// A block of a report document.
#[derive(Clone, Debug)]
pub enum Block {
    Heading(String),
    Para(String, Tone),
    Table(Table),
    /// Labelled horizontal bars: (label, fraction 0..1 of the bar, value text).
    Bars(Vec<(String, f64, String)>),
    /// A plot only the HTML report draws (the text and Markdown renderers skip it).
    Figure(Figure),
}

/// The plots of the HTML report, placed by [`document`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// Per rank over time: share of time in MPI, with the critical path.
    Timeline,
    /// Communication matrix heatmap.
    Matrix,
    /// Collective costs: time and waiting per operation, waiting per rank.
    Collectives,
}

fn plain(s: impl Into<String>) -> (String, Tone) {
    (s.into(), Tone::Plain)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn tone_frac(x: f64, warn: f64, bad: f64) -> Tone {
    if x >= bad {
        Tone::Bad
    } else if x >= warn {
        Tone::Warn
    } else {
        Tone::Plain
    }
}

fn hist_bars(h: &Histogram) -> Block {
    let max = h.buckets.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    Block::Bars(
        h.buckets
            .iter()
            .map(|b| {
                let label =
                    if b.hi == 0 { "0 B".to_string() } else { format!("{}..{}", fmt_bytes(b.lo), fmt_bytes(b.hi)) };
                (label, b.count as f64 / max, format!("{} msgs, {}", b.count, fmt_bytes(b.bytes)))
            })
            .collect(),
    )
}

/// How many rows the long tables show.
pub const ROWS: usize = 12;

/// Lays out a report.
pub fn document(r: &Report) -> Vec<Block> {
    let mut d = Vec::new();
    let t = &r.trace;
    let p = &r.profile;
    let cmd = if t.command.is_empty() { "?".to_string() } else { t.command.join(" ") };
    d.push(Block::Heading(format!("mpitrace report: {cmd}")));
    d.push(Block::Para(
        format!(
            "{} ranks on {} host{}, {}; {} rows{}",
            t.ranks,
            t.hosts.len(),
            if t.hosts.len() == 1 { "" } else { "s" },
            library_line(t),
            t.rows,
            if t.dir.is_empty() { String::new() } else { format!(" in {}", t.dir) }
        ),
        Tone::Plain,
    ));
    if !t.complete {
        let list: Vec<String> = t.incomplete_ranks.iter().take(8).map(|(r, s)| format!("rank {r} {s}")).collect();
        d.push(Block::Para(
            format!(
                "INCOMPLETE TRACE: {} of {} ranks did not finish ({}{}); the analyses cover what was recorded.",
                t.incomplete_ranks.len(),
                t.ranks,
                list.join("; "),
                if t.incomplete_ranks.len() > 8 { "; ..." } else { "" }
            ),
            Tone::Bad,
        ));
    }
    for pr in t.problems.iter().take(10) {
        d.push(Block::Para(format!("problem: {pr}"), Tone::Warn));
    }
    if t.problems.len() > 10 {
        d.push(Block::Para(format!("... and {} more problems", t.problems.len() - 10), Tone::Warn));
    }
    let tt = &p.totals;
    d.push(Block::Heading("Time".into()));
    d.push(Block::Para(
        format!(
            "wall {} (MPI_Init to MPI_Finalize); MPI {} of {} rank time = {}; compute imbalance (CV over ranks) {:.2}",
            fmt_ns(tt.wall_ns),
            fmt_ns(tt.mpi_ns),
            fmt_ns(tt.rank_ns),
            pct(tt.mpi_fraction),
            tt.compute_cv
        ),
        tone_frac(tt.mpi_fraction, 0.3, 0.5),
    ));
    d.push(Block::Figure(Figure::Timeline));
    let mut ranks: Vec<&crate::profile::RankProfile> = p.ranks.iter().collect();
    if ranks.len() > ROWS {
        ranks.sort_by(|a, b| b.mpi_fraction.total_cmp(&a.mpi_fraction));
        ranks.truncate(ROWS);
        d.push(Block::Para(format!("the {ROWS} ranks with the largest MPI share:"), Tone::Dim));
    }
    d.push(Block::Bars(
        ranks
            .iter()
            .map(|rp| {
                (
                    format!("rank {}", rp.rank),
                    rp.mpi_fraction,
                    format!(
                        "MPI {} ({}) compute {}{}",
                        fmt_ns(rp.mpi_ns),
                        pct(rp.mpi_fraction),
                        fmt_ns(rp.compute_ns),
                        if rp.state == "complete" {
                            String::new()
                        } else {
                            format!(" [{}]", rp.state.split(':').next().unwrap_or(""))
                        }
                    ),
                )
            })
            .collect(),
    ));
    d.push(Block::Heading("MPI calls".into()));
    let mut tb = Table::new(&[
        ("call", Align::Left),
        ("count", Align::Right),
        ("time", Align::Right),
        ("% MPI", Align::Right),
        ("min/rank", Align::Right),
        ("mean/rank", Align::Right),
        ("max/rank", Align::Right),
        ("CV", Align::Right),
        ("bytes", Align::Right),
    ]);
    for c in p.calls.iter().take(ROWS) {
        tb.row(vec![
            plain(&c.name),
            plain(c.count.to_string()),
            plain(fmt_ns(c.time_ns)),
            plain(pct(c.mpi_share)),
            plain(fmt_ns(c.time.min as i64)),
            plain(fmt_ns(c.time.mean as i64)),
            (format!("{} (r{})", fmt_ns(c.time.max as i64), c.time.max_rank), Tone::Plain),
            (format!("{:.2}", c.time.cv), tone_frac(c.time.cv, 0.25, 0.5)),
            plain(if c.bytes > 0 { fmt_bytes(c.bytes) } else { "-".into() }),
        ]);
    }
    d.push(Block::Table(tb));
    if !p.sites_by_time.is_empty() {
        d.push(Block::Heading("Call sites by time".into()));
        let mut cols = vec![
            ("call", Align::Left),
            ("site (lowest rank)", Align::Left),
            ("ranks", Align::Right),
            ("count", Align::Right),
            ("time", Align::Right),
            ("bytes", Align::Right),
        ];
        let located = p.sites_by_time.iter().take(ROWS / 2).any(|s| s.location.is_some());
        if located {
            cols.push(("function", Align::Left));
            cols.push(("module", Align::Left));
        }
        let mut tb = Table::new(&cols);
        for s in p.sites_by_time.iter().take(ROWS / 2) {
            let mut row = vec![
                plain(&s.call),
                plain(&s.site),
                plain(s.ranks.to_string()),
                plain(s.count.to_string()),
                plain(fmt_ns(s.time_ns)),
                plain(if s.bytes > 0 { fmt_bytes(s.bytes) } else { "-".into() }),
            ];
            if located {
                row.push(plain(s.location.as_ref().and_then(|l| l.function.clone()).unwrap_or_else(|| "-".into())));
                row.push(plain(s.module.clone().unwrap_or_else(|| "-".into())));
            }
            tb.row(row);
        }
        d.push(Block::Table(tb));
    }
    if !p.sites_by_bytes.is_empty() {
        d.push(Block::Heading("Call sites by bytes".into()));
        let mut tb = Table::new(&[
            ("call", Align::Left),
            ("site (lowest rank)", Align::Left),
            ("count", Align::Right),
            ("bytes", Align::Right),
        ]);
        for s in p.sites_by_bytes.iter().take(ROWS / 2) {
            tb.row(vec![plain(&s.call), plain(&s.site), plain(s.count.to_string()), plain(fmt_bytes(s.bytes))]);
        }
        d.push(Block::Table(tb));
    }
    if p.p2p_sizes.count() > 0 {
        d.push(Block::Heading("Point-to-point message sizes".into()));
        d.push(hist_bars(&p.p2p_sizes));
    }
    for cs in &p.coll_sizes {
        d.push(Block::Heading(format!("{} sizes (per rank)", cs.call)));
        d.push(hist_bars(&cs.sizes));
    }
    if !p.regions.is_empty() {
        d.push(Block::Heading("User regions".into()));
        let mut tb = Table::new(&[
            ("region", Align::Left),
            ("count", Align::Right),
            ("time", Align::Right),
            ("max/rank", Align::Right),
            ("CV", Align::Right),
        ]);
        for g in &p.regions {
            tb.row(vec![
                plain(&g.name),
                plain(g.count.to_string()),
                plain(fmt_ns(g.time_ns)),
                plain(format!("{} (r{})", fmt_ns(g.time.max as i64), g.time.max_rank)),
                plain(format!("{:.2}", g.time.cv)),
            ]);
        }
        d.push(Block::Table(tb));
    }
    d.extend(crate::counters::document(&r.counters));
    d.extend(crate::calltree::document(&r.call_tree));
    d.extend(crate::iorma::document(&IoRma { io: r.io.clone(), rma: r.rma.clone() }));
    // Wait states.
    let w = &r.wait_states;
    d.push(Block::Heading("Wait states".into()));
    let rank_time = tt.rank_ns.max(1) as f64;
    d.push(Block::Para(
        format!(
            "{} lost waiting for other ranks ({} of rank time)",
            fmt_ns(w.total_ns),
            pct(w.total_ns as f64 / rank_time)
        ),
        tone_frac(w.total_ns as f64 / rank_time, 0.1, 0.25),
    ));
    let mut tb = Table::new(&[
        ("pattern", Align::Left),
        ("time", Align::Right),
        ("%", Align::Right),
        ("calls", Align::Right),
        ("waiting", Align::Left),
        ("waited for", Align::Left),
        ("worst site", Align::Left),
    ]);
    let top_rank = |v: &[i64]| {
        v.iter()
            .enumerate()
            .max_by_key(|(i, x)| (**x, std::cmp::Reverse(*i)))
            .filter(|(_, x)| **x > 0)
            .map(|(i, x)| format!("r{i} {}", fmt_ns(*x)))
            .unwrap_or_else(|| "-".into())
    };
    for pt in &w.patterns {
        let f = pt.time_ns as f64 / rank_time;
        tb.row(vec![
            plain(&pt.name),
            (fmt_ns(pt.time_ns), tone_frac(f, 0.05, 0.15)),
            plain(pct(f)),
            plain(pt.count.to_string()),
            plain(top_rank(&pt.by_rank)),
            plain(top_rank(&pt.by_cause)),
            plain(pt.sites.first().map(|s| format!("{} at {}", s.call, s.site)).unwrap_or_else(|| "-".into())),
        ]);
    }
    d.push(Block::Table(tb));
    // Collectives.
    let c = &r.collectives;
    if c.instances > 0 {
        d.push(Block::Heading("Collectives".into()));
        d.push(Block::Para(
            format!(
                "{} instances{}; arrival spread mean {} max {}",
                c.instances,
                if c.incomplete > 0 { format!(" ({} with members missing)", c.incomplete) } else { String::new() },
                fmt_ns(c.spread.mean as i64),
                fmt_ns(c.spread.max as i64)
            ),
            Tone::Plain,
        ));
        let mut tb = Table::new(&[
            ("comm", Align::Left),
            ("call", Align::Left),
            ("bytes/rank", Align::Right),
            ("count", Align::Right),
            ("ranks", Align::Right),
            ("time", Align::Right),
            ("wait", Align::Right),
            ("spread mean", Align::Right),
            ("spread max", Align::Right),
            ("last to arrive", Align::Left),
        ]);
        for s in c.summaries.iter().take(ROWS) {
            let wf = if s.time_ns > 0 { s.wait_ns as f64 / s.time_ns as f64 } else { 0.0 };
            tb.row(vec![
                plain(&s.comm),
                plain(&s.call),
                plain(if s.size_hi == 0 {
                    "0 B".into()
                } else {
                    format!("{}..{}", fmt_bytes(s.size_lo), fmt_bytes(s.size_hi))
                }),
                plain(s.instances.to_string()),
                plain(s.ranks.to_string()),
                plain(fmt_ns(s.time_ns)),
                (format!("{} ({})", fmt_ns(s.wait_ns), pct(wf)), tone_frac(wf, 0.3, 0.6)),
                plain(fmt_ns(s.mean_spread_ns)),
                plain(fmt_ns(s.max_spread_ns)),
                plain(if s.last_rank >= 0 {
                    format!("r{} ({})", s.last_rank, pct(s.last_rank_share))
                } else {
                    "-".into()
                }),
            ]);
        }
        d.push(Block::Table(tb));
        d.push(Block::Figure(Figure::Collectives));
    }
    // Messages.
    let mm = &r.messages;
    d.push(Block::Heading("Messages".into()));
    d.push(Block::Para(
        format!(
            "{} sends, {} receives, {} matched; {} unmatched sends, {} unmatched receives",
            mm.sends, mm.receives, mm.matched, mm.unmatched_sends, mm.unmatched_receives
        ),
        if mm.unmatched_sends + mm.unmatched_receives > 0 { Tone::Warn } else { Tone::Plain },
    ));
    for u in mm.unmatched.iter().take(5) {
        d.push(Block::Para(
            format!(
                "  unmatched {}: rank {} {} peer {} tag {} comm {} seq {} {}{}",
                u.side,
                u.rank,
                u.call,
                u.peer,
                u.tag,
                u.comm,
                u.seq.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
                fmt_bytes(u.bytes.max(0)),
                if u.completed { "" } else { " (never completed)" }
            ),
            Tone::Dim,
        ));
    }
    if mm.clock_violations > 0 {
        let cl = &r.clocks;
        d.push(Block::Para(
            format!(
                "{} clock violations (receive ended before its send started, worst by {}); corrected by shifting ranks {} ({} remain{})",
                mm.clock_violations,
                fmt_ns(mm.max_violation_ns),
                cl.shift_ns.iter().enumerate().filter(|(_, s)| **s != 0).map(|(r, s)| format!("r{r} +{}", fmt_ns(*s))).collect::<Vec<_>>().join(", "),
                cl.violations_after,
                if cl.inconsistent { "; clocks drift within the run" } else { "" }
            ),
            Tone::Warn,
        ));
    }
    // Matrix.
    let mx = &r.matrix;
    if mx.messages > 0 {
        d.push(Block::Heading("Communication matrix (point-to-point, sender rows)".into()));
        d.push(Block::Para(format!("{} in {} messages", fmt_bytes(mx.bytes), mx.messages), Tone::Plain));
        d.push(Block::Figure(Figure::Matrix));
        match &mx.full {
            Some(full) if full.ranks <= 16 => {
                let mut cols = vec![("from\\to".to_string(), Align::Left)];
                cols.extend((0..full.ranks).map(|i| (i.to_string(), Align::Right)));
                let cols: Vec<(&str, Align)> = cols.iter().map(|(s, a)| (s.as_str(), *a)).collect();
                let mut tb = Table::new(&cols);
                let max = full.bytes.iter().copied().max().unwrap_or(1).max(1) as f64;
                for s in 0..full.ranks {
                    let mut row = vec![plain(s.to_string())];
                    for t in 0..full.ranks {
                        let b = full.bytes(s, t);
                        row.push(if full.messages(s, t) == 0 {
                            ("-".into(), Tone::Dim)
                        } else {
                            (fmt_bytes(b), tone_frac(b as f64 / max, 0.5, 0.9))
                        });
                    }
                    tb.row(row);
                }
                d.push(Block::Table(tb));
            }
            _ => {
                let mut tb = Table::new(&[
                    ("from", Align::Right),
                    ("to", Align::Right),
                    ("bytes", Align::Right),
                    ("messages", Align::Right),
                ]);
                for pr in &mx.top_pairs {
                    tb.row(vec![
                        plain(pr.src.to_string()),
                        plain(pr.dst.to_string()),
                        plain(fmt_bytes(pr.bytes)),
                        plain(pr.messages.to_string()),
                    ]);
                }
                d.push(Block::Table(tb));
            }
        }
    }
    // Critical path.
    let cp = &r.critical_path;
    if cp.length_ns > 0 {
        d.push(Block::Heading("Critical path".into()));
        let len = cp.length_ns as f64;
        d.push(Block::Para(
            format!(
                "{}: computation {} ({}), MPI {} ({}), {} switches between ranks",
                fmt_ns(cp.length_ns),
                fmt_ns(cp.compute_ns),
                pct(cp.compute_ns as f64 / len),
                fmt_ns(cp.mpi_ns),
                pct(cp.mpi_ns as f64 / len),
                cp.rank_switches
            ),
            Tone::Plain,
        ));
        let mut ranks: Vec<(usize, i64)> = cp.by_rank.iter().copied().enumerate().filter(|(_, v)| *v > 0).collect();
        ranks.sort_by_key(|&(r, v)| (std::cmp::Reverse(v), r));
        ranks.truncate(8);
        d.push(Block::Bars(
            ranks
                .iter()
                .map(|&(r, v)| {
                    (format!("rank {r}"), v as f64 / len, format!("{} ({})", fmt_ns(v), pct(v as f64 / len)))
                })
                .collect(),
        ));
        let calls: Vec<String> =
            cp.by_call.iter().take(6).map(|c| format!("{} {} ({})", c.call, fmt_ns(c.time_ns), pct(c.share))).collect();
        if !calls.is_empty() {
            d.push(Block::Para(format!("MPI on the path: {}", calls.join(", ")), Tone::Plain));
        }
    }
    d
}

/// Options of the text renderer.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    pub width: usize,
    pub color: bool,
}

fn paint(s: &str, tone: Tone, color: bool) -> String {
    if !color {
        return s.to_string();
    }
    let code = match tone {
        Tone::Plain => return s.to_string(),
        Tone::Good => "32",
        Tone::Warn => "33",
        Tone::Bad => "1;31",
        Tone::Dim => "2",
    };
    format!("\x1b[{code}m{s}\x1b[0m")
}

fn cut(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else if w <= 1 {
        s.chars().take(w).collect()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}

fn pad(s: &str, w: usize, a: Align) -> String {
    let n = s.chars().count();
    let fill = " ".repeat(w.saturating_sub(n));
    match a {
        Align::Left => format!("{s}{fill}"),
        Align::Right => format!("{fill}{s}"),
    }
}

fn wrap(s: &str, w: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > w {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    lines.push(cur);
    lines
}

/// Renders a document for a terminal of `width` columns (columns of wide
/// tables are dropped from the right, then the first column is shortened).
pub fn render_text(doc: &[Block], o: TextOptions) -> String {
    let width = o.width.max(40);
    let mut out = String::new();
    for b in doc {
        match b {
            Block::Heading(h) => {
                out.push('\n');
                if o.color {
                    out.push_str(&format!("\x1b[1m{}\x1b[0m", cut(h, width)));
                } else {
                    out.push_str(&cut(h, width));
                }
                out.push('\n');
                out.push_str(&"-".repeat(h.chars().count().min(width)));
                out.push('\n');
            }
            Block::Para(s, tone) => {
                for line in wrap(s, width) {
                    out.push_str(&paint(&line, *tone, o.color));
                    out.push('\n');
                }
            }
            Block::Table(t) => out.push_str(&table_text(t, width, o.color)),
            Block::Figure(_) => {}
            Block::Bars(bars) => {
                let lw = bars.iter().map(|b| b.0.chars().count()).max().unwrap_or(0).min(24);
                let tw = bars.iter().map(|b| b.2.chars().count()).max().unwrap_or(0);
                let bw = width.saturating_sub(lw + tw + 4).clamp(4, 40);
                for (label, f, text) in bars {
                    let n = ((f.clamp(0.0, 1.0) * bw as f64).round() as usize).min(bw);
                    let bar = format!("{}{}", "#".repeat(n), ".".repeat(bw - n));
                    let text = cut(text, width.saturating_sub(lw + bw + 2).max(8));
                    let line = format!(
                        "{} {} {}",
                        pad(&cut(label, lw), lw, Align::Left),
                        paint(&bar, Tone::Good, o.color),
                        text
                    );
                    out.push_str(&line);
                    out.push('\n');
                }
            }
        }
    }
    out
}

fn table_text(t: &Table, width: usize, color: bool) -> String {
    let ncol = t.headers.len();
    let mut w: Vec<usize> = t.headers.iter().map(|h| h.chars().count()).collect();
    for r in &t.rows {
        for (i, c) in r.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.0.chars().count());
        }
    }
    // Drop columns from the right until it fits (keeping at least two), then shorten the first.
    let mut shown = ncol;
    let total = |k: usize, w: &[usize]| w[..k].iter().sum::<usize>() + 2 * k.saturating_sub(1);
    while shown > 2 && total(shown, &w) > width {
        shown -= 1;
    }
    if total(shown, &w) > width {
        let over = total(shown, &w) - width;
        w[0] = w[0].saturating_sub(over).max(6);
    }
    let mut out = String::new();
    let line = |cells: Vec<(String, Tone)>, header: bool| {
        let mut s = String::new();
        for (i, (text, tone)) in cells.into_iter().enumerate().take(shown) {
            if i > 0 {
                s.push_str("  ");
            }
            let cell = pad(&cut(&text, w[i]), w[i], t.align[i]);
            s.push_str(&if header && color { format!("\x1b[1m{cell}\x1b[0m") } else { paint(&cell, tone, color) });
        }
        s.trim_end().to_string()
    };
    out.push_str(&line(t.headers.iter().map(|h| plain(h.clone())).collect(), true));
    out.push('\n');
    for r in &t.rows {
        out.push_str(&line(r.clone(), false));
        out.push('\n');
    }
    if shown < ncol {
        out.push_str(&paint(
            &format!("({} more columns: widen the terminal or use --format md)", ncol - shown),
            Tone::Dim,
            color,
        ));
        out.push('\n');
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Renders a document as GitHub-flavoured Markdown.
pub fn render_markdown(doc: &[Block]) -> String {
    let mut out = String::new();
    let mut first = true;
    for b in doc {
        match b {
            Block::Heading(h) => {
                out.push_str(if first { "# " } else { "\n## " });
                first = false;
                out.push_str(h);
                out.push_str("\n\n");
            }
            Block::Para(s, tone) => {
                let s = md_escape(s);
                match tone {
                    Tone::Bad => out.push_str(&format!("**{s}**\n\n")),
                    Tone::Warn => out.push_str(&format!("> {s}\n\n")),
                    _ => out.push_str(&format!("{s}\n\n")),
                }
            }
            Block::Table(t) => {
                out.push_str(&format!(
                    "| {} |\n",
                    t.headers.iter().map(|h| md_escape(h)).collect::<Vec<_>>().join(" | ")
                ));
                out.push_str(&format!(
                    "|{}|\n",
                    t.align
                        .iter()
                        .map(|a| if *a == Align::Right { "---:" } else { ":---" })
                        .collect::<Vec<_>>()
                        .join("|")
                ));
                for r in &t.rows {
                    out.push_str(&format!(
                        "| {} |\n",
                        r.iter().map(|c| md_escape(&c.0)).collect::<Vec<_>>().join(" | ")
                    ));
                }
                out.push('\n');
            }
            Block::Figure(_) => {}
            Block::Bars(bars) => {
                out.push_str("| | | |\n|:---|:---|---:|\n");
                for (label, f, text) in bars {
                    let n = (f.clamp(0.0, 1.0) * 20.0).round() as usize;
                    out.push_str(&format!(
                        "| {} | `{}{}` | {} |\n",
                        md_escape(label),
                        "#".repeat(n),
                        ".".repeat(20 - n),
                        md_escape(text)
                    ));
                }
                out.push('\n');
            }
        }
    }
    out
}

/// "Open MPI v4.1.4 (MPI 3.1, Open MPI ABI)": the library, the version of
/// the standard it implements and its ABI, as far as the trace says.
fn library_line(t: &TraceInfo) -> String {
    if t.mpi_library.is_empty() {
        return "MPI library unknown".into();
    }
    let mut extra = Vec::new();
    if !t.mpi_version.is_empty() {
        extra.push(format!("MPI {}", t.mpi_version));
    }
    if !t.mpi_abi.is_empty() {
        extra.push(format!("{} ABI", t.mpi_abi));
    }
    if extra.is_empty() {
        t.mpi_library.clone()
    } else {
        format!("{} ({})", t.mpi_library, extra.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_line_names_version_and_abi() {
        let mut t = TraceInfo { mpi_library: "Open MPI v4.1.4".into(), ..Default::default() };
        assert_eq!(library_line(&t), "Open MPI v4.1.4");
        t.mpi_version = "3.1".into();
        t.mpi_abi = "Open MPI".into();
        assert_eq!(library_line(&t), "Open MPI v4.1.4 (MPI 3.1, Open MPI ABI)");
        assert_eq!(library_line(&TraceInfo::default()), "MPI library unknown");
    }
}

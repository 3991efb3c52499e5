//! The analysis subcommands: `report`, `check`, `diff`, `export`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use analyzers::check::{self, Rules};
use analyzers::report::{self, Analyses, Report, TextOptions};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};

#[derive(Subcommand)]
pub enum Commands {
    /// Print the analysis of a trace: profile, wait states, collectives,
    /// messages, communication matrix, critical path.
    Report(ReportArgs),
    /// Check a trace against rules (and a baseline) for CI; exits with 1 if
    /// a rule fails.
    Check(Box<CheckArgs>),
    /// Compare two runs (trace directories or JSON reports).
    Diff(DiffArgs),
    /// Export a trace to another tool's format (Chrome/Perfetto JSON, CSV, OTF2).
    Export(ExportArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    #[value(alias = "markdown")]
    Md,
    Json,
    /// One self-contained HTML page (with plots for `report`).
    Html,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Args)]
pub struct Output {
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value = "text")]
    format: Format,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Terminal width for text (default: the terminal's, or $COLUMNS, or 100).
    #[arg(long)]
    width: Option<usize>,
    /// Colours in text output.
    #[arg(long, value_enum, default_value = "auto")]
    color: Color,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Trace directory (or a JSON report, to render it in another format).
    dir: PathBuf,
    #[command(flatten)]
    out: Output,
    /// Print load and analysis times and throughput on standard error.
    #[arg(long)]
    timing: bool,
}

#[derive(Args)]
pub struct CheckArgs {
    /// Trace directory (or a JSON report).
    dir: PathBuf,
    /// Rules file (`key = value` lines; see `analyzers::check`).
    #[arg(long)]
    rules: Option<PathBuf>,
    /// Maximum MPI time / rank time (0.3 or 30%).
    #[arg(long)]
    max_mpi_fraction: Option<String>,
    /// Maximum wait-state time / rank time.
    #[arg(long)]
    max_wait_fraction: Option<String>,
    /// Maximum Late Sender time (5ms, 100us...).
    #[arg(long)]
    max_late_sender: Option<String>,
    /// Maximum waiting / time in collectives.
    #[arg(long)]
    max_collective_wait_fraction: Option<String>,
    /// Maximum arrival spread of any collective instance (20ms...).
    #[arg(long)]
    max_collective_spread: Option<String>,
    /// Maximum coefficient of variation of compute time over ranks.
    #[arg(long)]
    max_imbalance: Option<String>,
    /// Maximum unmatched messages.
    #[arg(long)]
    max_unmatched: Option<String>,
    /// Fail if any rank did not finalize.
    #[arg(long)]
    require_complete: bool,
    /// Baseline run (trace directory or JSON report) for --max-regression.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Largest allowed growth of any metric against the baseline (10%).
    #[arg(long)]
    max_regression: Option<String>,
    /// Write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Check the program's use of MPI (differing collective arguments,
    /// sends that complete only thanks to buffering, requests and
    /// communicators left at MPI_Finalize); see analyzers/CHECKS.md.
    #[arg(long)]
    correctness: bool,
    #[command(flatten)]
    out: Output,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The earlier run (trace directory or JSON report).
    before: PathBuf,
    /// The later run.
    after: PathBuf,
    /// Flag changes larger than this (10%); exit 1 if a metric grew by more.
    #[arg(long, default_value = "10%")]
    threshold: String,
    #[command(flatten)]
    out: Output,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Perfetto's protobuf trace (ui.perfetto.dev, trace_processor):
    /// streamed, names interned; the default unless `-o` ends in .json/.csv.
    #[value(alias = "pftrace")]
    Perfetto,
    /// Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev).
    #[value(alias = "json")]
    Chrome,
    /// CSV, one line per MPI call (rank, call, times, site, peer, tag, bytes).
    Csv,
    /// CSV, one line per matched message (sender, receiver, tag, bytes, times).
    MessagesCsv,
    /// OTF2 archive (Score-P, Vampir, Scalasca): `-o DIR` gets DIR/traces.otf2
    /// (needs the OTF2 library: Debian's otf2-tools).
    Otf2,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Trace directory.
    dir: PathBuf,
    /// Format; by default from the output's extension (.json: chrome,
    /// .csv: csv), else perfetto.
    #[arg(long, short = 'f', value_enum)]
    format: Option<ExportFormat>,
    /// Output file.
    #[arg(long, short = 'o')]
    output: PathBuf,
    /// Only calls that end at or after this time from the start of the
    /// trace (5ms, 1.5s, 300us, ns); calls are kept whole.
    #[arg(long, value_parser = analyzers::check::parse_duration)]
    from: Option<i64>,
    /// Only calls that start at or before this time from the start of the trace.
    #[arg(long, value_parser = analyzers::check::parse_duration)]
    to: Option<i64>,
    /// Only these ranks (0-3,7); messages only between ranks written.
    #[arg(long, value_name = "LIST")]
    ranks: Option<String>,
}

pub fn run(c: Commands) -> Result<i32> {
    match c {
        Commands::Report(a) => run_report(a),
        Commands::Check(a) => run_check(*a),
        Commands::Diff(a) => run_diff(a),
        Commands::Export(a) => run_export(a),
    }
}

/// A progress line on standard error (when it is a terminal) for work that
/// takes longer than a second.
/// `MPITRACE_PROGRESS_AFTER=MS` changes the second.
struct Progress {
    start: Instant,
    after: std::time::Duration,
    last: std::sync::Mutex<Option<Instant>>,
    on: bool,
}

impl Progress {
    fn new() -> Progress {
        let ms = std::env::var("MPITRACE_PROGRESS_AFTER").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
        Progress {
            start: Instant::now(),
            after: std::time::Duration::from_millis(ms),
            last: std::sync::Mutex::new(None),
            on: std::io::stderr().is_terminal(),
        }
    }

    /// Draws `what` with a bar of `done` of `total` (no bar if `total` is 0).
    fn show(&self, what: &str, done: usize, total: usize) {
        let now = Instant::now();
        if !self.on || now - self.start < self.after {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|l| now - l < std::time::Duration::from_millis(100)) && done < total {
            return;
        }
        *last = Some(now);
        let secs = (now - self.start).as_secs_f64();
        let bar = match (done * 30).checked_div(total) {
            Some(k) => {
                let k = k.min(30);
                format!(" [{}{}] {done}/{total} ranks", "#".repeat(k), ".".repeat(30 - k))
            }
            None => String::new(),
        };
        eprint!("\r\x1b[2Kmpitrace: {what}{bar} ({secs:.1} s)");
        let _ = std::io::stderr().flush();
    }

    fn clear(&self) {
        if self.on && self.last.lock().map(|l| l.is_some()).unwrap_or(true) {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Loads and analyzes a trace directory.
fn analyze_dir(dir: &Path, timing: bool) -> Result<Analyses> {
    let t0 = Instant::now();
    let p = Progress::new();
    // The errors of loading name the folder already (once is enough).
    let model = analyzers::load::load_with_progress(dir, &|done, total| p.show("reading", done, total))?;
    p.clear();
    warn_problems(&model);
    let t1 = Instant::now();
    let rows = model.rows();
    // The analyses report no steps: a ticking line while they run.
    let finished = std::sync::atomic::AtomicBool::new(false);
    let a = std::thread::scope(|s| {
        let ticker = s.spawn(|| {
            while !finished.load(std::sync::atomic::Ordering::Acquire) {
                p.show(&format!("analyzing {rows} rows"), 0, 0);
                std::thread::park_timeout(std::time::Duration::from_millis(50));
            }
        });
        let a = report::analyze_timed(model);
        finished.store(true, std::sync::atomic::Ordering::Release);
        // Wake the ticker so that it ends now, not at its next tick.
        ticker.thread().unpark();
        a
    });
    let (a, phases) = a;
    let t2 = Instant::now();
    p.clear();
    if timing {
        let (l, an) = ((t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64());
        let each: Vec<String> = phases.iter().map(|p| format!("{} {:.2}", p.name, p.took.as_secs_f64())).collect();
        eprintln!(
            "mpitrace: {rows} rows: load {l:.2} s, analyses {an:.2} s ({}), {:.2} M rows/s overall",
            each.join(", "),
            rows as f64 / (l + an) / 1e6
        );
    }
    Ok(a)
}

/// Most problems of a trace repeated on standard error (all are in the report).
const WARNINGS: usize = 10;

/// Says on standard error what was damaged or missing in the trace, as
/// Score-P's and Scalasca's tools do: the analysis goes on with the rest.
fn warn_problems(m: &analyzers::Model) {
    for p in m.problems.iter().take(WARNINGS) {
        eprintln!("mpitrace: warning: {p}");
    }
    if m.problems.len() > WARNINGS {
        eprintln!("mpitrace: warning: ... and {} more problems (listed in the report)", m.problems.len() - WARNINGS);
    }
}

/// Exit status when the trace folder was there but no rank of it could be
/// read: the (empty) report is still written, and a script can tell.
pub const NOTHING_READ: i32 = 3;

/// Whether no rank of the model has anything read.
fn nothing_read(m: &analyzers::Model) -> bool {
    m.ranks.iter().all(|r| r.completeness == trace_format::Completeness::Missing)
}

/// A report from a trace directory or a JSON report file.
fn report_of(path: &Path) -> Result<Report> {
    if path.is_file() {
        let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let r: Report = serde_json::from_slice(&text)
            .with_context(|| format!("{}: not a JSON report of mpitrace", path.display()))?;
        if r.schema_version > report::SCHEMA_VERSION {
            eprintln!(
                "mpitrace: {}: report schema {} is newer than this tool's ({})",
                path.display(),
                r.schema_version,
                report::SCHEMA_VERSION
            );
        }
        return Ok(r);
    }
    let mut r = analyze_dir(path, false)?.report();
    r.trace.dir = path.display().to_string();
    Ok(r)
}

fn width(o: &Output) -> usize {
    if let Some(w) = o.width {
        return w;
    }
    let mut ws = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes a winsize into the struct we pass.
    if unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_col > 0 {
        return ws.ws_col as usize;
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(100)
}

fn emit(o: &Output, text: &str) -> Result<()> {
    match &o.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = out.write_all(text.as_bytes());
            Ok(())
        }
    }
}

fn text_options(o: &Output) -> TextOptions {
    let color = match o.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => o.output.is_none() && std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    TextOptions { width: width(o), color }
}

fn render(o: &Output, r: &Report, ov: Option<&analyzers::html::Overview>, extra: &[report::Block]) -> Result<String> {
    let doc = || report::document(r).into_iter().chain(extra.iter().cloned()).collect::<Vec<_>>();
    Ok(match o.format {
        Format::Html => analyzers::html::render(r, ov),
        Format::Json => serde_json::to_string_pretty(r)? + "\n",
        Format::Md => report::render_markdown(&doc()),
        Format::Text => report::render_text(&doc(), text_options(o)),
    })
}

/// For a trace whose job did not end normally (killed, crashed, stopped
/// on a hang): the calls the ranks were in when it ended, and who waited
/// for whom (see `analyzers::hang`).
fn end_state(dir: &Path, m: &analyzers::Model) -> Vec<report::Block> {
    // Ranks without any file are no sign of a killed job (a claimed rank
    // count, files lost): only ranks read in part are.
    if !m.ranks.iter().any(|r| matches!(r.completeness, trace_format::Completeness::Partial { .. })) {
        return Vec::new();
    }
    let Ok(t) = trace_format::Trace::open(dir) else { return Vec::new() };
    analyzers::hang::from_trace(&t).blocks("Where the ranks were when the trace ended")
}

fn run_report(a: ReportArgs) -> Result<i32> {
    if a.dir.is_file() {
        // A JSON report rendered again (the plots that need the trace are left out).
        let r = report_of(&a.dir)?;
        emit(&a.out, &render(&a.out, &r, None, &[])?)?;
        return Ok(0);
    }
    let an = analyze_dir(&a.dir, a.timing)?;
    let mut r = an.report();
    r.trace.dir = a.dir.display().to_string();
    let ov = (a.out.format == Format::Html).then(|| analyzers::html::overview(&an));
    let extra = end_state(&a.dir, &an.model);
    emit(&a.out, &render(&a.out, &r, ov.as_ref(), &extra)?)?;
    if nothing_read(&an.model) {
        eprintln!("mpitrace: {}: no rank could be read", a.dir.display());
        return Ok(NOTHING_READ);
    }
    if a.out.format == Format::Text && a.out.output.is_none() {
        let d = a.dir.display();
        println!(
            "\nexplore it:\n  mpitrace tui {d}\n  mpitrace gui {d}\n  mpitrace report {d} -f html -o report.html   (one page with plots)\n  mpitrace export {d} -o trace.pftrace   (open in ui.perfetto.dev; -f otf2 for Vampir)"
        );
    }
    Ok(0)
}

fn run_check(a: CheckArgs) -> Result<i32> {
    let mut rules = match &a.rules {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
            Rules::parse(&text, &p.display().to_string())?
        }
        None => Rules::default(),
    };
    let flags = [
        ("max_mpi_fraction", &a.max_mpi_fraction),
        ("max_wait_fraction", &a.max_wait_fraction),
        ("max_late_sender", &a.max_late_sender),
        ("max_collective_wait_fraction", &a.max_collective_wait_fraction),
        ("max_collective_spread", &a.max_collective_spread),
        ("max_imbalance", &a.max_imbalance),
        ("max_unmatched", &a.max_unmatched),
        ("max_regression", &a.max_regression),
    ];
    for (k, v) in flags {
        if let Some(v) = v {
            rules.set(k, v).map_err(|e| anyhow::anyhow!("--{}: {e}", k.replace('_', "-")))?;
        }
    }
    rules.require_complete |= a.require_complete;
    if rules.max_regression.is_some() && a.baseline.is_none() {
        bail!("--max-regression needs --baseline (a trace directory or a JSON report)");
    }
    let mut outcomes = Vec::new();
    if a.correctness {
        outcomes = analyzers::correctness::check(&trace_format::Trace::open(&a.dir)?);
    }
    // Without limits, `--correctness` alone needs no report.
    let limits = a.rules.is_some() || flags.iter().any(|(_, v)| v.is_some()) || rules.require_complete;
    if limits || !a.correctness {
        let r = report_of(&a.dir)?;
        let base = a.baseline.as_deref().map(report_of).transpose()?;
        outcomes.extend(check::check(&r, &rules, base.as_ref()));
    }
    if outcomes.is_empty() {
        bail!("no rules given: pass --rules FILE or limits such as --max-mpi-fraction 30%");
    }
    if let Some(p) = &a.junit {
        std::fs::write(p, check::junit(&a.dir.display().to_string(), &outcomes))
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let text = match a.out.format {
        Format::Json => serde_json::to_string_pretty(&outcomes)? + "\n",
        Format::Md => report::render_markdown(&check::check_document(&a.dir.display().to_string(), &outcomes)),
        Format::Html => {
            analyzers::html::render_document(&check::check_document(&a.dir.display().to_string(), &outcomes))
        }
        Format::Text => {
            let color = text_options(&a.out).color;
            let mut s = String::new();
            for o in &outcomes {
                let tag = match (o.passed, color) {
                    (true, true) => "\x1b[32mPASS\x1b[0m",
                    (true, false) => "PASS",
                    (false, true) => "\x1b[1;31mFAIL\x1b[0m",
                    (false, false) => "FAIL",
                };
                s += &format!("{tag} {}: {}\n", o.rule, o.message);
            }
            s += &format!("{} of {} checks failed\n", failed, outcomes.len());
            s
        }
    };
    emit(&a.out, &text)?;
    Ok(if failed > 0 { 1 } else { 0 })
}

fn run_diff(a: DiffArgs) -> Result<i32> {
    let threshold = check::parse_fraction(&a.threshold).map_err(|e| anyhow::anyhow!("--threshold: {e}"))?;
    let before = report_of(&a.before)?;
    let after = report_of(&a.after)?;
    let changes = check::diff(&before, &after);
    let warnings = check::diff_warnings(&before, &after);
    let worse = changes.iter().filter(|c| c.relative > threshold).count();
    let text = match a.out.format {
        Format::Json => {
            warnings.iter().for_each(|w| eprintln!("mpitrace: warning: {w}"));
            serde_json::to_string_pretty(&changes)? + "\n"
        }
        Format::Md | Format::Html => {
            let doc = check::diff_document(
                &a.before.display().to_string(),
                &a.after.display().to_string(),
                &changes,
                threshold,
                &warnings,
            );
            if a.out.format == Format::Md {
                report::render_markdown(&doc)
            } else {
                analyzers::html::render_document(&doc)
            }
        }
        Format::Text => {
            let color = text_options(&a.out).color;
            let mut s = format!("{} -> {}\n", a.before.display(), a.after.display());
            for w in &warnings {
                s += &if color { format!("\x1b[33mwarning: {w}\x1b[0m\n") } else { format!("warning: {w}\n") };
            }
            for c in &changes {
                let line = c.describe();
                s += &if c.relative > threshold && color {
                    format!("\x1b[1;31m{line}  (worse)\x1b[0m\n")
                } else if c.relative > threshold {
                    format!("{line}  (worse)\n")
                } else if c.relative < -threshold && color {
                    format!("\x1b[32m{line}  (better)\x1b[0m\n")
                } else if c.relative < -threshold {
                    format!("{line}  (better)\n")
                } else {
                    format!("{line}\n")
                };
            }
            s += &format!("{worse} metrics grew by more than {:.1}%\n", 100.0 * threshold);
            s
        }
    };
    emit(&a.out, &text)?;
    Ok(if worse > 0 { 1 } else { 0 })
}

fn run_export(a: ExportArgs) -> Result<i32> {
    let format = a.format.unwrap_or_else(|| {
        match a.output.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("json") => ExportFormat::Chrome,
            Some("csv") => ExportFormat::Csv,
            _ => ExportFormat::Perfetto,
        }
    });
    if let (Some(f), Some(t)) = (a.from, a.to) {
        if t < f {
            anyhow::bail!("--to ({}) is before --from ({})", analyzers::fmt_ns(t), analyzers::fmt_ns(f));
        }
    }
    let ranks = a
        .ranks
        .as_deref()
        .map(analyzers::export::parse_ranks)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--ranks: {e}"))?;
    let sel = analyzers::export::Selection { from: a.from, to: a.to, ranks, ..Default::default() };
    let an = analyze_dir(&a.dir, false)?;
    if !an.model.ranks.iter().any(|r| sel.rank(r.rank)) {
        anyhow::bail!("--ranks: none of these ranks is in the trace (it has {} ranks)", an.model.ranks.len());
    }
    if format == ExportFormat::Otf2 {
        if sel != analyzers::export::Selection::default() {
            anyhow::bail!(
                "--from, --to and --ranks are not available for OTF2 (use otf2-filter or Vampir's own filters)"
            );
        }
        let w = analyzers::otf2::write_otf2(&an.model, &a.output, "traces")?;
        let anchor = a.output.join("traces.otf2");
        let anchor = anchor.display();
        eprintln!(
            "mpitrace: wrote {} events ({} messages, {} collective calls) of {} ranks to {anchor} (read it with `otf2-print {anchor}` or Vampir)",
            w.events, w.messages, w.collectives, w.locations
        );
        return Ok(0);
    }
    let file = std::fs::File::create(&a.output).with_context(|| format!("cannot create {}", a.output.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let what = match format {
        ExportFormat::Perfetto => {
            let n = analyzers::perfetto::write_perfetto(&an.model, &an.matching, &sel, &mut w);
            n.map(|n| format!("{} calls and {} messages", n.slices, n.messages))
        }
        ExportFormat::Chrome => {
            let n = analyzers::export::write_chrome(&an.model, &an.matching, &sel, &mut w);
            n.map(|n| format!("{} calls and {} messages", n.slices, n.messages))
        }
        ExportFormat::Csv => analyzers::export::write_calls_csv(&an.model, &sel, &mut w).map(|n| format!("{n} calls")),
        ExportFormat::MessagesCsv => analyzers::export::write_messages_csv(&an.model, &an.matching, &sel, &mut w)
            .map(|n| format!("{n} messages")),
        ExportFormat::Otf2 => unreachable!("written above"),
    }
    .with_context(|| format!("writing {}", a.output.display()))?;
    w.flush().with_context(|| format!("writing {}", a.output.display()))?;
    let hint = match format {
        ExportFormat::Perfetto => " (open it in ui.perfetto.dev)",
        ExportFormat::Chrome => " (open it in ui.perfetto.dev or chrome://tracing)",
        _ => "",
    };
    eprintln!("mpitrace: wrote {what} to {}{hint}", a.output.display());
    if nothing_read(&an.model) {
        eprintln!("mpitrace: {}: no rank could be read", a.dir.display());
        return Ok(NOTHING_READ);
    }
    Ok(0)
}

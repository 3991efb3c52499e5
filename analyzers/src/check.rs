//! CI checks: rules on a report, comparison with a baseline, JUnit XML.
//!
//! Rules come from command-line flags or a rules file of `key = value`
//! lines (a TOML subset: `#` comments, numbers, percentages such as
//! `"10%"`, durations such as `"5ms"`, booleans; a `[rules]` table header
//! is accepted and ignored). Keys:
//!
//! | key | meaning |
//! |---|---|
//! | `max_mpi_fraction` | MPI time / rank time (e.g. `0.3` or `"30%"`) |
//! | `max_wait_fraction` | all wait states / rank time |
//! | `max_late_sender` | Late Sender time (duration) |
//! | `max_late_sender_fraction` | Late Sender time / rank time |
//! | `max_collective_wait_fraction` | waiting in collectives / time in collectives |
//! | `max_collective_spread` | largest arrival spread of a collective instance: first to last rank (duration) |
//! | `max_imbalance` | coefficient of variation of the ranks' compute time |
//! | `max_unmatched` | unmatched sends plus receives |
//! | `require_complete` | every rank finalized |
//! | `max_regression` | largest allowed relative growth of any "lower is better" metric against the baseline (e.g. `"10%"`) |

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::{Align, Block, Report, Table, Tone};
use crate::waitstates::PatternKind;
use crate::{fmt_ns, Error};

/// Limits; `None` means not checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    pub max_mpi_fraction: Option<f64>,
    pub max_wait_fraction: Option<f64>,
    pub max_late_sender_ns: Option<i64>,
    pub max_late_sender_fraction: Option<f64>,
    pub max_collective_wait_fraction: Option<f64>,
    #[serde(default)]
    pub max_collective_spread_ns: Option<i64>,
    pub max_imbalance: Option<f64>,
    pub max_unmatched: Option<u64>,
    pub require_complete: bool,
    pub max_regression: Option<f64>,
}

/// Parses a fraction: `0.3`, `30%`.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let s = s.trim().trim_matches('"');
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.parse::<f64>(),
    };
    v.map_err(|_| format!("`{s}` is not a fraction (0.25 or 25%)"))
}

/// Parses a duration: `5ms`, `100us`, `2s`, `300ns`, or plain nanoseconds.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let s = s.trim().trim_matches('"');
    let (num, mul) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        (s, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .map(|v| (v * mul).round() as i64)
        .map_err(|_| format!("`{s}` is not a duration (5ms, 100us, 2s)"))
}

impl Rules {
    /// Sets one rule by key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "max_mpi_fraction" => self.max_mpi_fraction = Some(parse_fraction(value)?),
            "max_wait_fraction" => self.max_wait_fraction = Some(parse_fraction(value)?),
            "max_late_sender" => self.max_late_sender_ns = Some(parse_duration(value)?),
            "max_late_sender_fraction" => self.max_late_sender_fraction = Some(parse_fraction(value)?),
            "max_collective_wait_fraction" => self.max_collective_wait_fraction = Some(parse_fraction(value)?),
            "max_collective_spread" => self.max_collective_spread_ns = Some(parse_duration(value)?),
            "max_imbalance" => self.max_imbalance = Some(parse_fraction(value)?),
            "max_unmatched" => {
                self.max_unmatched = Some(value.trim().parse().map_err(|_| format!("`{value}` is not a count"))?)
            }
            "require_complete" => {
                self.require_complete = match value.trim() {
                    "true" => true,
                    "false" => false,
                    v => return Err(format!("`{v}` is not true or false")),
                }
            }
            "max_regression" => self.max_regression = Some(parse_fraction(value)?),
            _ => return Err(format!("unknown rule `{key}`")),
        }
        Ok(())
    }

    /// Parses a rules file; errors name the file and line.
    pub fn parse(text: &str, file: &str) -> Result<Rules, Error> {
        let mut r = Rules::default();
        for (i, raw) in text.lines().enumerate() {
            let line = match raw.find('#') {
                Some(p) if !raw[..p].contains('"') => &raw[..p],
                _ => raw,
            }
            .trim();
            if line.is_empty() || line == "[rules]" {
                continue;
            }
            let err = |what: String| Error::Rules { file: file.to_string(), line: i + 1, what };
            let (k, v) = line.split_once('=').ok_or_else(|| err(format!("expected `key = value`, found `{line}`")))?;
            r.set(k.trim(), v.trim()).map_err(err)?;
        }
        Ok(r)
    }
}

/// The result of one rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub rule: String,
    pub passed: bool,
    pub message: String,
}

/// A metric of a report where lower is better.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    /// "ns", "fraction", "count" or "bytes".
    pub unit: String,
}

fn metric(name: &str, value: f64, unit: &str) -> Metric {
    Metric { name: name.into(), value, unit: unit.into() }
}

/// The metrics compared between runs.
pub fn metrics(r: &Report) -> Vec<Metric> {
    let t = &r.profile.totals;
    let mut v = vec![
        metric("wall time", t.wall_ns as f64, "ns"),
        metric("MPI time", t.mpi_ns as f64, "ns"),
        metric("MPI fraction", t.mpi_fraction, "fraction"),
        metric("compute imbalance (CV)", t.compute_cv, "fraction"),
        metric("wait states", r.wait_states.total_ns as f64, "ns"),
        metric("critical path", r.critical_path.length_ns as f64, "ns"),
    ];
    for p in &r.wait_states.patterns {
        v.push(metric(&p.name, p.time_ns as f64, "ns"));
    }
    for c in &r.profile.calls {
        v.push(metric(&format!("{} time", c.name), c.time_ns as f64, "ns"));
    }
    // Call sites by their label (file:line once symbolized, which survives
    // rebuilds; module+offset otherwise).
    for s in &r.profile.sites_by_time {
        v.push(metric(&format!("{} at {} time", s.call, s.site), s.time_ns as f64, "ns"));
    }
    // Waiting per collective operation and communicator (all sizes).
    let mut coll: Vec<(String, i64)> = Vec::new();
    for s in &r.collectives.summaries {
        let name = format!("{} on {} waiting", s.call, s.comm);
        match coll.iter_mut().find(|c| c.0 == name) {
            Some(c) => c.1 += s.wait_ns,
            None => coll.push((name, s.wait_ns)),
        }
    }
    v.extend(coll.into_iter().map(|(n, w)| metric(&n, w as f64, "ns")));
    v.push(metric("point-to-point bytes", r.matrix.bytes as f64, "bytes"));
    v
}

/// A metric in two runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub name: String,
    pub unit: String,
    pub before: f64,
    pub after: f64,
    /// Relative change (after / before − 1); infinite when before is 0.
    pub relative: f64,
}

impl Change {
    /// A value of this metric with its unit.
    pub fn value_text(&self, v: f64) -> String {
        match self.unit.as_str() {
            "ns" => fmt_ns(v as i64),
            "bytes" => crate::fmt_bytes(v as i64),
            "fraction" => format!("{:.3}", v),
            _ => format!("{v}"),
        }
    }
    /// The relative change (`+12.5%`), or "new" from zero.
    pub fn relative_text(&self) -> String {
        if self.relative.is_finite() {
            format!("{:+.1}%", 100.0 * self.relative)
        } else {
            "new".into()
        }
    }
    pub fn describe(&self) -> String {
        format!(
            "{}: {} -> {} ({})",
            self.name,
            self.value_text(self.before),
            self.value_text(self.after),
            self.relative_text()
        )
    }
}

/// A diff as a report document (for Markdown and HTML): one row per
/// metric, those that grew by more than `threshold` marked worse, those
/// that shrank by more marked better.
pub fn diff_document(before: &str, after: &str, changes: &[Change], threshold: f64, warnings: &[String]) -> Vec<Block> {
    let worse = changes.iter().filter(|c| c.relative > threshold).count();
    let mut t = Table::new(&[
        ("metric", Align::Left),
        ("before", Align::Right),
        ("after", Align::Right),
        ("change", Align::Right),
        ("", Align::Left),
    ]);
    for c in changes {
        let (verdict, tone) = if c.relative > threshold {
            ("worse", Tone::Bad)
        } else if c.relative < -threshold {
            ("better", Tone::Good)
        } else {
            ("", Tone::Plain)
        };
        t.row(vec![
            (c.name.clone(), Tone::Plain),
            (c.value_text(c.before), Tone::Plain),
            (c.value_text(c.after), Tone::Plain),
            (c.relative_text(), tone),
            (verdict.to_string(), tone),
        ]);
    }
    let mut d = vec![Block::Heading(format!("mpitrace diff: {before} -> {after}"))];
    d.extend(warnings.iter().map(|w| Block::Para(format!("warning: {w}"), Tone::Warn)));
    d.push(Block::Para(
        format!("{worse} metrics grew by more than {:.1}%", 100.0 * threshold),
        if worse > 0 { Tone::Bad } else { Tone::Good },
    ));
    d.push(Block::Table(t));
    d
}

/// Check outcomes as a report document (for Markdown and HTML).
pub fn check_document(target: &str, outcomes: &[Outcome]) -> Vec<Block> {
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let mut t = Table::new(&[("rule", Align::Left), ("result", Align::Left), ("detail", Align::Left)]);
    for o in outcomes {
        let (res, tone) = if o.passed { ("pass", Tone::Good) } else { ("FAIL", Tone::Bad) };
        t.row(vec![(o.rule.clone(), Tone::Plain), (res.to_string(), tone), (o.message.clone(), Tone::Plain)]);
    }
    vec![
        Block::Heading(format!("mpitrace check: {target}")),
        Block::Para(
            format!("{failed} of {} checks failed", outcomes.len()),
            if failed > 0 { Tone::Bad } else { Tone::Good },
        ),
        Block::Table(t),
    ]
}

/// Differences between two reports, largest absolute change first. Metrics
/// below `floor` in both runs (ns metrics under 1 µs or 1% of the wall
/// time of the baseline, fractions and byte counts under 0.01) are left
/// out as noise.
pub fn diff(before: &Report, after: &Report) -> Vec<Change> {
    let a = metrics(before);
    let b = metrics(after);
    let wall = before.profile.totals.wall_ns.max(after.profile.totals.wall_ns) as f64;
    let mut out = Vec::new();
    for mb in &b {
        let va = a.iter().find(|m| m.name == mb.name).map(|m| m.value).unwrap_or(0.0);
        let floor = if mb.unit == "ns" { (wall * 0.01).max(1000.0) } else { 0.01 };
        if va.abs() < floor && mb.value.abs() < floor {
            continue;
        }
        let relative = if va != 0.0 { mb.value / va - 1.0 } else { f64::INFINITY };
        out.push(Change { name: mb.name.clone(), unit: mb.unit.clone(), before: va, after: mb.value, relative });
    }
    for ma in &a {
        if !b.iter().any(|m| m.name == ma.name) && ma.value > 0.0 {
            out.push(Change {
                name: ma.name.clone(),
                unit: ma.unit.clone(),
                before: ma.value,
                after: 0.0,
                relative: -1.0,
            });
        }
    }
    // Largest absolute change first: relative changes put a metric that
    // grew from 573 us to 112 ms before MPI time growing by 3 s. Units
    // compare through the largest value of each (total time, bytes...).
    let scale = |unit: &str| {
        out.iter()
            .filter(|c| c.unit == unit)
            .map(|c| c.before.abs().max(c.after.abs()))
            .fold(if unit == "fraction" { 1.0 } else { f64::MIN_POSITIVE }, f64::max)
    };
    let scales: Vec<f64> = out.iter().map(|c| scale(&c.unit)).collect();
    let mut keyed: Vec<(f64, Change)> =
        out.into_iter().zip(scales).map(|(c, s)| ((c.after - c.before).abs() / s, c)).collect();
    keyed.sort_by(|(kx, x), (ky, y)| ky.total_cmp(kx).then(x.name.cmp(&y.name)));
    keyed.into_iter().map(|(_, c)| c).collect()
}

/// Why two reports may not be comparable: different rank counts,
/// programs or MPI libraries.
pub fn diff_warnings(before: &Report, after: &Report) -> Vec<String> {
    let (a, b) = (&before.trace, &after.trace);
    let mut w = Vec::new();
    if a.ranks != b.ranks {
        w.push(format!("the traces differ in rank count: {} -> {}", a.ranks, b.ranks));
    }
    let program = |c: &[String]| c.first().map(|p| p.rsplit('/').next().unwrap_or(p).to_string()).unwrap_or_default();
    let (pa, pb) = (program(&a.command), program(&b.command));
    if pa != pb {
        w.push(format!("the traces are of different programs: {pa} -> {pb}"));
    }
    if a.mpi_library != b.mpi_library {
        w.push(format!("the traces differ in MPI library: {} -> {}", a.mpi_library, b.mpi_library));
    }
    w
}

fn limit(rule: &str, value: f64, max: f64, show: impl Fn(f64) -> String) -> Outcome {
    let passed = value <= max;
    Outcome {
        rule: rule.into(),
        passed,
        message: format!("{} {} limit {}", show(value), if passed { "within" } else { "exceeds" }, show(max)),
    }
}

/// Applies the rules to a report (and the baseline comparison, if given).
pub fn check(r: &Report, rules: &Rules, baseline: Option<&Report>) -> Vec<Outcome> {
    let t = &r.profile.totals;
    let rank_ns = t.rank_ns.max(1) as f64;
    let pc = |v: f64| format!("{:.1}%", 100.0 * v);
    let mut out = Vec::new();
    if let Some(m) = rules.max_mpi_fraction {
        out.push(limit("max_mpi_fraction", t.mpi_fraction, m, pc));
    }
    if let Some(m) = rules.max_wait_fraction {
        out.push(limit("max_wait_fraction", r.wait_states.total_ns as f64 / rank_ns, m, pc));
    }
    let ls = r.wait_states.time(PatternKind::LateSender);
    if let Some(m) = rules.max_late_sender_ns {
        out.push(limit("max_late_sender", ls as f64, m as f64, |v| fmt_ns(v as i64)));
    }
    if let Some(m) = rules.max_late_sender_fraction {
        out.push(limit("max_late_sender_fraction", ls as f64 / rank_ns, m, pc));
    }
    if let Some(m) = rules.max_collective_wait_fraction {
        let time: i64 = r.collectives.summaries.iter().map(|s| s.time_ns).sum();
        let wait: i64 = r.collectives.summaries.iter().map(|s| s.wait_ns).sum();
        out.push(limit("max_collective_wait_fraction", if time > 0 { wait as f64 / time as f64 } else { 0.0 }, m, pc));
    }
    if let Some(m) = rules.max_collective_spread_ns {
        out.push(limit("max_collective_spread", r.collectives.spread.max, m as f64, |v| fmt_ns(v as i64)));
    }
    if let Some(m) = rules.max_imbalance {
        out.push(limit("max_imbalance", t.compute_cv, m, |v| format!("{v:.3}")));
    }
    if let Some(m) = rules.max_unmatched {
        let u = r.messages.unmatched_sends + r.messages.unmatched_receives;
        out.push(limit("max_unmatched", u as f64, m as f64, |v| format!("{v}")));
    }
    if rules.require_complete {
        out.push(Outcome {
            rule: "require_complete".into(),
            passed: r.trace.complete,
            message: if r.trace.complete {
                "every rank finalized".into()
            } else {
                format!("{} ranks did not finish", r.trace.incomplete_ranks.len())
            },
        });
    }
    if let (Some(max), Some(base)) = (rules.max_regression, baseline) {
        let changes = diff(base, r);
        let bad: Vec<&Change> = changes.iter().filter(|c| c.relative > max && c.unit != "count").collect();
        out.push(Outcome {
            rule: "max_regression".into(),
            passed: bad.is_empty(),
            message: if bad.is_empty() {
                format!("no metric grew by more than {:.1}% against the baseline", 100.0 * max)
            } else {
                format!(
                    "grew by more than {:.1}%: {}",
                    100.0 * max,
                    bad.iter().take(5).map(|c| c.describe()).collect::<Vec<_>>().join("; ")
                )
            },
        });
    }
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// JUnit XML of the outcomes (one test case per rule).
pub fn junit(suite: &str, outcomes: &[Outcome]) -> String {
    let failures = outcomes.iter().filter(|o| !o.passed).count();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(s, "<testsuites tests=\"{}\" failures=\"{failures}\">", outcomes.len());
    let _ = writeln!(s, "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\">", xml(suite), outcomes.len());
    for o in outcomes {
        let _ = write!(s, "    <testcase classname=\"mpitrace.check\" name=\"{}\"", xml(&o.rule));
        if o.passed {
            let _ = writeln!(s, "><system-out>{}</system-out></testcase>", xml(&o.message));
        } else {
            let _ = writeln!(s, "><failure message=\"{}\"/></testcase>", xml(&o.message));
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_file() {
        let r = Rules::parse(
            "[rules]\n# CI limits\nmax_mpi_fraction = \"30%\"\nmax_late_sender = \"5ms\"\nrequire_complete = true\n",
            "r.toml",
        )
        .unwrap();
        assert_eq!(r.max_mpi_fraction, Some(0.3));
        assert_eq!(r.max_late_sender_ns, Some(5_000_000));
        assert!(r.require_complete);
        let e = Rules::parse("max_mpi_fraction = 0.3\nmax_late_sender 5\n", "r.toml").unwrap_err().to_string();
        assert!(e.starts_with("r.toml:2: expected `key = value`"), "{e}");
        let e = Rules::parse("\n\nmax_bogus = 1\n", "r.toml").unwrap_err().to_string();
        assert_eq!(e, "r.toml:3: unknown rule `max_bogus`");
        let e = Rules::parse("max_imbalance = lots\n", "r.toml").unwrap_err().to_string();
        assert!(e.contains("r.toml:1:"), "{e}");
    }

    #[test]
    fn diff_puts_the_largest_absolute_change_first_and_warns_of_other_runs() {
        let run = |mpi: i64, send: i64, ranks: usize, lib: &str, prog: &str| {
            let mut r = Report::default();
            r.profile.totals.wall_ns = 5_000_000_000;
            r.profile.totals.mpi_ns = mpi;
            r.profile.calls.push(crate::profile::CallProfile {
                name: "MPI_Send".into(),
                time_ns: send,
                ..Default::default()
            });
            r.trace.ranks = ranks;
            r.trace.mpi_library = lib.into();
            r.trace.command = vec![prog.into(), "-n".into()];
            r
        };
        let a = run(1_100_000_000, 573_000, 4, "MPICH 4.2", "/bin/cg");
        let b = run(4_030_000_000, 112_000_000, 4, "MPICH 4.2", "./cg");
        let d = diff(&a, &b);
        let names: Vec<&str> = d.iter().map(|c| c.name.as_str()).collect();
        // MPI time grew by 2.93 s (+266%), MPI_Send by 111 ms (+19447%).
        assert_eq!(&names[..2], ["MPI time", "MPI_Send time"], "{d:?}");
        assert!(diff_warnings(&a, &b).is_empty(), "{:?}", diff_warnings(&a, &b));
        let c = run(4_030_000_000, 112_000_000, 8, "Open MPI 5.0", "/bin/stencil");
        assert_eq!(
            diff_warnings(&a, &c),
            [
                "the traces differ in rank count: 4 -> 8",
                "the traces are of different programs: cg -> stencil",
                "the traces differ in MPI library: MPICH 4.2 -> Open MPI 5.0",
            ]
        );
        let doc = diff_document("a", "c", &diff(&a, &c), 0.1, &diff_warnings(&a, &c));
        let md = crate::report::render_markdown(&doc);
        assert!(md.contains("warning: the traces differ in rank count: 4 -> 8"), "{md}");
    }

    #[test]
    fn collective_spread_limit() {
        let mut r = Report::default();
        r.collectives.spread.max = 30e6;
        let rules = Rules::parse("max_collective_spread = \"20ms\"\n", "r.toml").unwrap();
        let o = check(&r, &rules, None);
        assert_eq!(o.len(), 1);
        assert!(!o[0].passed);
        assert_eq!(o[0].message, "30.0 ms exceeds limit 20.0 ms");
        let rules = Rules::parse("max_collective_spread = 40ms\n", "r.toml").unwrap();
        assert!(check(&r, &rules, None)[0].passed);
    }

    #[test]
    fn junit_escapes() {
        let x = junit("t", &[Outcome { rule: "a<b".into(), passed: false, message: "x & y".into() }]);
        assert!(x.contains("name=\"a&lt;b\"") && x.contains("x &amp; y") && x.contains("failures=\"1\""));
    }
}

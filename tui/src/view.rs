//! The visible time range: zoom, pan, mapping between columns and time,
//! and the ticks of the time axis.

/// Narrowest view, ns (below this, columns would be narrower than 1 ns).
pub const MIN_SPAN: i64 = 100;

/// A time range `[t0, t1)` shown over some number of columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    pub t0: i64,
    pub t1: i64,
}

impl View {
    pub fn new(t0: i64, t1: i64) -> View {
        View { t0, t1: t1.max(t0 + MIN_SPAN) }
    }
    pub fn span(&self) -> i64 {
        self.t1 - self.t0
    }
    /// Start of column `c` of `n`.
    pub fn col_start(&self, c: usize, n: usize) -> i64 {
        self.t0 + (self.span() as i128 * c as i128 / n.max(1) as i128) as i64
    }
    /// Column of time `t` among `n` (may be outside `0..n`).
    pub fn col_of(&self, t: i64, n: usize) -> i64 {
        ((t - self.t0) as i128 * n as i128).div_euclid(self.span() as i128) as i64
    }
    /// Zooms by `factor` (< 1 zooms in) keeping time `at` at the same place.
    pub fn zoom(&self, factor: f64, at: i64) -> View {
        let span = ((self.span() as f64 * factor).round() as i64).max(MIN_SPAN);
        let frac = (at - self.t0) as f64 / self.span() as f64;
        let t0 = at - (span as f64 * frac).round() as i64;
        View::new(t0, t0 + span)
    }
    /// Moves by `frac` of the span (negative: to the left).
    pub fn pan(&self, frac: f64) -> View {
        let d = (self.span() as f64 * frac).round() as i64;
        View::new(self.t0 + d, self.t1 + d)
    }
    /// Moves so that `t` is in view, keeping the span (centred if it was out).
    pub fn reveal(&self, t: i64) -> View {
        if t >= self.t0 && t < self.t1 {
            return *self;
        }
        let half = self.span() / 2;
        View::new(t - half, t - half + self.span())
    }
    /// Keeps the view inside `[lo, hi)` with a margin of a tenth of the
    /// trace, and no wider than the trace plus margins.
    pub fn clamp(&self, lo: i64, hi: i64) -> View {
        let margin = ((hi - lo) / 10).max(MIN_SPAN);
        let (lo, hi) = (lo - margin, hi + margin);
        let span = self.span().min(hi - lo);
        let t0 = self.t0.clamp(lo, hi - span);
        View::new(t0, t0 + span)
    }
}

/// Tick spacing of the time axis: 1, 2 or 5 times a power of ten ns, about
/// `target` ns.
pub fn tick_step(target: f64) -> i64 {
    let target = target.max(1.0);
    let p = 10f64.powi(target.log10().floor() as i32);
    let m = target / p;
    let k = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    (k * p).round().max(1.0) as i64
}

/// Formats `t` ns in the unit that suits `step` (the tick spacing or the
/// precision wanted): a step is at least a tenth of the unit, so one
/// decimal at most tells steps apart.
pub fn fmt_time(t: i64, step: i64) -> String {
    let (div, suffix) = if step >= 100_000_000 {
        (1e9, "s")
    } else if step >= 100_000 {
        (1e6, "ms")
    } else if step >= 100 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    };
    let decimals = usize::from(step as f64 / div < 1.0);
    format!("{:.*}{}", decimals, t as f64 / div, suffix)
}

/// Formats a duration with 3 significant digits and a unit.
pub fn fmt_dur(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let s = if ns < 0 { "-" } else { "" };
    let (v, u) = if a < 1e3 {
        return format!("{s}{a:.0}ns");
    } else if a < 1e6 {
        (a / 1e3, "µs")
    } else if a < 1e9 {
        (a / 1e6, "ms")
    } else {
        (a / 1e9, "s")
    };
    let d = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{s}{v:.d$}{u}")
}

/// Parses a time like `1.5ms`, `20us`, `3µs`, `100ns`, `2s` or a plain
/// number of ns.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let mul = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some((v * mul).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_units() {
        assert_eq!(tick_step(13.0), 20);
        assert_eq!(tick_step(4_200.0), 5_000);
        assert_eq!(tick_step(900_000.0), 1_000_000);
        assert_eq!(fmt_time(0, 5_000), "0µs");
        assert_eq!(fmt_time(15_000, 5_000), "15µs");
        assert_eq!(fmt_time(2_500_000, 500_000), "2.5ms");
        assert_eq!(fmt_time(3_000_000_000, 1_000_000_000), "3s");
        assert_eq!(fmt_time(120, 20), "120ns");
        assert_eq!(fmt_dur(1_234_567), "1.23ms");
        assert_eq!(fmt_dur(999), "999ns");
        assert_eq!(fmt_dur(100_000_000), "100ms");
        assert_eq!(parse_time("1.5ms"), Some(1_500_000));
        assert_eq!(parse_time("20us"), Some(20_000));
        assert_eq!(parse_time("7"), Some(7));
        assert_eq!(parse_time("x"), None);
    }

    #[test]
    fn zoom_keeps_the_anchor() {
        let v = View::new(1000, 2000);
        let z = v.zoom(0.5, 1500);
        assert_eq!((z.t0, z.t1), (1250, 1750));
        let z = v.zoom(0.5, 1000);
        assert_eq!((z.t0, z.t1), (1000, 1500));
        assert_eq!(v.pan(0.25), View::new(1250, 2250));
        assert_eq!(v.col_of(1500, 10), 5);
        assert_eq!(v.col_start(5, 10), 1500);
        assert_eq!(v.col_of(999, 10), -1);
        assert_eq!(View::new(0, 10_000_000).clamp(0, 1000).span(), 1200);
    }
}

//! The visible time range: zoom, pan, mapping between columns and time,
//! and the ticks of the time axis.

pub use trace_view::time::{fmt_dur, fmt_time};

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

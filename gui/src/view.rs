//! The visible time range in floating point nanoseconds (so zooming is
//! smooth at any scale), its mapping to pixels, and the time ruler.

pub use trace_view::time::fmt_at;

/// Narrowest view, ns.
pub const MIN_SPAN: f64 = 50.0;

/// The time range `[t0, t1)` shown across the timeline's width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeView {
    pub t0: f64,
    pub t1: f64,
}

impl TimeView {
    pub fn new(t0: f64, t1: f64) -> TimeView {
        TimeView { t0, t1: t1.max(t0 + MIN_SPAN) }
    }
    pub fn span(&self) -> f64 {
        self.t1 - self.t0
    }
    /// The integer range to query, `[floor(t0), ceil(t1))`.
    pub fn range(&self) -> (i64, i64) {
        (self.t0.floor() as i64, (self.t1.ceil() as i64).max(self.t0.floor() as i64 + 1))
    }
    /// Pixel offset of `t` in a width of `w` pixels.
    pub fn x_of(&self, t: f64, w: f32) -> f32 {
        ((t - self.t0) / self.span() * w as f64) as f32
    }
    /// Time at pixel offset `x` of `w`.
    pub fn t_of(&self, x: f32, w: f32) -> f64 {
        self.t0 + x as f64 / w.max(1.0) as f64 * self.span()
    }
    /// Scales the span by `factor` (< 1 zooms in), keeping `at` in place.
    pub fn zoom(&self, factor: f64, at: f64) -> TimeView {
        let span = (self.span() * factor).max(MIN_SPAN);
        let frac = (at - self.t0) / self.span();
        let t0 = at - span * frac;
        TimeView::new(t0, t0 + span)
    }
    /// Moves by `dx` pixels of `w` (positive: later times come into view).
    pub fn pan_px(&self, dx: f32, w: f32) -> TimeView {
        let d = dx as f64 / w.max(1.0) as f64 * self.span();
        TimeView::new(self.t0 + d, self.t1 + d)
    }
    /// Keeps the view within `[lo, hi]` plus a margin of a twentieth of it.
    pub fn clamp(&self, lo: i64, hi: i64) -> TimeView {
        let (lo, hi) = (lo as f64, hi.max(lo + 1) as f64);
        let margin = ((hi - lo) / 20.0).max(MIN_SPAN);
        let (lo, hi) = (lo - margin, hi + margin);
        let span = self.span().min(hi - lo);
        let t0 = self.t0.clamp(lo, hi - span);
        TimeView::new(t0, t0 + span)
    }
    /// The same span moved by `d` ns.
    pub fn shifted(&self, d: f64) -> TimeView {
        TimeView { t0: self.t0 + d, t1: self.t1 + d }
    }
    /// Centres the view on `t`, keeping the span.
    pub fn centre(&self, t: f64) -> TimeView {
        let h = self.span() / 2.0;
        TimeView::new(t - h, t + h)
    }
}

/// The ruler's tick spacing: 1, 2 or 5 times a power of ten, at least
/// `min` ns.
pub fn tick_step(min: f64) -> f64 {
    let p = 10f64.powf(min.max(1.0).log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|k| k * p).find(|s| *s >= min).unwrap_or(10.0 * p)
}

/// The ticks of the ruler of `v` over `w` pixels, at least `gap` pixels
/// apart: (x, label), labelled from `origin` (the start of the trace is 0,
/// as in the terminal viewer).
pub fn ticks(v: &TimeView, w: f32, gap: f32, origin: f64) -> Vec<(f32, String)> {
    let step = tick_step(v.span() * gap as f64 / w.max(1.0) as f64);
    let first = ((v.t0 - origin) / step).ceil() as i64;
    let last = ((v.t1 - origin) / step).floor() as i64;
    (first..=last).take(1000).map(|k| (v.x_of(origin + k as f64 * step, w), fmt_at(k as f64 * step, step))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_point_and_pan_moves() {
        let v = TimeView::new(0.0, 1000.0);
        let z = v.zoom(0.5, 250.0);
        assert!((z.t0 - 125.0).abs() < 1e-9 && (z.t1 - 625.0).abs() < 1e-9);
        let p = v.pan_px(100.0, 1000.0);
        assert_eq!((p.t0, p.t1), (100.0, 1100.0));
        assert_eq!(v.x_of(500.0, 200.0), 100.0);
        assert_eq!(v.t_of(100.0, 200.0), 500.0);
        assert_eq!(v.zoom(1e-9, 0.0).span(), MIN_SPAN);
        let c = TimeView::new(-1e6, 1e6).clamp(0, 1000);
        assert!(c.t0 >= -50.0 - 1e-9 && c.t1 <= 1050.0 + 1e-9);
    }

    #[test]
    fn ruler() {
        assert_eq!(tick_step(3.0), 5.0);
        assert_eq!(tick_step(120.0), 200.0);
        assert_eq!(tick_step(1000.0), 1000.0);
        let t = ticks(&TimeView::new(0.0, 1e6), 1000.0, 100.0, 0.0);
        assert_eq!(t.len(), 11);
        assert_eq!(t[1].1, "0.1 ms");
        // A trace starting at 768 s of the clock is labelled from 0.
        let t = ticks(&TimeView::new(768e9, 768e9 + 1e6), 1000.0, 100.0, 768e9);
        assert_eq!((t[0].0, t[0].1.as_str(), t[1].1.as_str()), (0.0, "0.0 ms", "0.1 ms"));
        assert_eq!(fmt_at(1.5e6, 5e5), "1.5 ms");
    }
}

//! Times and durations as the viewers write and read them (all in ns).
//!
//! The terminal writes compactly (`1.5ms`: every column counts), the
//! desktop viewer with a space (`1.5 ms`) and as many decimals as the
//! ruler's step needs.

/// Unit of a time axis whose ticks are `step` ns apart: a step is at
/// least a tenth of the unit. (divisor, suffix).
fn axis_unit(step: f64) -> (f64, &'static str) {
    if step >= 1e8 {
        (1e9, "s")
    } else if step >= 1e5 {
        (1e6, "ms")
    } else if step >= 1e2 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    }
}

/// Formats `t` compactly in the unit that suits `step` (the tick spacing
/// or the precision wanted): one decimal at most tells steps apart.
pub fn fmt_time(t: i64, step: i64) -> String {
    let (div, suffix) = axis_unit(step as f64);
    let decimals = usize::from(step as f64 / div < 1.0);
    format!("{:.*}{}", decimals, t as f64 / div, suffix)
}

/// Formats time `t` with a space before the unit, in the unit and with the
/// decimals that suit the ruler step `step`.
pub fn fmt_at(t: f64, step: f64) -> String {
    let (div, unit) = axis_unit(step);
    let decimals = if step / div < 1.0 { ((div / step).log10().ceil() as usize).min(6) } else { 0 };
    format!("{:.*} {unit}", decimals, t / div)
}

/// Formats a duration compactly with 3 significant digits and a unit.
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

/// Formats a time to the nanosecond in the unit of its size (`12.345678 ms`,
/// `1.234567891 s`): what a details view shows of one instant.
pub fn fmt_exact(ns: i64) -> String {
    let a = ns.unsigned_abs();
    let s = if ns < 0 { "-" } else { "" };
    let (div, unit, decimals) = if a < 1_000 {
        (1, "ns", 0)
    } else if a < 1_000_000 {
        (1_000, "µs", 3)
    } else if a < 1_000_000_000 {
        (1_000_000, "ms", 6)
    } else {
        (1_000_000_000, "s", 9)
    };
    if decimals == 0 {
        return format!("{s}{a} {unit}");
    }
    format!("{s}{}.{:0decimals$} {unit}", a / div, a % div)
}

/// Parses a duration like `1.5ms`, `20us`, `3µs`, `100 ns`, `2s` or a
/// plain number of ns (never negative).
pub fn parse_duration(s: &str) -> Option<i64> {
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
    fn compact_and_spaced() {
        assert_eq!(fmt_time(0, 5_000), "0µs");
        assert_eq!(fmt_time(2_500_000, 500_000), "2.5ms");
        assert_eq!(fmt_time(120, 20), "120ns");
        assert_eq!(fmt_at(1.5e6, 5e5), "1.5 ms");
        assert_eq!(fmt_at(1e5, 1e5), "0.1 ms");
        assert_eq!(fmt_dur(1_234_567), "1.23ms");
        assert_eq!(fmt_dur(-999), "-999ns");
        assert_eq!(fmt_exact(768_123_456_789), "768.123456789 s");
        assert_eq!(fmt_exact(12_345_678), "12.345678 ms");
        assert_eq!(fmt_exact(-1_500), "-1.500 µs");
        assert_eq!(fmt_exact(42), "42 ns");
    }

    #[test]
    fn parsing() {
        assert_eq!(parse_duration("1.5ms"), Some(1_500_000));
        assert_eq!(parse_duration("1.5 ms"), Some(1_500_000));
        assert_eq!(parse_duration("20us"), Some(20_000));
        assert_eq!(parse_duration("3µs"), Some(3_000));
        assert_eq!(parse_duration("7"), Some(7));
        assert_eq!(parse_duration("-7"), None);
        assert_eq!(parse_duration("x"), None);
    }
}

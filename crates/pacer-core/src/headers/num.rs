//! Strict, allocation-free number parsing for header values.
//!
//! `str::parse::<u64>` accepts a leading `+`; header values must not. These helpers accept ASCII
//! digits only (with an optional fraction for seconds) and saturate instead of failing on huge
//! values, so that absurd numbers reach the clamps instead of vanishing.

use std::time::Duration;

/// ASCII digits (surrounding spaces and tabs allowed) as a `u64`; `None` for anything else,
/// including signs, inner spaces and values above `u64::MAX`.
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let s = trim_ows(s);
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: u64 = 0;
    for b in s.bytes() {
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(n)
}

/// A non-negative decimal number of seconds, `DIGITS [ "." DIGITS ]`, as a `Duration`.
///
/// Fraction digits past the ninth are truncated; an integer part above `u64::MAX` saturates.
/// Signs, exponents, `inf`/`nan`, a bare `.` or a trailing `.` are rejected.
pub(crate) fn parse_decimal_secs(s: &str) -> Option<Duration> {
    let s = trim_ows(s);
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s, None),
    };
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs = int.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    });
    let nanos = match frac {
        None => 0,
        Some(f) => {
            if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let mut nanos: u32 = 0;
            let mut scale: u32 = 100_000_000;
            for b in f.bytes().take(9) {
                nanos += u32::from(b - b'0') * scale;
                scale /= 10;
            }
            nanos
        }
    };
    Some(Duration::new(secs, nanos))
}

/// Reinterprets a number read as seconds as milliseconds (divides by 1000, keeping nanoseconds).
pub(crate) fn millis_from_secs_reading(d: Duration) -> Duration {
    let nanos = d.as_nanos() / 1000;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// Trims HTTP optional whitespace (spaces and tabs).
pub(crate) fn trim_ows(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_digits_only() {
        let cases: &[(&str, Option<u64>)] = &[
            ("0", Some(0)),
            (" 42\t", Some(42)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("+1", None),
            ("-1", None),
            ("1 2", None),
            ("", None),
            ("1.0", None),
            ("١", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_u64(s), *want, "{s:?}");
        }
    }

    #[test]
    fn decimal_seconds() {
        let d = |s, n| Some(Duration::new(s, n));
        let cases: &[(&str, Option<Duration>)] = &[
            ("2", d(2, 0)),
            ("2.0", d(2, 0)),
            ("0.5", d(0, 500_000_000)),
            ("1470173023.123", d(1_470_173_023, 123_000_000)),
            ("1.1234567891", d(1, 123_456_789)),
            ("99999999999999999999999", d(u64::MAX, 0)),
            (".5", None),
            ("5.", None),
            ("-1", None),
            ("1e3", None),
            ("NaN", None),
            ("inf", None),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_decimal_secs(s), *want, "{s:?}");
        }
    }

    #[test]
    fn milliseconds() {
        assert_eq!(
            millis_from_secs_reading(Duration::from_secs(600_000)),
            Duration::from_secs(600)
        );
        assert_eq!(
            millis_from_secs_reading(Duration::new(1, 500_000_000)),
            Duration::from_micros(1500)
        );
    }
}

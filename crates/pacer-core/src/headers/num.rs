//! Strict, allocation-free number parsing for header values.
//!
//! `str::parse::<u64>` accepts a leading `+`; header values must not. These helpers accept ASCII
//! digits only (with an optional fraction for seconds) and saturate instead of failing on huge
//! values, so that absurd numbers reach the clamps instead of vanishing.

use std::ops::Range;
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

/// A count, `DIGITS [ "." DIGITS ]`, rounded down (Reddit writes `597.0`): rounding a
/// remaining down is the conservative reading. `None` for signs, exponents, a bare or trailing
/// `.`, and an integer part above `u64::MAX`.
pub(crate) fn parse_count(s: &str) -> Option<u64> {
    let s = trim_ows(s);
    match s.split_once('.') {
        None => parse_u64(s),
        Some((int, frac)) => {
            let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
            if !digits(int) || !digits(frac) {
                return None;
            }
            parse_u64(int)
        }
    }
}

/// The members of a list-valued field: its comma-separated parts, commas inside quoted strings
/// (`comment="a,b"`) left alone.
pub(crate) fn members(value: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(value);
    std::iter::from_fn(move || {
        let s = rest?;
        let (mut quoted, mut escaped) = (false, false);
        for (i, b) in s.bytes().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if quoted => escaped = true,
                b'"' => quoted = !quoted,
                b',' if !quoted => {
                    rest = Some(&s[i + 1..]);
                    return Some(&s[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(s)
    })
}

/// A member without its parameters: `50` of `50;comment="x"` (draft-06: parameters after the
/// value are ignored).
pub(crate) fn bare_value(member: &str) -> &str {
    member.split_once(';').map_or(member, |(v, _)| v)
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
    trim_bytes(s, |b| matches!(b, b' ' | b'\t'))
}

/// `s` without the ASCII bytes `trim` picks at either end: `str::trim_matches`, byte by byte
/// (a third of its instructions on a field's few spaces).
pub(crate) fn trim_bytes(s: &str, trim: impl Fn(u8) -> bool) -> &str {
    // Both ends are next to an ASCII byte (or at an end): char boundaries.
    s.get(trimmed(s.as_bytes(), trim)).unwrap_or_default()
}

/// Where `b` is without the bytes `trim` picks at either end.
#[inline]
pub(crate) fn trimmed(b: &[u8], trim: impl Fn(u8) -> bool) -> Range<usize> {
    let start = b.iter().position(|c| !trim(*c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !trim(*c)).map_or(start, |e| e + 1);
    start..end
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
    fn counts_are_rounded_down() {
        let cases: &[(&str, Option<u64>)] = &[
            ("597", Some(597)),
            ("597.0", Some(597)),
            (" 597.9 ", Some(597)),
            ("0.5", Some(0)),
            ("18446744073709551615.9", Some(u64::MAX)),
            ("18446744073709551616.0", None),
            ("5.", None),
            (".5", None),
            ("-1", None),
            ("-1.0", None),
            ("1 .0", None),
            ("1e3", None),
            ("1.0.0", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_count(s), *want, "{s:?}");
        }
    }

    #[test]
    fn members_split_outside_quotes() {
        let got: Vec<_> = members(r#"50;comment="a,b", 7"#).collect();
        assert_eq!(got, [r#"50;comment="a,b""#, " 7"]);
        let got: Vec<_> = members(r#"1;c="x\",y", 2,"#).collect();
        assert_eq!(got, [r#"1;c="x\",y""#, " 2", ""]);
        assert_eq!(members("").collect::<Vec<_>>(), [""]);
        assert_eq!(bare_value(" 30;foo=1"), " 30");
        assert_eq!(bare_value("30"), "30");
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

    proptest::proptest! {
        #[test]
        fn trimming_bytes_is_trim_matches(s in "[ \t\u{a0}a\u{e9}.]{0,8}") {
            proptest::prop_assert_eq!(trim_ows(&s), s.trim_matches([' ', '\t']));
            proptest::prop_assert_eq!(trim_bytes(&s, |b| b == b' '), s.trim_matches(' '));
        }
    }
}

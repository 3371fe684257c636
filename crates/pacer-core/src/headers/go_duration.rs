//! Go-style duration strings, as OpenAI sends its resets: `6m0s`, `1s`, `20ms`, `1h2m3.5s`.
//!
//! The grammar is Go's `time.ParseDuration` without the sign: one or more `NUMBER UNIT` pairs,
//! where NUMBER is digits with an optional fraction and UNIT is `ns`, `us`, `µs`, `μs`, `ms`,
//! `s`, `m` or `h`. A bare `0` is zero. Negative durations are rejected (a reset is never in
//! the past); sums saturate, and the caller clamps.

use std::time::Duration;

/// Parses a Go duration string; `None` when `s` is not one.
pub(crate) fn parse_go_duration(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = s;
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after_int) = rest.split_at(int_len);
        let (frac, after_num) = match after_int.strip_prefix('.') {
            Some(f) => {
                let n = f.bytes().take_while(u8::is_ascii_digit).count();
                f.split_at(n)
            }
            None => ("", after_int),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let unit_len = after_num
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(after_num.len(), |(i, _)| i);
        let (unit, next) = after_num.split_at(unit_len);
        let nanos_per_unit: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        total = total.saturating_add(scaled(int, frac, nanos_per_unit));
        rest = next;
    }
    Some(total)
}

/// `int.frac × nanos_per_unit` nanoseconds, saturating.
fn scaled(int: &str, frac: &str, nanos_per_unit: u128) -> Duration {
    let whole = int.bytes().fold(0u128, |n, b| {
        n.saturating_mul(10).saturating_add(u128::from(b - b'0'))
    });
    let mut nanos = whole.saturating_mul(nanos_per_unit);
    let mut scale = nanos_per_unit;
    for b in frac.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        nanos = nanos.saturating_add(u128::from(b - b'0') * scale);
    }
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    let sub = u32::try_from(nanos % 1_000_000_000).unwrap_or(0);
    Duration::new(secs, sub)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_and_go_forms() {
        let ms = Duration::from_millis;
        let cases: &[(&str, Option<Duration>)] = &[
            ("6m0s", Some(ms(360_000))),
            ("1s", Some(ms(1_000))),
            ("20ms", Some(ms(20))),
            ("12ms", Some(ms(12))),
            ("0s", Some(Duration::ZERO)),
            ("0", Some(Duration::ZERO)),
            ("1h2m3.5s", Some(ms(3_723_500))),
            ("1.5h", Some(ms(5_400_000))),
            ("7.66s", Some(ms(7_660))),
            ("500us", Some(Duration::from_micros(500))),
            ("500µs", Some(Duration::from_micros(500))),
            ("3ns", Some(Duration::from_nanos(3))),
            (".5s", Some(ms(500))),
            ("99999999999999999999999h", Some(Duration::new(u64::MAX, 0))),
            ("", None),
            ("-1s", None),
            ("+1s", None),
            ("1", None),
            ("s", None),
            ("1x", None),
            ("1s2", None),
            ("1 s", None),
            (".s", None),
        ];
        for (s, want) in cases {
            match (parse_go_duration(s), want) {
                (Some(got), Some(w)) if *w == Duration::new(u64::MAX, 0) => {
                    assert!(got.as_secs() == u64::MAX, "{s:?} -> {got:?}")
                }
                (got, w) => assert_eq!(got, *w, "{s:?}"),
            }
        }
    }
}

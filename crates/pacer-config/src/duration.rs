//! Durations as configuration files write them: .NET `TimeSpan` strings (`"00:00:05"`,
//! `"1.02:00:00"`, `"00:00:00.250"`), humantime-style strings (`"5s"`, `"250ms"`, `"1m30s"`,
//! `"1.5s"`), and bare numbers of seconds (`5`, `0.25`, `"5"`).
//!
//! Parsing is exact (integer nanoseconds, no floating point for strings) and total: any text
//! gives a duration or a reason, never a panic.

use std::time::Duration;

/// What a duration accepts, for error messages.
pub(crate) const EXPECTED: &str = "expected a duration: a TimeSpan like \"00:00:05\", \
     a length like \"5s\", \"250ms\" or \"1m30s\", or a number of seconds";

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A duration from a configuration string.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(EXPECTED.to_owned());
    }
    if text.starts_with('-') {
        return Err("must not be negative".to_owned());
    }
    let nanos = if text.contains(':') {
        time_span(text)?
    } else if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        number(text, NANOS_PER_SEC).ok_or_else(|| EXPECTED.to_owned())?
    } else {
        lengths(text)?
    };
    from_nanos(nanos)
}

/// A duration from a number of seconds.
pub(crate) fn from_secs_f64(secs: f64) -> Result<Duration, String> {
    if secs.is_nan() {
        return Err(EXPECTED.to_owned());
    }
    if secs < 0.0 {
        return Err("must not be negative".to_owned());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| "is too large".to_owned())
}

fn from_nanos(nanos: u128) -> Result<Duration, String> {
    let secs = u64::try_from(nanos / NANOS_PER_SEC).map_err(|_| "is too large".to_owned())?;
    // The remainder is below 10^9, so it fits in u32.
    let sub = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    Ok(Duration::new(secs, sub))
}

/// `digits[.digits]` times `unit` nanoseconds, exactly; `None` if it is not such a number or
/// overflows.
fn number(text: &str, unit: u128) -> Option<u128> {
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, f),
        None => (text, ""),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut nanos = whole.checked_mul(unit)?;
    // Digits beyond nanosecond precision of the unit add nothing.
    let mut scale = unit;
    for digit in fraction.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        nanos = nanos.checked_add(u128::from(digit - b'0') * scale)?;
    }
    Some(nanos)
}

/// A .NET TimeSpan: `[d.]hh:mm[:ss[.fffffff]]`.
fn time_span(text: &str) -> Result<u128, String> {
    const FORM: &str = "expected a TimeSpan [d.]hh:mm:ss[.fffffff], like \"00:00:05\"";
    let parts: Vec<&str> = text.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(FORM.to_owned());
    }
    let (days, hours) = match parts[0].split_once('.') {
        Some((d, h)) => (d, h),
        None => ("0", parts[0]),
    };
    let (seconds, fraction) = match parts.get(2) {
        Some(s) => s.split_once('.').unwrap_or((s, "")),
        None => ("0", ""),
    };
    let int = |s: &str| -> Result<u128, String> {
        if s.is_empty() || s.len() > 8 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(FORM.to_owned());
        }
        s.parse().map_err(|_| FORM.to_owned())
    };
    let (days, hours, minutes, seconds) = (int(days)?, int(hours)?, int(parts[1])?, int(seconds)?);
    if fraction.len() > 7 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(
            "expected at most 7 digits of fractional seconds, like \"00:00:00.250\"".into(),
        );
    }
    if hours > 23 {
        return Err(format!(
            "has {hours} hours: a TimeSpan's hours are 0 to 23 (write \"1.00:00:00\" for a day)"
        ));
    }
    if minutes > 59 || seconds > 59 {
        return Err("a TimeSpan's minutes and seconds are 0 to 59".to_owned());
    }
    let whole = ((days * 24 + hours) * 60 + minutes) * 60 + seconds;
    let fraction = number(&format!("0.{fraction}"), NANOS_PER_SEC).unwrap_or(0);
    Ok(whole * NANOS_PER_SEC + fraction)
}

/// Humantime-style lengths: `5s`, `250ms`, `1m30s`, `1h 15m`, `1.5s`.
fn lengths(text: &str) -> Result<u128, String> {
    let mut total: u128 = 0;
    let mut rest = text;
    let mut pieces = 0;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (value, after) = rest.split_at(digits);
        let after = after.trim_start();
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        if value.is_empty() {
            return Err(EXPECTED.to_owned());
        }
        let Some(unit_nanos) = unit_nanos(unit) else {
            return Err(format!(
                "has an unknown unit {unit:?}: expected ns, us, ms, s, m, h or d"
            ));
        };
        let nanos = number(value, unit_nanos).ok_or_else(|| EXPECTED.to_owned())?;
        total = total
            .checked_add(nanos)
            .ok_or_else(|| "is too large".to_owned())?;
        pieces += 1;
        rest = after;
    }
    if pieces == 0 {
        return Err(EXPECTED.to_owned());
    }
    Ok(total)
}

fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "ns" | "nsec" | "nanos" => 1,
        "us" | "µs" | "usec" | "micros" => 1_000,
        "ms" | "msec" | "millis" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => NANOS_PER_SEC,
        "m" | "min" | "mins" | "minute" | "minutes" => 60 * NANOS_PER_SEC,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600 * NANOS_PER_SEC,
        "d" | "day" | "days" => 86_400 * NANOS_PER_SEC,
        _ => return None,
    })
}

/// A duration as the appsettings form writes it: a .NET TimeSpan (`"00:00:05"`,
/// `"1.02:03:04.5"`), or nanoseconds (`"1500000001ns"`) when it is finer than a TimeSpan's tick
/// of 100 ns. [`parse`] reads either back to the same duration.
pub(crate) fn text(d: Duration) -> String {
    let nanos = d.subsec_nanos();
    if !nanos.is_multiple_of(100) {
        return format!("{}ns", d.as_nanos());
    }
    let secs = d.as_secs();
    let (days, hours) = (secs / 86_400, secs / 3600 % 24);
    let (minutes, seconds) = (secs / 60 % 60, secs % 60);
    let mut out = if days > 0 {
        format!("{days}.{hours:02}:{minutes:02}:{seconds:02}")
    } else {
        format!("{hours:02}:{minutes:02}:{seconds:02}")
    };
    if nanos > 0 {
        let ticks = format!("{:07}", nanos / 100);
        out.push('.');
        out.push_str(ticks.trim_end_matches('0'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_accepted_form() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        let table = [
            ("00:00:05", s(5)),
            ("00:00:10", s(10)),
            ("00:01:30", s(90)),
            ("01:00:00", s(3600)),
            ("1.02:00:00", s(86_400 + 7_200)),
            ("00:00:00.250", ms(250)),
            ("00:00:01.5", ms(1500)),
            ("00:00:00.0000001", Duration::from_nanos(100)),
            ("00:05", s(300)),
            ("5s", s(5)),
            ("250ms", ms(250)),
            ("1m30s", s(90)),
            ("1m 30s", s(90)),
            ("1h", s(3600)),
            ("2d", s(172_800)),
            ("1.5s", ms(1500)),
            (".5s", ms(500)),
            ("10us", Duration::from_micros(10)),
            ("10µs", Duration::from_micros(10)),
            ("7ns", Duration::from_nanos(7)),
            ("5 seconds", s(5)),
            ("2 min", s(120)),
            ("5", s(5)),
            ("0.25", ms(250)),
            ("0", Duration::ZERO),
            (" 5s ", s(5)),
        ];
        for (text, expected) in table {
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn every_rejected_form_says_why() {
        let table = [
            ("", EXPECTED),
            ("fast", EXPECTED),
            (
                "5 fast",
                "has an unknown unit \"fast\": expected ns, us, ms, s, m, h or d",
            ),
            (
                "5 parsecs",
                "has an unknown unit \"parsecs\": expected ns, us, ms, s, m, h or d",
            ),
            ("-5s", "must not be negative"),
            ("-00:00:05", "must not be negative"),
            ("00:00:60", "a TimeSpan's minutes and seconds are 0 to 59"),
            (
                "25:00:00",
                "has 25 hours: a TimeSpan's hours are 0 to 23 (write \"1.00:00:00\" for a day)",
            ),
            (
                "1:2:3:4",
                "expected a TimeSpan [d.]hh:mm:ss[.fffffff], like \"00:00:05\"",
            ),
            (
                "aa:00:00",
                "expected a TimeSpan [d.]hh:mm:ss[.fffffff], like \"00:00:05\"",
            ),
            (
                "00:00:00.12345678",
                "expected at most 7 digits of fractional seconds, like \"00:00:00.250\"",
            ),
            ("1.2.3s", EXPECTED),
            ("s", EXPECTED),
            ("99999999999999999999999999999999999999999s", EXPECTED),
            ("999999999999999999999d", "is too large"),
        ];
        for (text, reason) in table {
            assert_eq!(parse(text), Err(reason.to_owned()), "{text}");
        }
    }

    #[test]
    fn numbers_of_seconds() {
        assert_eq!(from_secs_f64(0.25), Ok(Duration::from_millis(250)));
        assert_eq!(from_secs_f64(-1.0), Err("must not be negative".to_owned()));
        assert_eq!(from_secs_f64(f64::NAN), Err(EXPECTED.to_owned()));
        assert_eq!(from_secs_f64(f64::INFINITY), Err("is too large".to_owned()));
        assert_eq!(from_secs_f64(1e30), Err("is too large".to_owned()));
    }

    proptest! {
        #[test]
        fn parsing_is_total(text in "\\PC{0,40}") {
            let _ = parse(&text);
        }

        #[test]
        fn time_spans_and_lengths_agree(h in 0u64..24, m in 0u64..60, s in 0u64..60, ms in 0u64..1000) {
            let span = parse(&format!("{h:02}:{m:02}:{s:02}.{ms:03}")).unwrap();
            let length = parse(&format!("{h}h{m}m{s}s{ms}ms")).unwrap();
            prop_assert_eq!(span, length);
            prop_assert_eq!(span, Duration::from_millis(((h * 60 + m) * 60 + s) * 1000 + ms));
        }
    }

    #[test]
    fn durations_are_written_as_time_spans_and_read_back() {
        for (d, written) in [
            (Duration::ZERO, "00:00:00"),
            (Duration::from_secs(30), "00:00:30"),
            (Duration::from_millis(250), "00:00:00.25"),
            (Duration::new(93_784, 500_000_000), "1.02:03:04.5"),
            (Duration::new(1, 100), "00:00:01.0000001"),
            (Duration::new(1, 1), "1000000001ns"),
        ] {
            assert_eq!(text(d), written, "{d:?}");
            assert_eq!(parse(&text(d)), Ok(d), "{d:?}");
        }
        assert_eq!(parse(&text(Duration::MAX)), Ok(Duration::MAX));
    }
}

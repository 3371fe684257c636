//! Absolute times in header values: RFC 3339 (Anthropic, some `X-RateLimit-Reset`s) and the
//! three HTTP-date forms of RFC 9110 §5.6.7 (`Retry-After`).
//!
//! Both resolve to "how long from `now`", saturating at zero for a time in the past: a reset that
//! has already happened means "go", never a wait of decades.

use std::time::{Duration, SystemTime};

/// Nanoseconds since the Unix epoch (negative before it), wide enough for any parsed date.
type EpochNanos = i128;

const NANOS_PER_SEC: i128 = 1_000_000_000;

/// The time from `now` until `target`, or zero when `target` is not in the future.
pub(crate) fn until(target: EpochNanos, now: SystemTime) -> Duration {
    let diff = target - epoch_nanos(now);
    if diff <= 0 {
        return Duration::ZERO;
    }
    let secs = u64::try_from(diff / NANOS_PER_SEC).unwrap_or(u64::MAX);
    // The remainder of a positive division by 10^9 fits in u32.
    let nanos = u32::try_from(diff % NANOS_PER_SEC).unwrap_or(0);
    Duration::new(secs, nanos)
}

/// `now` as nanoseconds since the Unix epoch.
pub(crate) fn epoch_nanos(now: SystemTime) -> EpochNanos {
    match now.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month, day) of a number of days since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `t` as an RFC 3339 date-time in UTC with milliseconds (`2026-12-07T09:00:00.250Z`), for
/// what Pacer writes (a saved memory's time). Read back by [`parse_rfc3339`].
pub(crate) fn format_rfc3339(t: SystemTime) -> String {
    let nanos = epoch_nanos(t);
    let secs = nanos.div_euclid(NANOS_PER_SEC) as i64;
    let millis = (nanos.rem_euclid(NANOS_PER_SEC) / 1_000_000) as u32;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A time from epoch nanoseconds (before the epoch too).
pub(crate) fn from_epoch_nanos(nanos: EpochNanos) -> SystemTime {
    let magnitude = Duration::new(
        u64::try_from(nanos.unsigned_abs() / NANOS_PER_SEC as u128).unwrap_or(u64::MAX),
        (nanos.unsigned_abs() % NANOS_PER_SEC as u128) as u32,
    );
    if nanos >= 0 {
        SystemTime::UNIX_EPOCH + magnitude
    } else {
        SystemTime::UNIX_EPOCH - magnitude
    }
}

/// The Gregorian year of a number of days since 1970-01-01.
fn year_from_days(days: i64) -> i64 {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let year = yoe + era * 400;
    if mp >= 10 { year + 1 } else { year }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
}

/// Parses an RFC 3339 date-time, `YYYY-MM-DD(T| )HH:MM:SS[.frac](Z|±HH:MM)`, to epoch nanos.
///
/// A leap second (`:60`) is read as the last second of the minute.
pub(crate) fn parse_rfc3339(s: &str) -> Option<EpochNanos> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let year = i64::from(digits(&b[0..4])?);
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut nanos: i128 = 0;
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        let mut scale = 100_000_000i128;
        for d in frac.iter().take(n.min(9)) {
            nanos += i128::from(d - b'0') * scale;
            scale /= 10;
        }
        rest = &frac[n..];
    }
    let offset_secs: i64 = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let oh = i64::from(digits(&[*h1, *h2])?);
            let om = i64::from(digits(&[*m1, *m2])?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    let secs = days_from_civil(year, month, day) * 86_400
        + i64::from(hour) * 3600
        + i64::from(minute) * 60
        + i64::from(second.min(59))
        - offset_secs;
    Some(i128::from(secs) * NANOS_PER_SEC + nanos)
}

/// Parses an HTTP-date in any of its three forms (IMF-fixdate, RFC 850, asctime) to epoch nanos.
///
/// RFC 850's two-digit year is resolved against `now` as RFC 9110 requires: a year that would
/// be more than 50 years in the future is the most recent past year with those digits. The
/// weekday must match the date (a mismatch makes the value invalid).
pub(crate) fn parse_http_date(s: &str, now: SystemTime) -> Option<EpochNanos> {
    let s = s.trim_matches([' ', '\t']);
    let parsed = match rfc850_as_imf_fixdate(s, now) {
        Some(imf) => httpdate::parse_http_date(&imf),
        None => httpdate::parse_http_date(s),
    };
    parsed.ok().map(epoch_nanos)
}

/// Rewrites `Sunday, 06-Nov-94 08:49:37 GMT` as `Sun, 06 Nov 1994 08:49:37 GMT`, resolving the
/// year with the 50-year rule; `None` when `s` is not in RFC 850 form.
fn rfc850_as_imf_fixdate(s: &str, now: SystemTime) -> Option<String> {
    const DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let (weekday, rest) = s.split_once(", ")?;
    if !DAYS.contains(&weekday) {
        return None;
    }
    let r = rest.as_bytes();
    // 06-Nov-94 08:49:37 GMT
    if r.len() != 22 || r[2] != b'-' || r[6] != b'-' || r[9] != b' ' {
        return None;
    }
    let yy = i64::from(digits(&r[7..9])?);
    let current = year_from_days(epoch_nanos(now).div_euclid(NANOS_PER_SEC * 86_400) as i64);
    let mut year = current - current.rem_euclid(100) + yy;
    if year > current + 50 {
        year -= 100;
    } else if year <= current - 50 {
        year += 100;
    }
    if !(1970..=9999).contains(&year) {
        return None;
    }
    let short = weekday.get(..3)?;
    Some(format!(
        "{short}, {} {} {year:04}{}",
        rest.get(0..2)?,
        rest.get(3..6)?,
        rest.get(9..)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

    #[test]
    fn what_pacer_writes_reads_back_to_the_millisecond() {
        let table = [
            (NOW, 0, "2026-01-01T00:00:00.000Z"),
            (NOW + 86_399, 999, "2026-01-01T23:59:59.999Z"),
            (951_782_400, 250, "2000-02-29T00:00:00.250Z"),
            (0, 0, "1970-01-01T00:00:00.000Z"),
            (4_102_444_800, 1, "2100-01-01T00:00:00.001Z"),
        ];
        for (secs, millis, text) in table {
            let t = SystemTime::UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis);
            assert_eq!(format_rfc3339(t), text);
            assert_eq!(parse_rfc3339(text).map(from_epoch_nanos), Some(t), "{text}");
        }
        let before = SystemTime::UNIX_EPOCH - Duration::from_secs(86_400);
        assert_eq!(format_rfc3339(before), "1969-12-31T00:00:00.000Z");
        assert_eq!(
            parse_rfc3339("1969-12-31T00:00:00Z").map(from_epoch_nanos),
            Some(before)
        );
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
    }

    fn secs(n: i128) -> EpochNanos {
        n * NANOS_PER_SEC
    }

    #[test]
    fn civil_days_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        for days in [-800_000, -1, 0, 59, 11_016, 20_454, 2_932_896] {
            let y = year_from_days(days);
            assert!(days_from_civil(y, 1, 1) <= days && days < days_from_civil(y + 1, 1, 1));
        }
    }

    #[test]
    fn rfc3339_forms() {
        let cases: &[(&str, Option<EpochNanos>)] = &[
            ("2026-01-01T00:00:00Z", Some(secs(NOW as i128))),
            ("2025-08-21T12:40:59Z", Some(secs(1_755_780_059))),
            ("2026-01-01T01:00:00+01:00", Some(secs(NOW as i128))),
            ("2025-12-31T23:00:00-01:00", Some(secs(NOW as i128))),
            ("2026-01-01 00:00:00z", Some(secs(NOW as i128))),
            (
                "2022-09-06T08:30:43.3599067Z",
                Some(secs(1_662_453_043) + 359_906_700),
            ),
            ("2016-12-31T23:59:60Z", Some(secs(1_483_228_799))),
            ("2024-02-29T00:00:00Z", Some(secs(1_709_164_800))),
            ("2025-02-29T00:00:00Z", None),
            ("2026-13-01T00:00:00Z", None),
            ("2026-01-01T24:00:00Z", None),
            ("2026-01-01T00:00:00", None),
            ("2026-01-01T00:00:00.Z", None),
            ("2026-01-01T00:00:00+1:00", None),
            ("2026-01-01", None),
            ("+2026-01-01T00:00:00Z", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_rfc3339(s), *want, "{s}");
        }
    }

    #[test]
    fn the_three_http_date_forms() {
        let t = Some(secs(784_111_777)); // 1994-11-06T08:49:37Z, a Sunday
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", now()), t);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", now()), t);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994", now()), t);
        assert_eq!(parse_http_date(" Sun, 06 Nov 1994 08:49:37 GMT ", now()), t);
        // Wrong weekday, ISO 8601, garbage.
        assert_eq!(
            parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT", now()),
            None
        );
        assert_eq!(parse_http_date("1994-11-06T08:49:37Z", now()), None);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94", now()), None);
        assert_eq!(parse_http_date("", now()), None);
    }

    #[test]
    fn rfc850_years_use_the_fifty_year_window() {
        // From 2026, "76" is 2076 (50 years ahead, allowed) and "77" is 1977.
        let y2076 = days_from_civil(2076, 1, 1) * 86_400;
        assert_eq!(
            parse_http_date("Wednesday, 01-Jan-76 00:00:00 GMT", now()),
            Some(secs(i128::from(y2076)))
        );
        let y1977 = days_from_civil(1977, 1, 1) * 86_400;
        assert_eq!(
            parse_http_date("Saturday, 01-Jan-77 00:00:00 GMT", now()),
            Some(secs(i128::from(y1977)))
        );
        let y2030 = days_from_civil(2030, 6, 1) * 86_400;
        assert_eq!(
            parse_http_date("Saturday, 01-Jun-30 00:00:00 GMT", now()),
            Some(secs(i128::from(y2030)))
        );
    }

    #[test]
    fn until_saturates_at_zero() {
        assert_eq!(until(secs(NOW as i128 + 5), now()), Duration::from_secs(5));
        assert_eq!(until(secs(NOW as i128 - 5), now()), Duration::ZERO);
        assert_eq!(until(secs(-1), now()), Duration::ZERO);
        assert!(until(i128::MAX / 2, now()) >= Duration::from_secs(u64::MAX));
    }
}

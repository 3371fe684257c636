//! Reset normalisation: every dialect's way of saying "when the quota comes back", turned into
//! the time from `now`.
//!
//! Servers send resets as delta seconds (`30`), fractional seconds (Discord `1.234`), delta
//! milliseconds (Prisjakt `600000`), Unix epoch seconds (GitHub `1655120964`), epoch
//! milliseconds, Go durations (OpenAI `6m0s`), RFC 3339 (Anthropic `2025-08-21T12:40:59Z`) and
//! HTTP-dates. Strings are recognised by their shape. Numbers are told apart by magnitude alone,
//! with fixed bands, so that the reading does not depend on how far the client's clock is off:
//!
//! | value `n` (as seconds)        | read as            | why                                        |
//! |-------------------------------|--------------------|--------------------------------------------|
//! | `n < 172 800` (48 h)          | delta seconds      | the draft-polli#41 bound for delta-seconds  |
//! | `172 800 ≤ n < 10^9`          | delta milliseconds | 2.9 min .. 11.6 days; too long as seconds   |
//! | `10^9 ≤ n < 10^11`            | epoch seconds      | 2001 .. year 5138                           |
//! | `10^11 ≤ n < 10^12`           | no reset           | past 5138 as seconds, before 2001 as ms     |
//! | `n ≥ 10^12`                   | epoch milliseconds | 2001-09-09 onwards                          |
//!
//! An epoch in the past gives zero (withcoral/coral#89: a past epoch must not become a huge
//! wait). Results are *not* clamped here: a reset beyond 365 days, and a number in the band no
//! server means (returned as `Duration::MAX`), reach `Policy::set_reset_after`, which clamps them
//! to 365 days and marks the policy unsound. They fail closed: never zero, never "go now".

use std::time::{Duration, SystemTime};

use super::bounds::{
    DELTA_SECONDS_BELOW, EPOCH_MILLIS_FROM, EPOCH_MILLIS_MEANT_FROM, EPOCH_SECONDS_FROM,
    MAX_MEMBERS,
};
use super::datetime::{parse_http_date, parse_rfc3339, until};
use super::go_duration::parse_go_duration;
use super::num::{bare_value, members, millis_from_secs_reading, parse_decimal_secs, trim_ows};

/// How a bare number in a reset field is read (see the module docs for the bands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberReading {
    DeltaSeconds,
    DeltaMillis,
    EpochSeconds,
    /// No reset a server means (see [`EPOCH_MILLIS_MEANT_FROM`]).
    Meaningless,
    EpochMillis,
}

impl NumberReading {
    /// The reading of a number whose integer part is `secs`.
    pub(crate) fn of(secs: u64) -> NumberReading {
        if secs < DELTA_SECONDS_BELOW {
            NumberReading::DeltaSeconds
        } else if secs < EPOCH_SECONDS_FROM {
            NumberReading::DeltaMillis
        } else if secs < EPOCH_MILLIS_FROM {
            NumberReading::EpochSeconds
        } else if secs < EPOCH_MILLIS_MEANT_FROM {
            NumberReading::Meaningless
        } else {
            NumberReading::EpochMillis
        }
    }
}

/// The time from `now` until a number resets, read by magnitude.
fn number_reset(n: Duration, now: SystemTime) -> Duration {
    match NumberReading::of(n.as_secs()) {
        NumberReading::DeltaSeconds => n,
        NumberReading::DeltaMillis => millis_from_secs_reading(n),
        NumberReading::EpochSeconds => until(n.as_nanos() as i128, now),
        NumberReading::Meaningless => Duration::MAX,
        NumberReading::EpochMillis => until(millis_from_secs_reading(n).as_nanos() as i128, now),
    }
}

/// Parses one reset value in any supported form to the time from `now`, unclamped (see the
/// module docs).
pub(crate) fn parse_reset(value: &str, now: SystemTime) -> Option<Duration> {
    let v = trim_ows(value);
    let first = *v.as_bytes().first()?;
    let reset = if let Some(n) = parse_decimal_secs(v) {
        number_reset(n, now)
    } else if first.is_ascii_digit() && v.as_bytes().get(4) == Some(&b'-') {
        until(parse_rfc3339(v)?, now)
    } else if first.is_ascii_digit() || first == b'.' {
        parse_go_duration(v)?
    } else {
        until(parse_http_date(v, now)?, now)
    };
    Some(reset)
}

/// Parses a reset field that may hold several comma-separated members (repeated header lines):
/// the whole value first (an HTTP-date has a comma), else every member, keeping the latest
/// reset. Parameters after a value are ignored (draft-06). Any member that does not parse, or
/// more than [`MAX_MEMBERS`], make the field unknown.
pub(crate) fn parse_reset_field(value: &str, now: SystemTime) -> Option<Duration> {
    if let Some(r) = parse_reset(value, now) {
        return Some(r);
    }
    if !value.contains(',') {
        return parse_reset(bare_value(value), now);
    }
    let mut latest: Option<Duration> = None;
    for (i, member) in members(value).enumerate() {
        if i >= MAX_MEMBERS {
            return None;
        }
        let r = parse_reset(bare_value(member), now)?;
        latest = Some(latest.map_or(r, |l| l.max(r)));
    }
    latest
}

/// Parses a reset that the dialect defines as (possibly fractional) delta seconds, like Discord's
/// `X-RateLimit-Reset-After`; unclamped, like [`parse_reset`].
pub(crate) fn parse_delta_seconds(value: &str) -> Option<Duration> {
    parse_decimal_secs(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z
    const YEAR: Duration = Duration::from_secs(365 * 86_400);

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
    }

    fn s(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n))
    }

    #[test]
    fn bands_and_their_edges() {
        use NumberReading::*;
        let cases = [
            (0, DeltaSeconds),
            (172_799, DeltaSeconds),
            (172_800, DeltaMillis),
            (999_999_999, DeltaMillis),
            (1_000_000_000, EpochSeconds),
            (99_999_999_999, EpochSeconds),
            (100_000_000_000, Meaningless),
            (999_999_999_999, Meaningless),
            (1_000_000_000_000, EpochMillis),
            (u64::MAX, EpochMillis),
        ];
        for (n, want) in cases {
            assert_eq!(NumberReading::of(n), want, "{n}");
        }
    }

    #[test]
    fn every_form_resolves_against_now() {
        let now_s = NOW.to_string();
        let in_30 = (NOW + 30).to_string();
        let ago_5 = (NOW - 5).to_string();
        let ms_in_1500 = (NOW * 1000 + 1500).to_string();
        let ms_ago = (NOW * 1000 - 1).to_string();
        let cases: Vec<(&str, Option<Duration>)> = vec![
            // Delta seconds (IETF, Kong, Envoy, Zendesk).
            ("0", s(0)),
            ("50", s(50)),
            ("172799", s(172_799)),
            // Fractional seconds (Discord).
            ("1.5", Some(Duration::from_millis(1500))),
            // Delta milliseconds (Prisjakt).
            ("600000", s(600)),
            ("172800", Some(Duration::from_millis(172_800))),
            // Epoch seconds (GitHub, X), now and around it.
            (in_30.as_str(), s(30)),
            (now_s.as_str(), s(0)),
            (ago_5.as_str(), s(0)),
            ("1000000000", s(0)),
            ("1655120964", s(0)),
            // Epoch seconds with a fraction (Discord's X-RateLimit-Reset).
            ("1767225601.250", Some(Duration::from_millis(1250))),
            // Epoch milliseconds.
            (ms_in_1500.as_str(), Some(Duration::from_millis(1500))),
            (ms_ago.as_str(), s(0)),
            ("1000000000000", s(0)),
            // Go durations (OpenAI).
            ("6m0s", s(360)),
            ("20ms", Some(Duration::from_millis(20))),
            // RFC 3339 (Anthropic) and HTTP-date.
            ("2026-01-01T00:01:00Z", s(60)),
            ("2025-08-21T12:40:59Z", s(0)),
            ("Thu, 01 Jan 2026 00:00:10 GMT", s(10)),
            // Garbage and negatives.
            ("-5", None),
            ("", None),
            ("soon", None),
            ("Tue Feb 16 2021 09:02:42 GMT+0100 (CET)", None),
            ("1e9", None),
        ];
        for (v, want) in cases {
            assert_eq!(parse_reset(v, now()), want, "{v:?}");
        }
    }

    #[test]
    fn resets_no_server_means_are_returned_beyond_a_year() {
        for v in [
            // Epoch seconds past the year 5138: the last second of 9999, read as milliseconds
            // before 2001.
            "253402300799",
            "100000000000",
            "999999999999",
            // The year 3000 as epoch seconds and as epoch milliseconds.
            "32503680000",
            "32503680000000",
            "99999999999999999999999999",
            "3000-01-01T00:00:00Z",
            "Wed, 01 Jan 3000 00:00:00 GMT",
            "9000h",
        ] {
            assert!(parse_reset(v, now()).is_some_and(|r| r > YEAR), "{v:?}");
        }
        assert_eq!(parse_reset("253402300799", now()), Some(Duration::MAX));
    }

    #[test]
    fn parameters_after_a_reset_are_ignored() {
        assert_eq!(parse_reset_field("30;foo=1", now()), s(30));
        assert_eq!(parse_reset_field("5;a=1, 30;b=2", now()), s(30));
        assert_eq!(parse_reset_field(";foo=1", now()), None);
    }

    #[test]
    fn a_repeated_field_keeps_the_latest_reset() {
        assert_eq!(parse_reset_field("5, 30", now()), s(30));
        assert_eq!(parse_reset_field("5, x", now()), None);
        assert_eq!(
            parse_reset_field("Thu, 01 Jan 2026 00:00:10 GMT", now()),
            s(10)
        );
        assert_eq!(parse_reset_field("", now()), None);
    }

    #[test]
    fn delta_seconds_fields() {
        assert_eq!(
            parse_delta_seconds("1.234"),
            Some(Duration::from_millis(1234))
        );
        assert_eq!(
            parse_delta_seconds("1767225601"),
            Some(Duration::from_secs(1_767_225_601))
        );
        assert_eq!(parse_delta_seconds("-1"), None);
    }
}

//! `Retry-After` (RFC 9110 §10.2.3) and its millisecond variant.
//!
//! * `Retry-After: 120`: delay-seconds. Fractional seconds (`2.0`, Shopify) are invalid per the
//!   RFC but common, so they are accepted.
//! * `Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`: an HTTP-date in any of the three forms,
//!   resolved against `now`; a date in the past gives zero ("retry now").
//! * `retry-after-ms: 1500`: milliseconds, as OpenAI and Anthropic send beside `Retry-After`. It
//!   is more precise, so it wins when both parse (as those vendors' SDKs do).
//! * `x-ms-retry-after-ms: 2000`: the same, as Azure services send it. The order is the Azure
//!   SDKs' (`@azure/core-rest-pipeline`'s throttling strategy, `azure_core`'s retry policy):
//!   `retry-after-ms`, then `x-ms-retry-after-ms`, then `Retry-After`; the first that parses
//!   wins, so a millisecond field beats a `Retry-After` beside it.
//! * `grpc-retry-pushback-ms: 1000`: gRPC's server pushback (gRFC A6, "gRPC Retry Design"), read
//!   after the two above and before `Retry-After`. A throttled gRPC call with no message comes
//!   back "trailers-only", its trailers in the headers, where it is read. A negative or
//!   unreadable pushback asks that the call not be retried at all
//!   ([`forbids_retry`](crate::forbids_retry) says so).
//!
//! `X-RateLimit-Reset-After` is deliberately *not* read as a Retry-After: Discord sends it on
//! every response as the reset of a bucket, so it becomes a policy's reset instead; when that
//! bucket is exhausted the server-ordered stop waits for it anyway.
//!
//! Retry-After is a singleton field: repeated lines are accepted only when they are identical.
//! Negative values and garbage are ignored; anything longer than 30 days is clamped to 30 days.

use std::time::{Duration, SystemTime};

use super::bounds::MAX_RETRY_AFTER;
use super::collect::Lines;
use super::datetime::{parse_http_date, until};
use super::num::{millis_from_secs_reading, parse_decimal_secs};

/// The Retry-After of a response: the first of the millisecond fields `millis` that parses, in
/// their order (`retry-after-ms`, `x-ms-retry-after-ms`, `grpc-retry-pushback-ms`), else
/// `Retry-After`.
pub(crate) fn retry_after(
    seconds_or_date: &Lines<'_>,
    millis: [&Lines<'_>; 3],
    now: SystemTime,
) -> Option<Duration> {
    millis
        .iter()
        .find_map(|m| m.singleton().and_then(parse_retry_after_ms))
        .or_else(|| {
            seconds_or_date
                .singleton()
                .and_then(|v| parse_retry_after(v, now))
        })
}

/// Parses one `Retry-After` value: seconds (fractions allowed) or an HTTP-date.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let delay = match parse_decimal_secs(value) {
        Some(d) => d,
        None => until(parse_http_date(value, now)?, now),
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

/// Parses one `retry-after-ms` value: milliseconds (fractions allowed).
pub(crate) fn parse_retry_after_ms(value: &str) -> Option<Duration> {
    parse_decimal_secs(value).map(|d| millis_from_secs_reading(d).min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z, a Thursday

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
    }

    #[test]
    fn seconds_fractions_and_dates() {
        let s = |n| Some(Duration::from_secs(n));
        let cases: &[(&str, Option<Duration>)] = &[
            ("120", s(120)),
            ("0", s(0)),
            ("2.0", s(2)),
            ("0.25", Some(Duration::from_millis(250))),
            ("Thu, 01 Jan 2026 00:00:20 GMT", s(20)),
            ("Thursday, 01-Jan-26 00:00:20 GMT", s(20)),
            ("Thu Jan  1 00:00:20 2026", s(20)),
            ("Fri, 31 Dec 1999 23:59:59 GMT", s(0)),
            ("1000000000000000", Some(MAX_RETRY_AFTER)),
            ("Fri, 01 Jan 3000 00:00:00 GMT", None),
            ("Wed, 01 Jan 3000 00:00:00 GMT", Some(MAX_RETRY_AFTER)),
            ("-5", None),
            ("+5", None),
            ("5s", None),
            ("2026-01-01T00:00:20Z", None),
            ("", None),
        ];
        for (v, want) in cases {
            assert_eq!(parse_retry_after(v, now()), *want, "{v:?}");
        }
    }

    #[test]
    fn milliseconds() {
        assert_eq!(
            parse_retry_after_ms("1500"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after_ms("0.5"),
            Some(Duration::from_micros(500))
        );
        assert_eq!(
            parse_retry_after_ms("99999999999999999"),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(parse_retry_after_ms("-1"), None);
    }

    /// Azure's `x-ms-retry-after-ms` and `retry-after-ms` (the Azure SDKs' order), with the
    /// bounds of `Retry-After`.
    #[test]
    fn azures_millisecond_fields() {
        use crate::RateLimitInfo;
        use http::{HeaderMap, HeaderValue};
        type Fields = &'static [(&'static str, &'static str)];
        let ms = Duration::from_millis;
        let cases: &[(Fields, Option<Duration>)] = &[
            (&[("x-ms-retry-after-ms", "2000")], Some(ms(2000))),
            (&[("retry-after-ms", "2000")], Some(ms(2000))),
            (
                &[("x-ms-retry-after-ms", "2000"), ("retry-after", "5")],
                Some(ms(2000)),
            ),
            (
                &[("x-ms-retry-after-ms", "2000"), ("retry-after-ms", "1500")],
                Some(ms(1500)),
            ),
            (
                &[("x-ms-retry-after-ms", "soon"), ("retry-after", "5")],
                Some(ms(5000)),
            ),
            (&[("x-ms-retry-after-ms", "-1")], None),
            (
                &[("x-ms-retry-after-ms", "99999999999999999")],
                Some(MAX_RETRY_AFTER),
            ),
            (
                &[("x-ms-retry-after-ms", "1"), ("x-ms-retry-after-ms", "2")],
                None,
            ),
            // gRPC's pushback, in a trailers-only answer: after Azure's, before Retry-After.
            (&[("grpc-retry-pushback-ms", "1000")], Some(ms(1000))),
            (
                &[("grpc-retry-pushback-ms", "1000"), ("retry-after", "5")],
                Some(ms(1000)),
            ),
            (
                &[
                    ("grpc-retry-pushback-ms", "1000"),
                    ("x-ms-retry-after-ms", "300"),
                ],
                Some(ms(300)),
            ),
            (&[("grpc-retry-pushback-ms", "-1")], None),
        ];
        for (fields, want) in cases {
            let mut m = HeaderMap::new();
            for (k, v) in *fields {
                m.append(*k, HeaderValue::from_str(v).unwrap());
            }
            let info = RateLimitInfo::from_headers(&m, now());
            assert_eq!(info.retry_after(), *want, "{fields:?}");
            assert!(info.policies().is_empty(), "{fields:?}");
        }
    }
}

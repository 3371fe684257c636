//! The `X-RateLimit-*` family and its `X-Rate-Limit-*` spelling, the most common non-standard
//! rate-limit headers (GitHub, X/Twitter, Envoy, Kong, Discord, and many more).
//!
//! * `X-RateLimit-Limit`, `-Remaining`, `-Reset`: one policy. The limit may list policies
//!   (Envoy: `10, 10;w=1`); the reset is normalised by magnitude and shape (see `reset.rs`:
//!   delta seconds, delta milliseconds, epoch seconds, epoch milliseconds, dates).
//! * GitHub adds `X-RateLimit-Used` and `X-RateLimit-Resource`; Reddit sends `-Used` without a
//!   limit; Discord adds
//!   `X-RateLimit-Reset-After` and `X-RateLimit-Bucket` (see `vendors.rs`).
//! * Window-in-name fields (Kong): `X-RateLimit-Limit-Minute: 3`,
//!   `X-RateLimit-Remaining-Minute: 0`, one policy per window unit (`second`, `minute`, `hour`,
//!   `day`, `week`, `month` (30 days), `year` (365 days)), named after the unit.
//! * Other names are OpenAI's style (`X-RateLimit-Limit-Requests`), Linear's
//!   (`X-RateLimit-Requests-Limit`) or Imgur's (`X-RateLimit-UserLimit`); see `vendors.rs`.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use super::collect::{Collected, Named};
use super::counters::{CounterPolicy, read_counters};
use super::policy::{Dialect, Policy};
use super::vendors;

/// Appends the policy of the plain `X-RateLimit-*` fields (generic, GitHub or Discord).
pub(crate) fn read(c: &Collected<'_>, now: SystemTime, out: &mut Vec<Policy>) {
    let x = &c.x;
    let dialect = if x.resource.is_present() || (x.used.is_present() && x.limit.is_present()) {
        Dialect::GitHub
    } else if x.used.is_present() {
        Dialect::Reddit
    } else if x.reset_after.is_present() || x.bucket.is_present() {
        Dialect::Discord
    } else {
        Dialect::XRateLimit
    };
    let Some(CounterPolicy {
        mut policy,
        quota_only,
    }) = read_counters(dialect, &x.limit, &x.remaining, &x.reset, now)
    else {
        return;
    };
    match dialect {
        Dialect::GitHub => vendors::github(x, &mut policy),
        Dialect::Reddit => vendors::reddit(x, &mut policy),
        Dialect::Discord => vendors::discord(x, &mut policy),
        _ => {}
    }
    out.extend(quota_only);
    out.push(policy);
}

/// The window a window-in-name suffix stands for.
pub(crate) fn window_of(suffix: &str) -> Option<(&'static str, Duration)> {
    const DAY: u64 = 86_400;
    let (name, secs) = match suffix {
        "second" => ("second", 1),
        "minute" => ("minute", 60),
        "hour" => ("hour", 3_600),
        "day" => ("day", DAY),
        "week" => ("week", 7 * DAY),
        "month" => ("month", 30 * DAY),
        "year" => ("year", 365 * DAY),
        _ => return None,
    };
    Some((name, Duration::from_secs(secs)))
}

/// Reads a window-in-name policy (Kong's `X-RateLimit-Remaining-Minute`).
pub(crate) fn read_windowed(
    named: &Named<'_>,
    name: &'static str,
    window: Duration,
    now: SystemTime,
    out: &mut Vec<Policy>,
) {
    if let Some(CounterPolicy {
        mut policy,
        quota_only,
    }) = read_counters(
        Dialect::XRateLimit,
        &named.limit,
        &named.remaining,
        &named.reset,
        now,
    ) {
        policy.set_name(Cow::Borrowed(name));
        if policy.window().is_none() {
            policy.set_window(Some(window));
        }
        out.extend(quota_only);
        out.push(policy);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RateLimitInfo;
    use http::{HeaderMap, HeaderValue};

    const NOW: u64 = 1_767_225_600;

    fn info(pairs: &[(&'static str, &'static str)]) -> RateLimitInfo {
        crate::headers::info_at(pairs, SystemTime::UNIX_EPOCH + Duration::from_secs(NOW))
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn plain_fields_with_every_reset_kind() {
        let in_90 = Box::leak((NOW + 90).to_string().into_boxed_str());
        let ms_in_90 = Box::leak(((NOW + 90) * 1000).to_string().into_boxed_str());
        type Headers = Vec<(&'static str, &'static str)>;
        type Case = (Headers, Option<u64>, Option<u64>, Option<Duration>);
        let cases: Vec<Case> = vec![
            // Delta seconds (Statbot, Zendesk style).
            (
                vec![
                    ("x-ratelimit-limit", "10"),
                    ("x-ratelimit-remaining", "5"),
                    ("x-ratelimit-reset", "60"),
                ],
                Some(10),
                Some(5),
                Some(secs(60)),
            ),
            // X/Twitter: X-Rate-Limit-* with an epoch.
            (
                vec![
                    ("x-rate-limit-limit", "900"),
                    ("x-rate-limit-remaining", "847"),
                    ("x-rate-limit-reset", in_90),
                ],
                Some(900),
                Some(847),
                Some(secs(90)),
            ),
            // Epoch milliseconds.
            (
                vec![
                    ("X-RateLimit-Limit", "100"),
                    ("X-RateLimit-Remaining", "1"),
                    ("X-RateLimit-Reset", ms_in_90),
                ],
                Some(100),
                Some(1),
                Some(secs(90)),
            ),
            // Prisjakt: delta milliseconds.
            (
                vec![
                    ("X-Rate-Limit-Limit", "1000"),
                    ("X-Rate-Limit-Remaining", "998"),
                    ("X-Rate-Limit-Reset", "600000"),
                ],
                Some(1000),
                Some(998),
                Some(secs(600)),
            ),
            // A past epoch is zero, not decades.
            (
                vec![
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1655120964"),
                ],
                None,
                Some(0),
                Some(secs(0)),
            ),
            // RFC 3339 reset (Rachio style).
            (
                vec![
                    ("x-ratelimit-limit", "1700"),
                    ("x-ratelimit-remaining", "4"),
                    ("x-ratelimit-reset", "2026-01-01T00:10:00Z"),
                ],
                Some(1700),
                Some(4),
                Some(secs(600)),
            ),
            // Garbage reset: the counters are kept, the policy is unsound (tested below).
            (
                vec![
                    ("x-ratelimit-limit", "20"),
                    ("x-ratelimit-remaining", "7"),
                    (
                        "x-ratelimit-reset",
                        "Tue Feb 16 2021 09:02:42 GMT+0100 (CET)",
                    ),
                ],
                Some(20),
                Some(7),
                None,
            ),
            // Only a reset: nothing understood.
            (vec![("x-ratelimit-reset", "60")], None, None, None),
        ];
        for (i, (h, limit, remaining, reset)) in cases.into_iter().enumerate() {
            let got = info(&h);
            assert_eq!(
                (got.limit(), got.remaining(), got.reset_after()),
                (limit, remaining, reset),
                "case {i}"
            );
        }
    }

    #[test]
    fn envoy_descriptors_become_windows_and_quota_only_policies() {
        let got = info(&[
            ("x-ratelimit-limit", "10, 10;w=1"),
            ("x-ratelimit-remaining", "9"),
            ("x-ratelimit-reset", "1"),
        ]);
        assert_eq!(
            got.policies(),
            [Policy::new(Dialect::XRateLimit)
                .with_limit(10)
                .with_remaining(9)
                .with_reset_after(secs(1))
                .with_window(secs(1))]
        );
        let got = info(&[
            ("x-ratelimit-limit", "10, 10;w=1, 100;w=60"),
            ("x-ratelimit-remaining", "2"),
        ]);
        assert_eq!(got.policies().len(), 2);
        assert_eq!(got.remaining(), Some(2));
        assert_eq!(got.window(), Some(secs(1)));
        assert_eq!(got.policies()[1].limit(), Some(100));
    }

    #[test]
    fn kong_window_in_name_beside_the_legacy_fields() {
        let got = info(&[
            ("ratelimit-limit", "3"),
            ("ratelimit-remaining", "0"),
            ("ratelimit-reset", "50"),
            ("retry-after", "50"),
            ("x-ratelimit-limit-minute", "3"),
            ("x-ratelimit-remaining-minute", "0"),
        ]);
        assert!(got.is_exhausted());
        assert_eq!(got.retry_after(), Some(secs(50)));
        // Both exhausted: the one with the server's reset wins.
        assert_eq!(got.reset_after(), Some(secs(50)));
        assert_eq!(got.policies()[0].dialect(), Dialect::IetfLegacy);
        let minute = &got.policies()[1];
        assert_eq!(minute.name(), Some("minute"));
        assert_eq!(minute.window(), Some(secs(60)));
    }

    #[test]
    fn a_field_that_cannot_be_read_marks_its_policy_unsound() {
        type Case = (
            Vec<(&'static str, &'static str)>,
            Option<u64>,
            Option<u64>,
            Option<Duration>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                vec![("x-ratelimit-limit", "20"), ("x-ratelimit-remaining", "7")],
                Some(20),
                Some(7),
                None,
                true,
            ),
            (
                vec![
                    ("x-ratelimit-limit", "20"),
                    ("x-ratelimit-remaining", "7"),
                    (
                        "x-ratelimit-reset",
                        "Tue Feb 16 2021 09:02:42 GMT+0100 (CET)",
                    ),
                ],
                Some(20),
                Some(7),
                None,
                false,
            ),
            (
                vec![("x-ratelimit-limit", "20"), ("x-ratelimit-remaining", "-1")],
                Some(20),
                None,
                None,
                false,
            ),
            (
                vec![
                    ("x-ratelimit-limit", "lots"),
                    ("x-ratelimit-remaining", "7"),
                ],
                None,
                Some(7),
                None,
                false,
            ),
            (
                vec![
                    ("x-ratelimit-limit", "18446744073709551616"),
                    ("x-ratelimit-remaining", "7"),
                    ("x-ratelimit-reset", "30"),
                ],
                None,
                Some(7),
                Some(secs(30)),
                false,
            ),
            // Nothing readable: still reported, empty and unsound.
            (
                vec![("x-ratelimit-remaining", "-1")],
                None,
                None,
                None,
                false,
            ),
            // Repeated lines with one bad member.
            (
                vec![
                    ("x-ratelimit-limit", "20"),
                    ("x-ratelimit-remaining", "7"),
                    ("x-ratelimit-remaining", "x"),
                ],
                Some(20),
                None,
                None,
                false,
            ),
            // A limit of 0 is out of range.
            (
                vec![("x-ratelimit-limit", "0"), ("x-ratelimit-remaining", "0")],
                Some(0),
                Some(0),
                None,
                false,
            ),
            // A window beyond a year.
            (
                vec![
                    ("x-ratelimit-limit", "10, 10;w=99999999999"),
                    ("x-ratelimit-remaining", "7"),
                ],
                Some(10),
                Some(7),
                None,
                false,
            ),
        ];
        for (i, (h, limit, remaining, reset, sound)) in cases.into_iter().enumerate() {
            let got = info(&h);
            assert_eq!(got.policies().len(), 1, "case {i}");
            assert_eq!(
                (
                    got.limit(),
                    got.remaining(),
                    got.reset_after(),
                    got.is_sound()
                ),
                (limit, remaining, reset, sound),
                "case {i}"
            );
        }
        let mut m = HeaderMap::new();
        m.append("x-ratelimit-limit", HeaderValue::from_static("20"));
        m.append(
            "x-ratelimit-remaining",
            HeaderValue::from_bytes(b"7\xff").unwrap(),
        );
        let got = RateLimitInfo::from_headers(&m, SystemTime::UNIX_EPOCH);
        assert_eq!((got.limit(), got.remaining()), (Some(20), None));
        assert!(!got.is_sound());
    }

    #[test]
    fn resets_no_server_means_fail_closed() {
        let max = RateLimitInfo::MAX_RESET_AFTER;
        for reset in [
            // The last second of 9999 as epoch seconds: not epoch milliseconds of 1978.
            "253402300799",
            // The year 3000, as epoch seconds, epoch milliseconds and a date.
            "32503680000",
            "32503680000000",
            "3000-01-01T00:00:00Z",
            "99999999999999999999",
        ] {
            let got = info(&[
                ("x-ratelimit-limit", "10"),
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", reset),
            ]);
            assert_eq!(got.reset_after(), Some(max), "{reset}");
            assert!(!got.is_sound(), "{reset}");
        }
        // A stale epoch is normal: zero, and sound.
        for reset in ["1655120964", "1655120964000", "2022-06-13T11:49:24Z"] {
            let got = info(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", reset)]);
            assert_eq!(got.reset_after(), Some(Duration::ZERO), "{reset}");
            assert!(got.is_sound(), "{reset}");
        }
    }

    #[test]
    fn repeated_lines_and_case() {
        let got = info(&[
            ("X-RATELIMIT-LIMIT", "60"),
            ("x-ratelimit-limit", "60"),
            ("x-ratelimit-remaining", "9"),
            ("X-RateLimit-Remaining", "3"),
            ("x-ratelimit-reset", "5"),
            ("x-ratelimit-reset", "30"),
        ]);
        assert_eq!(got.limit(), Some(60));
        assert_eq!(got.remaining(), Some(3));
        assert_eq!(got.reset_after(), Some(secs(30)));
    }
}

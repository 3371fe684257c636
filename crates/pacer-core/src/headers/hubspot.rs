//! HubSpot's `X-HubSpot-RateLimit-*` fields (developers.hubspot.com, "API usage guidelines and
//! limits"): a burst limit over a rolling interval given in milliseconds, a daily limit, and a
//! per-second one where it is still sent.
//!
//! ```text
//! X-HubSpot-RateLimit-Interval-Milliseconds: 10000
//! X-HubSpot-RateLimit-Max: 100
//! X-HubSpot-RateLimit-Remaining: 97
//! X-HubSpot-RateLimit-Daily: 250000
//! X-HubSpot-RateLimit-Daily-Remaining: 249900
//! ```
//!
//! * **`burst`**: `-Max` and `-Remaining`, the window `-Interval-Milliseconds`.
//! * **`daily`**: `-Daily` and `-Daily-Remaining`, the window a day. HubSpot resets it at
//!   midnight in the account's time zone, which the response does not say: the reset is
//!   unknown. Like any policy without a reset, an exhausted one holds the endpoint for its
//!   window, capped by the exhausted-stop cap (5 min by default), then a request probes.
//! * **`secondly`**: `-Secondly` and `-Secondly-Remaining`, the window a second.
//!
//! No reset is sent for any of them.

use std::borrow::Cow;
use std::time::Duration;

use super::collect::{HubSpotFields, Lines};
use super::counters::{CounterPolicy, read_counters, unreadable};
use super::num::parse_u64;
use super::policy::{Dialect, Policy};

const DAY: Duration = Duration::from_secs(86_400);

/// Appends HubSpot's policies.
pub(crate) fn read(h: &HubSpotFields<'_>, out: &mut Vec<Policy>) {
    if let Some(mut burst) = policy(&h.max, &h.remaining, "burst") {
        let interval = h
            .interval_ms
            .singleton()
            .and_then(parse_u64)
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis);
        if unreadable(&h.interval_ms, &interval) {
            burst.mark_unsound();
        }
        burst.set_window(interval);
        out.push(burst);
    }
    for (limit, remaining, name, window) in [
        (&h.daily, &h.daily_remaining, "daily", DAY),
        (
            &h.secondly,
            &h.secondly_remaining,
            "secondly",
            Duration::from_secs(1),
        ),
    ] {
        if let Some(mut p) = policy(limit, remaining, name) {
            p.set_window(Some(window));
            out.push(p);
        }
    }
}

/// One policy of two counter fields (no reset: `now` is not read).
fn policy(limit: &Lines<'_>, remaining: &Lines<'_>, name: &'static str) -> Option<Policy> {
    let CounterPolicy { mut policy, .. } = read_counters(
        Dialect::HubSpot,
        limit,
        remaining,
        &Lines::default(),
        std::time::SystemTime::UNIX_EPOCH,
    )?;
    policy.set_name(Cow::Borrowed(name));
    Some(policy)
}

#[cfg(test)]
mod tests {
    use crate::{Dialect, Policy, RateLimitInfo};
    use std::time::{Duration, SystemTime};

    fn info(pairs: &[(&'static str, &'static str)]) -> RateLimitInfo {
        crate::headers::info_at(pairs, SystemTime::UNIX_EPOCH)
    }

    fn hubspot(name: &'static str, limit: u64, remaining: u64, window: Duration) -> Policy {
        Policy::new(Dialect::HubSpot)
            .with_name(name)
            .with_limit(limit)
            .with_remaining(remaining)
            .with_window(window)
    }

    #[test]
    fn hubspots_documented_example() {
        let secs = Duration::from_secs;
        type Case = (Vec<(&'static str, &'static str)>, Vec<Policy>);
        let cases: Vec<Case> = vec![
            // HubSpot's documented example: the burst limit and the daily one.
            (
                vec![
                    ("X-HubSpot-RateLimit-Interval-Milliseconds", "10000"),
                    ("X-HubSpot-RateLimit-Max", "100"),
                    ("X-HubSpot-RateLimit-Remaining", "97"),
                    ("X-HubSpot-RateLimit-Daily", "250000"),
                    ("X-HubSpot-RateLimit-Daily-Remaining", "249900"),
                ],
                vec![
                    hubspot("burst", 100, 97, secs(10)),
                    hubspot("daily", 250_000, 249_900, secs(86_400)),
                ],
            ),
            // With the per-second fields.
            (
                vec![
                    ("X-HubSpot-RateLimit-Secondly", "10"),
                    ("X-HubSpot-RateLimit-Secondly-Remaining", "9"),
                    ("X-HubSpot-RateLimit-Daily", "250000"),
                    ("X-HubSpot-RateLimit-Daily-Remaining", "0"),
                ],
                vec![
                    hubspot("daily", 250_000, 0, secs(86_400)),
                    hubspot("secondly", 10, 9, secs(1)),
                ],
            ),
            // OAuth calls carry no daily fields.
            (
                vec![
                    ("x-hubspot-ratelimit-max", "150"),
                    ("x-hubspot-ratelimit-remaining", "149"),
                    ("x-hubspot-ratelimit-interval-milliseconds", "10000"),
                ],
                vec![hubspot("burst", 150, 149, secs(10))],
            ),
            (
                vec![("x-hubspot-ratelimit-interval-milliseconds", "10000")],
                vec![],
            ),
        ];
        for (headers, want) in cases {
            let got = info(&headers);
            assert_eq!(got.policies(), want, "{headers:?}");
            assert!(got.is_sound(), "{headers:?}");
            assert_eq!(got.reset_after(), None, "HubSpot sends no reset");
        }
    }

    #[test]
    fn an_interval_that_cannot_be_read_is_unsound() {
        for interval in ["0", "ten", "-1"] {
            let got = info(&[
                ("x-hubspot-ratelimit-max", "100"),
                ("x-hubspot-ratelimit-remaining", "97"),
                ("x-hubspot-ratelimit-interval-milliseconds", interval),
            ]);
            assert_eq!(got.window(), None, "{interval}");
            assert_eq!(got.remaining(), Some(97), "{interval}");
            assert!(!got.is_sound(), "{interval}");
        }
    }
}

//! Zendesk's per-endpoint field (developer.zendesk.com, "Best practices for avoiding rate
//! limiting"): `Zendesk-RateLimit-{endpoint}: total=100; remaining=99; resets=41`, one policy
//! named after the endpoint, the reset in seconds.
//!
//! Zendesk sends it beside its account-wide fields, `X-Rate-Limit: 700` and
//! `X-Rate-Limit-Remaining: 699` (read as `X-Rate-Limit-*`, Zendesk's bare `X-Rate-Limit`
//! being the limit) and `RateLimit-Limit`/`-Remaining`/`-Reset` (the legacy IETF fields): the
//! account's policies and the endpoint's all come through, and the most restrictive wins.

use super::collect::ZendeskField;
use super::fields::{PairKeys, read_pairs};
use super::num::parse_decimal_secs;
use super::policy::{Dialect, Policy};

const KEYS: PairKeys<'static> = PairKeys {
    limit: "total",
    remaining: "remaining",
    reset: "resets",
    used: "used",
};

/// Appends the policy of each `Zendesk-RateLimit-{endpoint}` field.
pub(crate) fn read(fields: &[ZendeskField<'_>], out: &mut Vec<Policy>) {
    for field in fields {
        if let Some(mut p) = read_pairs(&field.lines, b";", KEYS, parse_decimal_secs)
            .and_then(|c| c.policy(Dialect::Zendesk))
        {
            p.set_name_of(field.endpoint);
            out.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Dialect, Policy, RateLimitInfo};
    use std::time::{Duration, SystemTime};

    fn info(pairs: &[(&'static str, &'static str)]) -> RateLimitInfo {
        crate::headers::info_at(pairs, SystemTime::UNIX_EPOCH)
    }

    fn endpoint(name: &'static str, limit: u64, remaining: u64, reset: u64) -> Policy {
        Policy::new(Dialect::Zendesk)
            .with_name(name)
            .with_limit(limit)
            .with_remaining(remaining)
            .with_reset_after(Duration::from_secs(reset))
    }

    #[test]
    fn zendesks_documented_example() {
        // The headers of a List Tickets response, as Zendesk's guide shows them.
        let got = info(&[
            ("x-rate-limit", "700"),
            ("ratelimit-limit", "700"),
            ("x-rate-limit-remaining", "699"),
            ("ratelimit-remaining", "699"),
            ("ratelimit-reset", "41"),
            (
                "zendesk-ratelimit-tickets-index",
                "total=100; remaining=99; resets=41",
            ),
        ]);
        let account_x = Policy::new(Dialect::XRateLimit)
            .with_limit(700)
            .with_remaining(699);
        let account_ietf = Policy::new(Dialect::IetfLegacy)
            .with_limit(700)
            .with_remaining(699)
            .with_reset_after(Duration::from_secs(41));
        assert_eq!(
            got.policies(),
            [
                endpoint("tickets-index", 100, 99, 41),
                account_ietf,
                account_x
            ]
        );
        assert!(got.is_sound());
    }

    #[test]
    fn endpoint_fields_in_other_shapes() {
        type Case = (Vec<(&'static str, &'static str)>, Vec<Policy>, bool);
        let cases: Vec<Case> = vec![
            // The account-wide fields alone (the guide's first example).
            (
                vec![("X-Rate-Limit", "700"), ("X-Rate-Limit-Remaining", "699")],
                vec![
                    Policy::new(Dialect::XRateLimit)
                        .with_limit(700)
                        .with_remaining(699),
                ],
                true,
            ),
            (
                vec![(
                    "Zendesk-RateLimit-search-export",
                    "total=20; remaining=0; resets=7",
                )],
                vec![endpoint("search-export", 20, 0, 7)],
                true,
            ),
            // Two endpoints.
            (
                vec![
                    ("zendesk-ratelimit-a", "total=10; remaining=5; resets=1"),
                    ("zendesk-ratelimit-b", "total=10; remaining=2; resets=1"),
                ],
                vec![endpoint("b", 10, 2, 1), endpoint("a", 10, 5, 1)],
                true,
            ),
            // Garbage: reported, empty and unsound.
            (
                vec![("zendesk-ratelimit-a", "lots")],
                vec![Policy::new(Dialect::Zendesk).with_name("a").unsound()],
                false,
            ),
            (
                vec![("zendesk-ratelimit-a", "total=10; remaining=2; resets=soon")],
                vec![
                    Policy::new(Dialect::Zendesk)
                        .with_name("a")
                        .with_limit(10)
                        .with_remaining(2)
                        .unsound(),
                ],
                false,
            ),
            // A reset alone makes no policy.
            (vec![("zendesk-ratelimit-a", "resets=3")], vec![], true),
        ];
        for (headers, want, sound) in cases {
            let got = info(&headers);
            assert_eq!(got.policies(), want, "{headers:?}");
            assert_eq!(got.is_sound(), sound, "{headers:?}");
        }
    }
}

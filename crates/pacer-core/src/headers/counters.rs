//! Policies sent as separate counter fields: a limit, a remaining and a reset, each in its own
//! header (`RateLimit-Limit`/`-Remaining`/`-Reset`, `X-RateLimit-*`, OpenAI's and Anthropic's
//! per-policy fields).
//!
//! The limit field may carry quota policies after the current limit, as IETF drafts -00 to -02,
//! Envoy and Lokalise send it: `10, 10;w=1, 100;w=60`. The first number is the current limit;
//! a `q;w=s` member with the same quota gives its window, and the others become quota-only
//! policies. Repeated lines are combined with commas: for the limit the first number counts,
//! for the remaining the smallest, for the reset the latest.

use std::time::{Duration, SystemTime};

use super::collect::Lines;
use super::num::{parse_u64, trim_ows};
use super::policy::{Dialect, Policy};
use super::reset::parse_reset_field;

/// A parsed limit field: the current limit and the quota policies listed after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LimitField {
    pub(crate) limit: u64,
    pub(crate) window: Option<Duration>,
    pub(crate) others: Vec<(u64, Duration)>,
}

/// Parses `10`, `10, 10;w=1` or `10, 10;w=1, 100;w=60`. Every member must start with a
/// number; a `w` that is not a positive number is ignored, other parameters too.
pub(crate) fn parse_limit_field(value: &str) -> Option<LimitField> {
    let mut limit: Option<u64> = None;
    let mut window = None;
    let mut others: Vec<(u64, Duration)> = Vec::new();
    for member in value.split(',') {
        let mut parts = member.split(';');
        let quota = parse_u64(parts.next().unwrap_or(""))?;
        // The last `w` counts (RFC 9651 duplicate rule); it must be a positive number.
        let w = parts
            .filter_map(|param| param.split_once('='))
            .rfind(|(k, _)| trim_ows(k) == "w")
            .and_then(|(_, v)| parse_u64(v))
            .filter(|w| *w > 0)
            .map(Duration::from_secs);
        match (limit, w) {
            (None, _) => {
                limit = Some(quota);
                window = w;
            }
            (Some(l), Some(w)) if l == quota && window.is_none() => window = Some(w),
            (Some(l), Some(w)) => {
                let is_current = l == quota && window == Some(w);
                if !is_current && !others.contains(&(quota, w)) {
                    others.push((quota, w));
                }
            }
            (Some(_), None) => {}
        }
    }
    Some(LimitField {
        limit: limit?,
        window,
        others,
    })
}

/// Parses a remaining field; with several members (repeated lines) the smallest counts.
pub(crate) fn parse_remaining_field(value: &str) -> Option<u64> {
    let mut least: Option<u64> = None;
    for member in value.split(',') {
        let n = parse_u64(member)?;
        least = Some(least.map_or(n, |l| l.min(n)));
    }
    least
}

/// The policy described by one set of counter fields, with the quota-only policies its limit
/// field listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CounterPolicy {
    pub(crate) policy: Policy,
    pub(crate) quota_only: Vec<Policy>,
}

/// Reads the three counter fields; `None` when neither a limit nor a remaining is understood.
pub(crate) fn read_counters(
    dialect: Dialect,
    limit: &Lines<'_>,
    remaining: &Lines<'_>,
    reset: &Lines<'_>,
    now: SystemTime,
) -> Option<CounterPolicy> {
    let limit = limit.joined().and_then(|v| parse_limit_field(&v));
    let remaining = remaining.joined().and_then(|v| parse_remaining_field(&v));
    if limit.is_none() && remaining.is_none() {
        return None;
    }
    let mut policy = Policy::new(dialect);
    policy.set_remaining(remaining);
    policy.set_reset_after(reset.joined().and_then(|v| parse_reset_field(&v, now)));
    let mut quota_only = Vec::new();
    if let Some(l) = limit {
        policy.set_limit(Some(l.limit));
        policy.set_window(l.window);
        quota_only = l
            .others
            .into_iter()
            .map(|(q, w)| Policy::new(dialect).with_limit(q).with_window(w))
            .collect();
    }
    Some(CounterPolicy { policy, quota_only })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lf(limit: u64, window: Option<u64>, others: &[(u64, u64)]) -> Option<LimitField> {
        Some(LimitField {
            limit,
            window: window.map(Duration::from_secs),
            others: others
                .iter()
                .map(|(q, w)| (*q, Duration::from_secs(*w)))
                .collect(),
        })
    }

    #[test]
    fn limit_fields_in_every_shape() {
        let cases = [
            ("5000", lf(5000, None, &[])),
            (" 30 ", lf(30, None, &[])),
            ("10, 10;w=1", lf(10, Some(1), &[])),
            ("10, 10;w=1, 100;w=60", lf(10, Some(1), &[(100, 60)])),
            ("10, 10;w=1, 10;w=1", lf(10, Some(1), &[])),
            (
                "10, 10;w=1, 50;w=60, 1000;w=3600, 5000;w=86400",
                lf(10, Some(1), &[(50, 60), (1000, 3600), (5000, 86400)]),
            ),
            ("100;w=60", lf(100, Some(60), &[])),
            ("10, 10;w=0", lf(10, None, &[])),
            ("10, 10;burst=5;w=2", lf(10, Some(2), &[])),
            ("5, 5", lf(5, None, &[])),
            ("1m", None),
            ("-1", None),
            ("", None),
            ("10,", None),
        ];
        for (v, want) in cases {
            assert_eq!(parse_limit_field(v), want, "{v:?}");
        }
    }

    #[test]
    fn remaining_keeps_the_smallest() {
        assert_eq!(parse_remaining_field("9"), Some(9));
        assert_eq!(parse_remaining_field("9, 3"), Some(3));
        assert_eq!(parse_remaining_field("9, x"), None);
        assert_eq!(parse_remaining_field("-1"), None);
    }
}

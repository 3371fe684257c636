//! Policies sent as separate counter fields: a limit, a remaining and a reset, each in its own
//! header (`RateLimit-Limit`/`-Remaining`/`-Reset`, `X-RateLimit-*`, OpenAI's and Anthropic's
//! per-policy fields).
//!
//! The limit field may carry quota policies after the current limit, as IETF drafts -00 to -02,
//! Envoy and Lokalise send it: `10, 10;w=1, 100;w=60`. The first number is the current limit;
//! a `q;w=s` member with the same quota gives its window (draft-polli-00 spells it `window=`),
//! and the others become quota-only policies. Repeated lines are combined with commas: for the
//! limit the first number counts, for the remaining the smallest, for the reset the latest.
//! Parameters after a remaining or a reset are ignored (draft-06).
//!
//! A field that is sent but cannot be read (`-1`, garbage, a malformed line) is not silently
//! dropped: the policy keeps what could be read and is marked unsound.

use std::time::{Duration, SystemTime};

use super::bounds::MAX_MEMBERS;
use super::collect::Lines;
use super::num::{bare_value, members, parse_count, parse_u64, trim_ows};
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
/// number; a `w` (or `window`) that is not a positive number is ignored, other parameters too.
/// More than [`MAX_MEMBERS`] members make the field malformed.
pub(crate) fn parse_limit_field(value: &str) -> Option<LimitField> {
    let mut limit: Option<u64> = None;
    let mut window = None;
    let mut others: Vec<(u64, Duration)> = Vec::new();
    for (i, member) in members(value).enumerate() {
        if i >= MAX_MEMBERS {
            return None;
        }
        let mut parts = member.split(';');
        let quota = parse_count(parts.next().unwrap_or(""))?;
        // The last `w` counts (RFC 9651 duplicate rule); it must be a positive number.
        let w = parts
            .filter_map(|param| param.split_once('='))
            .rfind(|(k, _)| matches!(trim_ows(k), "w" | "window"))
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
/// Parameters after a value are ignored; more than [`MAX_MEMBERS`] members make the field
/// malformed.
pub(crate) fn parse_remaining_field(value: &str) -> Option<u64> {
    let mut least: Option<u64> = None;
    for (i, member) in members(value).enumerate() {
        if i >= MAX_MEMBERS {
            return None;
        }
        let n = parse_count(bare_value(member))?;
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

/// Reads the three counter fields; `None` when neither a limit nor a remaining was sent, or
/// only a reset. A field that was sent but cannot be read leaves its value unknown and marks
/// the policy unsound; when neither the limit nor the remaining can be read, the policy is still
/// returned (empty, unsound), so the response is not taken for one without rate-limit fields.
pub(crate) fn read_counters(
    dialect: Dialect,
    limit_lines: &Lines<'_>,
    remaining_lines: &Lines<'_>,
    reset_lines: &Lines<'_>,
    now: SystemTime,
) -> Option<CounterPolicy> {
    if !limit_lines.is_present() && !remaining_lines.is_present() {
        return None;
    }
    let limit = limit_lines.joined().and_then(|v| parse_limit_field(&v));
    let remaining = remaining_lines
        .joined()
        .and_then(|v| parse_remaining_field(&v));
    let reset = reset_lines
        .joined()
        .and_then(|v| parse_reset_field(&v, now));
    let mut policy = Policy::new(dialect);
    policy.set_remaining(remaining);
    policy.set_reset_after(reset);
    if unreadable(limit_lines, &limit)
        || unreadable(remaining_lines, &remaining)
        || unreadable(reset_lines, &reset)
    {
        policy.mark_unsound();
    }
    let mut quota_only = Vec::new();
    if let Some(l) = limit {
        policy.set_limit(Some(l.limit));
        policy.set_window(l.window);
        quota_only = l
            .others
            .into_iter()
            .map(|(q, w)| {
                let mut p = Policy::new(dialect).with_limit(q);
                p.set_window(Some(w));
                p
            })
            .collect();
    }
    Some(CounterPolicy { policy, quota_only })
}

/// `true` when a field was sent but its value could not be read.
pub(crate) fn unreadable<T>(lines: &Lines<'_>, value: &Option<T>) -> bool {
    lines.is_present() && value.is_none()
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
            // draft-polli-00 spells the window `window`.
            ("100, 100;window=60", lf(100, Some(60), &[])),
            (
                "10, 10;window=1, 50;window=60",
                lf(10, Some(1), &[(50, 60)]),
            ),
            // A decimal point is read, rounded down.
            ("600.0", lf(600, None, &[])),
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
        assert_eq!(parse_remaining_field("597.0"), Some(597));
    }

    #[test]
    fn parameters_after_a_remaining_are_ignored() {
        assert_eq!(parse_remaining_field(r#"50;comment="x""#), Some(50));
        assert_eq!(parse_remaining_field(r#"50;comment="a,b", 40"#), Some(40));
        assert_eq!(parse_remaining_field(";x=1"), None);
    }

    #[test]
    fn too_many_members_are_malformed() {
        let ok = vec!["1"; MAX_MEMBERS].join(", ");
        let many = vec!["1"; MAX_MEMBERS + 1].join(", ");
        assert_eq!(parse_remaining_field(&ok), Some(1));
        assert_eq!(parse_remaining_field(&many), None);
        assert!(parse_limit_field(&ok).is_some());
        assert_eq!(parse_limit_field(&many), None);
    }
}

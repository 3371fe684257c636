//! Grammars of one field that holds a policy's counters together, where the separate-field
//! dialects give each its own field:
//!
//! * **`key=value` pairs**, the keys naming the counters: Zendesk's
//!   `Zendesk-RateLimit-tickets-index: total=100; remaining=99; resets=59`.
//! * **`used/limit` counts**, bare or each named: Salesforce's
//!   `Sforce-Limit-Info: api-usage=25/5000; per-app-api-usage=17/250(appName=sample-connected-app)`,
//!   Shopify's `32/40`.
//!
//! The built-in readers of those vendors and the declared dialects read through these. The
//! field's lines come bounded by [`Lines`] (4 KiB, 64 lines, visible ASCII); a line of more
//! than [`MAX_MEMBERS`] members, or with a member that is not of the grammar, is malformed.

use std::time::Duration;

use super::bounds::MAX_MEMBERS;
use super::collect::Lines;
use super::num::{parse_count, parse_u64, trim_ows};
use super::policy::{Dialect, Policy};

/// The non-empty members of `line`, split at any byte of `separators` and trimmed; `None` when
/// there are more than [`MAX_MEMBERS`].
pub(crate) fn members<'a>(line: &'a str, separators: &[u8]) -> Option<Vec<&'a str>> {
    let mut out = Vec::new();
    for member in line
        .split(|c: char| c.is_ascii() && separators.contains(&(c as u8)))
        .map(trim_ows)
        .filter(|m| !m.is_empty())
    {
        if out.len() == MAX_MEMBERS {
            return None;
        }
        out.push(member);
    }
    Some(out)
}

/// What a field said of one counter: whether it was sent, and its value when it could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Said<T> {
    pub(crate) sent: bool,
    pub(crate) value: Option<T>,
}

impl<T> Default for Said<T> {
    fn default() -> Self {
        Said {
            sent: false,
            value: None,
        }
    }
}

impl<T: Copy> Said<T> {
    /// Sent, but not readable.
    pub(crate) fn unreadable(&self) -> bool {
        self.sent && self.value.is_none()
    }

    /// One more reading of the counter, combined with the earlier ones by `keep` (the first
    /// limit, the smallest remaining, the latest reset); any reading that cannot be read makes
    /// the counter unknown, as a repeated counter field's bad line does.
    fn add(&mut self, value: Option<T>, keep: impl Fn(T, T) -> T) {
        self.value = match (self.sent, self.value, value) {
            (false, _, v) => v,
            (true, Some(old), Some(new)) => Some(keep(old, new)),
            _ => None,
        };
        self.sent = true;
    }
}

/// The names of the counters in a `key=value` field (compared without regard to case).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PairKeys<'k> {
    pub(crate) limit: &'k str,
    pub(crate) remaining: &'k str,
    pub(crate) reset: &'k str,
    pub(crate) used: &'k str,
}

/// The counters of a `key=value` field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PairCounters {
    pub(crate) limit: Said<u64>,
    pub(crate) remaining: Said<u64>,
    pub(crate) reset: Said<Duration>,
    pub(crate) used: Said<u64>,
}

/// Reads the `key=value` pairs of every line of a field into its counters: the first limit,
/// the smallest remaining, the largest used and the latest reset, as for repeated counter
/// fields. Keys that are none of `keys` are ignored. `None` when the field is absent; a
/// malformed field (a member without `=`, too many members, a line not visible ASCII, too
/// long) reads as sent with nothing readable.
pub(crate) fn read_pairs(
    lines: &Lines<'_>,
    separators: &[u8],
    keys: PairKeys<'_>,
    mut reset: impl FnMut(&str) -> Option<Duration>,
) -> Option<PairCounters> {
    if !lines.is_present() {
        return None;
    }
    let malformed = PairCounters {
        limit: Said {
            sent: true,
            value: None,
        },
        ..PairCounters::default()
    };
    let mut c = PairCounters::default();
    let mut read_any = false;
    for line in lines.lines() {
        read_any = true;
        let Some(members) = members(line, separators) else {
            return Some(malformed);
        };
        for member in members {
            let Some((key, value)) = member.split_once('=') else {
                return Some(malformed);
            };
            let (key, value) = (trim_ows(key), trim_ows(value));
            let is = |k: &str| key.eq_ignore_ascii_case(k);
            if is(keys.limit) {
                c.limit.add(parse_count(value), |first, _| first);
            } else if is(keys.remaining) {
                c.remaining.add(parse_count(value), u64::min);
            } else if is(keys.used) {
                c.used.add(parse_count(value), u64::max);
            } else if is(keys.reset) {
                c.reset.add(reset(value), Duration::max);
            }
        }
    }
    Some(if read_any { c } else { malformed })
}

impl PairCounters {
    /// The policy these counters describe, or `None` when no limit, remaining or used count was
    /// sent (a reset alone makes no policy). A counter sent but unreadable leaves its value
    /// unknown and the policy unsound; a `used` gives the remaining when none was sent (and
    /// the limit, beside a remaining, when none was sent); a `used` above the limit, or a limit
    /// of 0, makes it unsound. The reset is set as the server sent it (beyond 365 days:
    /// clamped, unsound).
    pub(crate) fn policy(&self, dialect: Dialect) -> Option<Policy> {
        if !(self.limit.sent || self.remaining.sent || self.used.sent) {
            return None;
        }
        let mut p = Policy::new(dialect);
        p.set_limit(self.limit.value);
        p.set_remaining(self.remaining.value);
        p.set_reset_after(self.reset.value);
        if self.limit.unreadable()
            || self.remaining.unreadable()
            || self.used.unreadable()
            || self.reset.unreadable()
        {
            p.mark_unsound();
        }
        apply_used(&mut p, self.used.value);
        if p.limit() == Some(0) {
            p.mark_unsound();
        }
        Some(p)
    }
}

/// A `used` count: the remaining when none was sent (`limit − used`), the limit when only the
/// remaining was (`used + remaining`, as Reddit's fields); above the limit it contradicts it.
pub(crate) fn apply_used(p: &mut Policy, used: Option<u64>) {
    let Some(used) = used else { return };
    match (p.limit(), p.remaining()) {
        (Some(limit), remaining) => {
            if used > limit {
                p.mark_unsound();
            }
            if remaining.is_none() {
                p.set_remaining(Some(limit.saturating_sub(used)));
            }
        }
        (None, Some(remaining)) => p.set_limit(Some(used.saturating_add(remaining))),
        (None, None) => {}
    }
}

/// One `used/limit` count, bare (`32/40`) or named (`api-usage=18/5000`), with what follows it
/// in parentheses (`17/250(appName=sample-connected-app)`: `appName=sample-connected-app`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UsedOfLimit<'a> {
    pub(crate) name: Option<&'a str>,
    pub(crate) used: u64,
    pub(crate) limit: u64,
    pub(crate) detail: Option<&'a str>,
}

impl UsedOfLimit<'_> {
    /// The policy of the count: its limit, the remaining `limit − used` (0 when more was used,
    /// which a server that lets a quota run over sends), unsound for a limit of 0.
    pub(crate) fn policy(&self, dialect: Dialect) -> Policy {
        let mut p = Policy::new(dialect)
            .with_limit(self.limit)
            .with_remaining(self.limit.saturating_sub(self.used));
        if self.limit == 0 {
            p.mark_unsound();
        }
        p
    }
}

/// Reads one member `[name "="] used "/" limit ["(" detail ")"]`; counts are digits.
pub(crate) fn used_of_limit(member: &str) -> Option<UsedOfLimit<'_>> {
    let member = trim_ows(member);
    let (name, count) = match member.split_once('=') {
        // An `=` inside the parentheses is not the name's.
        Some((name, count)) if !name.contains('(') => (Some(trim_ows(name)), trim_ows(count)),
        _ => (None, member),
    };
    if name.is_some_and(str::is_empty) {
        return None;
    }
    let (count, detail) = match count.split_once('(') {
        Some((count, rest)) => (trim_ows(count), Some(rest.strip_suffix(')')?)),
        None => (count, None),
    };
    let (used, limit) = count.split_once('/')?;
    Some(UsedOfLimit {
        name,
        used: parse_u64(used)?,
        limit: parse_u64(limit)?,
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};

    const KEYS: PairKeys<'static> = PairKeys {
        limit: "total",
        remaining: "remaining",
        reset: "resets",
        used: "used",
    };

    fn pairs(values: &[&'static str]) -> Option<PairCounters> {
        let mut m = HeaderMap::new();
        for v in values {
            m.append("f", HeaderValue::from_static(v));
        }
        let lines = Lines::of(m.get_all("f"));
        read_pairs(&lines, b";", KEYS, |v| {
            parse_u64(v).map(Duration::from_secs)
        })
    }

    fn said<T>(value: Option<T>) -> Said<T> {
        Said { sent: true, value }
    }

    #[test]
    fn key_value_pairs_in_every_shape() {
        let secs = Duration::from_secs;
        let counters = |l: Said<u64>, r: Said<u64>, t: Said<Duration>| PairCounters {
            limit: l,
            remaining: r,
            reset: t,
            used: Said::default(),
        };
        let none = Said::<u64>::default;
        let no_reset = Said::<Duration>::default;
        let cases: Vec<(Vec<&'static str>, Option<PairCounters>)> = vec![
            (
                vec!["total=100; remaining=99; resets=59"],
                Some(counters(
                    said(Some(100)),
                    said(Some(99)),
                    said(Some(secs(59))),
                )),
            ),
            // Case, spaces, a trailing separator and an unknown key.
            (
                vec![" Total = 100 ;REMAINING=99;;other=x; "],
                Some(counters(said(Some(100)), said(Some(99)), no_reset())),
            ),
            // Repeated lines: the first limit, the smallest remaining, the latest reset.
            (
                vec![
                    "total=100; remaining=99; resets=5",
                    "total=50; remaining=7; resets=30",
                ],
                Some(counters(
                    said(Some(100)),
                    said(Some(7)),
                    said(Some(secs(30))),
                )),
            ),
            // A value that cannot be read.
            (
                vec!["total=lots; remaining=99"],
                Some(counters(said(None), said(Some(99)), no_reset())),
            ),
            (
                vec!["total=100; remaining=1", "remaining=-1"],
                Some(counters(said(Some(100)), said(None), no_reset())),
            ),
            // A member without `=` makes the field malformed.
            (
                vec!["total=100; 99"],
                Some(counters(said(None), none(), no_reset())),
            ),
            (vec![], None),
        ];
        for (values, want) in cases {
            assert_eq!(pairs(&values), want, "{values:?}");
        }
    }

    #[test]
    fn a_policy_from_pairs() {
        let p = pairs(&["total=100; remaining=99; resets=59"])
            .and_then(|c| c.policy(Dialect::Zendesk))
            .unwrap();
        assert_eq!(
            p,
            Policy::new(Dialect::Zendesk)
                .with_limit(100)
                .with_remaining(99)
                .with_reset_after(Duration::from_secs(59))
        );
        assert_eq!(
            pairs(&["resets=59"]).unwrap().policy(Dialect::Zendesk),
            None
        );
        let used = pairs(&["total=100; used=30"])
            .unwrap()
            .policy(Dialect::Zendesk);
        assert_eq!(used.and_then(|p| p.remaining()), Some(70));
        let over = pairs(&["total=100; used=130"])
            .unwrap()
            .policy(Dialect::Zendesk);
        assert!(over.is_some_and(|p| p.remaining() == Some(0) && !p.is_sound()));
        let summed = pairs(&["remaining=3; used=7"])
            .unwrap()
            .policy(Dialect::Zendesk);
        assert_eq!(summed.and_then(|p| p.limit()), Some(10));
        let zero = pairs(&["total=0; remaining=0"])
            .unwrap()
            .policy(Dialect::Zendesk);
        assert!(zero.is_some_and(|p| !p.is_sound()));
        let bad = pairs(&["total=100; 99"]).unwrap().policy(Dialect::Zendesk);
        assert!(bad.is_some_and(|p| !p.is_sound() && !p.has_numbers()));
    }

    #[test]
    fn used_of_limit_counts() {
        let u = |name, used, limit, detail| {
            Some(UsedOfLimit {
                name,
                used,
                limit,
                detail,
            })
        };
        let cases = [
            ("api-usage=18/5000", u(Some("api-usage"), 18, 5000, None)),
            (
                "per-app-api-usage=17/250(appName=sample-connected-app)",
                u(
                    Some("per-app-api-usage"),
                    17,
                    250,
                    Some("appName=sample-connected-app"),
                ),
            ),
            (" 32/40 ", u(None, 32, 40, None)),
            ("a = 1/2", u(Some("a"), 1, 2, None)),
            ("1/2(x=y)", u(None, 1, 2, Some("x=y"))),
            ("=1/2", None),
            ("a=1/2(x", None),
            ("a=1", None),
            ("a=-1/2", None),
            ("a=1/2/3", None),
            ("", None),
        ];
        for (member, want) in cases {
            assert_eq!(used_of_limit(member), want, "{member:?}");
        }
    }

    #[test]
    fn too_many_members_are_malformed() {
        let ok = vec!["a=1"; MAX_MEMBERS].join(";");
        let many = vec!["a=1"; MAX_MEMBERS + 1].join(";");
        assert_eq!(members(&ok, b";").map(|m| m.len()), Some(MAX_MEMBERS));
        assert_eq!(members(&many, b";"), None);
    }
}

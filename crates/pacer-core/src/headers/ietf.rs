//! The IETF `RateLimit` header fields in all the shapes servers still send.
//!
//! * **draft-08 .. -11** (Cloudflare, Runpod): `RateLimit-Policy: "burst";q=100;w=60` and
//!   `RateLimit: "burst";r=50;t=30`, Lists of policies named by Strings. Entries of the two
//!   fields with the same name (compared case-insensitively) are merged; a `RateLimit` entry's own
//!   `pk` wins over its policy's. A policy without a `RateLimit` entry is kept as quota-only.
//! * **draft-07** (Unity): `RateLimit: limit=100, remaining=50, reset=5`, a Dictionary, with
//!   `RateLimit-Policy: 100;w=10, 1000;w=3600`, a List of Integers.
//! * **drafts -00 .. -06** (SharePoint, Kong, Envoy): `RateLimit-Limit`, `RateLimit-Remaining`,
//!   `RateLimit-Reset`, optionally with the Integer-form `RateLimit-Policy`.
//!
//! Both structured fields are parsed strictly with `sfv` (RFC 9651): a syntax error, a member of
//! the wrong type, a missing required parameter (`r`, `q`), a negative number or `w=0` discards
//! that whole field ("malformed fields MUST be ignored", draft-11), never just the member; so
//! does a List of more than 64 members. A `t` or `w` beyond 365 days and a `q` of 0 are read but
//! make their policy unsound.
//!
//! Servers send the same `RateLimit-Policy` on every response: each thread keeps the last one it
//! read ([`last_policy`]).

use http::HeaderValue;
use smallvec::SmallVec;
use std::time::{Duration, SystemTime};

use super::bounds::MAX_MEMBERS;
use super::collect::Collected;
use super::counters::{CounterPolicy, read_counters};
use super::policy::{Dialect, Policy, QuotaUnit};
use super::sf::{Bare, Member, SfString, parse_draft07, read_line, read_list};

mod last_policy;

/// The named (draft-08+) policies and the Integer (draft-07) quotas of `RateLimit-Policy`.
pub(crate) type PolicyMembers = (Vec<Policy>, Vec<(u64, Option<Duration>)>);

/// Appends every IETF policy in `c` to `out`.
pub(crate) fn read(c: &Collected<'_>, now: SystemTime, out: &mut Vec<Policy>) {
    let legacy = read_counters(
        Dialect::IetfLegacy,
        &c.ietf_limit,
        &c.ietf_remaining,
        &c.ietf_reset,
        now,
    );
    let policy = c
        .ratelimit_policy
        .joined()
        .and_then(|field| last_policy::members(&field));
    let ratelimit = c.ratelimit.joined();
    read_fields(
        policy,
        ratelimit.as_deref().map(RateLimitField::Joined),
        legacy,
        out,
    );
}

/// The members of a one-line `RateLimit-Policy` field `value` (see [`last_policy`]); `None`
/// when it is absent, malformed, too long or not visible ASCII.
pub(crate) fn policy_line(value: &HeaderValue) -> Option<PolicyMembers> {
    last_policy::members_of_line(value)
}

/// A `RateLimit` field as it is handed to [`read_fields`].
#[derive(Clone, Copy)]
pub(crate) enum RateLimitField<'a> {
    /// Its lines joined, their text checked.
    Joined(&'a str),
    /// Its one line, at most `MAX_FIELD_BYTES` long, its text not checked yet (a line that
    /// is not visible ASCII is malformed).
    Line(&'a HeaderValue),
}

impl<'a> RateLimitField<'a> {
    fn bytes(self) -> &'a [u8] {
        match self {
            RateLimitField::Joined(text) => text.as_bytes(),
            RateLimitField::Line(line) => line.as_bytes(),
        }
    }

    fn text(self) -> Option<&'a str> {
        match self {
            RateLimitField::Joined(text) => Some(text),
            RateLimitField::Line(line) => line.to_str().ok(),
        }
    }
}

/// Appends to `out` the policies of the fields `RateLimit-Policy` (its members, read) and
/// `RateLimit` (`None`: absent or malformed) and of the separate counter fields of drafts -00
/// to -06 (`legacy`, read).
pub(crate) fn read_fields(
    policy: Option<PolicyMembers>,
    ratelimit: Option<RateLimitField<'_>>,
    legacy: Option<CounterPolicy>,
    out: &mut Vec<Policy>,
) {
    let (mut named, integers) = policy.unwrap_or_default();

    // The current-state policy that Integer-form quota policies describe, if any.
    let mut counted: Option<Policy> = None;
    if let Some(field) = ratelimit {
        // The first byte after the optional whitespace tells the dialect.
        if field.bytes().iter().find(|b| !matches!(b, b' ' | b'\t')) == Some(&b'"') {
            let entries = match field {
                RateLimitField::Joined(text) => {
                    read_list(text, MAX_MEMBERS, Entries::new, ratelimit_entry)
                }
                RateLimitField::Line(line) => {
                    read_line(line, MAX_MEMBERS, Entries::new, ratelimit_entry)
                }
            };
            if let Some(entries) = entries {
                merge(&mut named, entries);
            }
        } else {
            counted = field.text().and_then(draft07);
        }
    }
    if out.is_empty() {
        // The usual case: no other dialect came before; the policies are moved, not copied.
        *out = named;
    } else {
        out.append(&mut named);
    }

    if let Some(legacy) = legacy {
        out.extend(legacy.quota_only);
        if counted.is_none() {
            counted = Some(legacy.policy);
        } else {
            out.push(legacy.policy);
        }
    }

    // Integer-form quota policies: the one matching the current limit gives its window, the
    // others are quota-only.
    let dialect = counted
        .as_ref()
        .map_or(Dialect::IetfDraft07, Policy::dialect);
    for (quota, window) in integers {
        if let Some(p) = counted
            .as_mut()
            .filter(|p| p.limit() == Some(quota) && p.window().is_none())
        {
            p.set_window(window);
            continue;
        }
        let mut q = Policy::new(dialect).with_limit(quota);
        q.set_window(window);
        out.push(q);
    }
    // Pushed, not extended with the `Option`: that copies its policy's bytes even when `None`.
    if let Some(counted) = counted {
        out.push(counted);
    }
}

/// Reads the `RateLimit-Policy` field `field`, a structured List of at most [`MAX_MEMBERS`]
/// members (a longer one is malformed).
fn parse_policy(field: &str) -> Option<PolicyMembers> {
    read_list(field, MAX_MEMBERS, PolicyMembers::default, policy_member)
}

/// Reads one `RateLimit-Policy` member into the named (draft-08+) policies or the Integer
/// (draft-07) quotas; `None` when it is malformed.
fn policy_member((named, integers): &mut PolicyMembers, m: &Member<'_>) -> Option<()> {
    let window = match &m.params.w {
        None => None,
        Some(w) => Some(Duration::from_secs(w.non_negative().filter(|w| *w > 0)?)),
    };
    match &m.item {
        Bare::Str(name) => {
            let mut p = Policy::new(Dialect::IetfStructured)
                .with_limit(m.params.q.as_ref()?.non_negative()?);
            p.set_name_of(name.text());
            p.set_window(window);
            match &m.params.qu {
                None => {}
                Some(Bare::Str(u)) => p.set_unit(QuotaUnit::from_name(u.text())),
                Some(Bare::Token(u)) => p.set_unit(QuotaUnit::from_name(u)),
                Some(_) => return None,
            }
            p.set_partition_key(partition_key(m)?);
            // Duplicate names: the last one wins.
            named.retain(|o| !same_name(o, &p));
            named.push(p);
        }
        Bare::Int(q) => integers.push((u64::try_from(*q).ok()?, window)),
        _ => return None,
    }
    Some(())
}

/// Reads one draft-11 `RateLimit` member as an [`Entry`], with its name as the field has it
/// (given to a policy of its own only when no `RateLimit-Policy` entry takes it, see
/// [`merge`]); `None` when it is malformed.
fn ratelimit_entry<'de>(entries: &mut Entries<'de>, m: &Member<'de>) -> Option<()> {
    let remaining = m.params.r.as_ref()?.non_negative()?;
    let reset = match &m.params.t {
        None => None,
        Some(t) => Some(Duration::from_secs(t.non_negative()?)),
    };
    let partition_key = partition_key(m)?;
    let Bare::Str(name) = &m.item else {
        return None;
    };
    entries.retain(|e| !same_text(e.name.as_bytes(), name.as_bytes()));
    entries.push(Entry {
        // A copy of the reference (an escaped name, which `sfv` reads, is copied).
        name: name.clone(),
        remaining,
        reset,
        partition_key,
    });
    Some(())
}

/// A draft-11 `RateLimit` member as read, before it joins its policy.
struct Entry<'de> {
    /// Its name, as the field has it.
    name: SfString<'de>,
    remaining: u64,
    /// `t`, as sent: the policy clamps it ([`Policy::set_reset_after`]).
    reset: Option<Duration>,
    partition_key: Option<Box<[u8]>>,
}

/// The members of one `RateLimit` field: most send one or two, held on the stack.
type Entries<'de> = SmallVec<[Entry<'de>; 2]>;

/// The member's `pk`: `Some(None)` when absent, `None` when it is not a Byte Sequence.
fn partition_key(m: &Member<'_>) -> Option<Option<Box<[u8]>>> {
    match &m.params.pk {
        None => Some(None),
        Some(Bare::Bytes(b)) => Some(Some(b.clone().into_boxed_slice())),
        Some(_) => None,
    }
}

/// Names compared case-insensitively, as the fields' names are; the same bytes (what servers
/// send) are told at once.
fn same_text(a: &[u8], b: &[u8]) -> bool {
    a == b || a.eq_ignore_ascii_case(b)
}

fn same_name(a: &Policy, b: &Policy) -> bool {
    match (a.name(), b.name()) {
        (Some(x), Some(y)) => same_text(x.as_bytes(), y.as_bytes()),
        _ => false,
    }
}

/// Merges `RateLimit` entries into the named policies of `RateLimit-Policy` (names compared
/// case-insensitively); an entry no policy names is kept on its own, with its name.
fn merge(policies: &mut Vec<Policy>, entries: Entries<'_>) {
    for e in entries {
        let named = |p: &&mut Policy| {
            p.name()
                .is_some_and(|n| same_text(n.as_bytes(), e.name.as_bytes()))
        };
        match policies.iter_mut().find(named) {
            Some(p) => {
                p.set_remaining(Some(e.remaining));
                // A reset beyond 365 days makes the policy unsound, as it would the entry.
                p.set_reset_after(e.reset);
                if e.partition_key.is_some() {
                    p.set_partition_key(e.partition_key);
                }
            }
            None => {
                let mut p = Policy::new(Dialect::IetfStructured).with_remaining(e.remaining);
                p.set_reset_after(e.reset);
                p.set_partition_key(e.partition_key);
                p.set_name_of(e.name.text());
                policies.push(p);
            }
        }
    }
}

/// Reads a draft-07 `RateLimit` dictionary; `None` when malformed or without `limit`.
fn draft07(field: &str) -> Option<Policy> {
    let d = parse_draft07(field)?;
    let mut p = Policy::new(Dialect::IetfDraft07).with_limit(d.limit?.non_negative()?);
    if let Some(r) = d.remaining {
        p.set_remaining(Some(r.non_negative()?));
    }
    if let Some(t) = d.reset {
        p.set_reset_after(Some(Duration::from_secs(t.non_negative()?)));
    }
    Some(p)
}

#[cfg(test)]
mod tests;

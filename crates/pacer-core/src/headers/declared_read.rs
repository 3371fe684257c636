//! Reading the declared dialects of a response, after the built-in ones.
//!
//! The rules are the built-in dialects': repeated lines combine as for counter fields (the
//! first limit, the smallest remaining, the latest reset) and are bounded as theirs are (4 KiB,
//! 64 lines, visible ASCII); a field sent but unreadable leaves its value unknown and the policy
//! unsound; a limit of 0, a reset or window beyond 365 days make it unsound (clamped, failing
//! closed); the retry wait is clamped as `Retry-After` is. Reading is total: garbage gives
//! nothing, never a panic.
//!
//! **Cost.** A response without any declared field costs one lookup of each declared header
//! in the map, and no allocation; a field prefix (`Foo-RateLimit-*`) costs one look at each
//! field name, as the built-in reading's first look does.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderName};

use super::bounds::{MAX_MEMBERS, MAX_RETRY_AFTER};
use super::collect::Lines;
use super::counters::{CounterPolicy, read_counters, unreadable};
use super::datetime::{parse_http_date, parse_rfc3339, until};
use super::declared::{DeclaredDialect, FieldGrammar, FieldMatch, Source, Spec, TimeUnit, Window};
use super::fields::{PairKeys, apply_used, members, read_pairs, used_of_limit};
use super::go_duration::parse_go_duration;
use super::info::RateLimitInfo;
use super::num::{bare_value, millis_from_secs_reading, parse_count, parse_decimal_secs, trim_ows};
use super::policy::{Dialect, Policy};
use super::reset::parse_reset_field;
use super::retry_after::parse_retry_after;

/// `info` with what `dialects` read in `headers` added: their policies, and their retry wait
/// when `info` has no `Retry-After`. `now` is called only when a value needs the time. A
/// built-in policy that knows only a remaining equal to a declared policy's is the same count
/// read with less (Freshdesk's `X-Ratelimit-Remaining` is also `X-RateLimit-Remaining`) and
/// gives way.
pub(crate) fn apply(
    dialects: &[DeclaredDialect],
    headers: &HeaderMap,
    now: &mut dyn FnMut() -> SystemTime,
    info: RateLimitInfo,
) -> RateLimitInfo {
    let mut read = Vec::new();
    let mut retry = None;
    for d in dialects {
        read_one(&d.spec, headers, now, &mut read, &mut retry);
    }
    if read.is_empty() && (retry.is_none() || info.retry_after().is_some()) {
        return info;
    }
    let (mut policies, retry_after) = info.into_parts();
    policies.retain(|p| !said_less(p, &read));
    policies.append(&mut read);
    RateLimitInfo::from_parts(policies, retry_after.or(retry))
}

/// A built-in policy that knows only a remaining, one of the declared policies' remaining.
fn said_less(p: &Policy, declared: &[Policy]) -> bool {
    p.dialect() != Dialect::Declared
        && p.limit().is_none()
        && p.reset_after().is_none()
        && p.window().is_none()
        && p.remaining()
            .is_some_and(|r| declared.iter().any(|d| d.remaining() == Some(r)))
}

fn read_one(
    spec: &Spec,
    headers: &HeaderMap,
    now: &mut dyn FnMut() -> SystemTime,
    out: &mut Vec<Policy>,
    retry: &mut Option<Duration>,
) {
    let before = out.len();
    match &spec.source {
        Source::Headers {
            limit,
            remaining,
            used,
            reset,
        } => {
            let lines = |h: &Option<HeaderName>| match h {
                Some(h) => Lines::of(headers.get_all(h)),
                None => Lines::default(),
            };
            separate(
                spec,
                &lines(limit),
                &lines(remaining),
                &lines(used),
                &lines(reset),
                now,
                out,
            );
        }
        Source::Field {
            field: FieldMatch::Exact(name),
            ..
        } => one_field(spec, None, &Lines::of(headers.get_all(name)), now, out),
        Source::Field {
            field: FieldMatch::Prefix(prefix),
            ..
        } => {
            // `HeaderMap::keys` yields each name once, its repeated lines behind it.
            for (i, name) in headers
                .keys()
                .filter(|n| n.as_str().len() > prefix.len() && n.as_str().starts_with(&**prefix))
                .enumerate()
            {
                if i == MAX_MEMBERS {
                    break;
                }
                let suffix = &name.as_str()[prefix.len()..];
                one_field(
                    spec,
                    Some(suffix),
                    &Lines::of(headers.get_all(name)),
                    now,
                    out,
                );
            }
        }
    }
    for p in &mut out[before..] {
        p.set_unit(spec.unit.clone());
        match &spec.window {
            Window::None => {}
            Window::Fixed(w) => {
                if p.window().is_none() {
                    p.set_window(Some(*w));
                }
            }
            Window::Header(h, unit) => {
                let lines = Lines::of(headers.get_all(h));
                let window = lines
                    .singleton()
                    .and_then(|v| length(*unit, v))
                    .filter(|w| !w.is_zero());
                if unreadable(&lines, &window) {
                    p.mark_unsound();
                }
                if window.is_some() {
                    p.set_window(window);
                }
            }
        }
        if p.limit() == Some(0) {
            p.mark_unsound();
        }
    }
    if let Some((h, unit)) = &spec.retry_after
        && retry.is_none()
    {
        *retry = Lines::of(headers.get_all(h))
            .singleton()
            .and_then(|v| retry_wait(*unit, v, now));
    }
}

/// The policy of separate counter headers.
fn separate(
    spec: &Spec,
    limit: &Lines<'_>,
    remaining: &Lines<'_>,
    used: &Lines<'_>,
    reset: &Lines<'_>,
    now: &mut dyn FnMut() -> SystemTime,
    out: &mut Vec<Policy>,
) {
    // No reset lines are given: `now` is not read.
    let Some(CounterPolicy {
        mut policy,
        quota_only,
    }) = read_counters(
        Dialect::Declared,
        limit,
        remaining,
        &Lines::default(),
        SystemTime::UNIX_EPOCH,
    )
    else {
        return;
    };
    let used_count = used.singleton().and_then(parse_count);
    if unreadable(used, &used_count) {
        policy.mark_unsound();
    }
    apply_used(&mut policy, used_count);
    if reset.is_present() {
        let mut latest: Option<Duration> = None;
        let mut readable = true;
        for line in reset.lines() {
            match reset_after(spec.reset_unit, line, now) {
                Some(r) => latest = Some(latest.map_or(r, |l| l.max(r))),
                None => readable = false,
            }
        }
        let value = latest.filter(|_| readable);
        if value.is_none() {
            policy.mark_unsound();
        }
        policy.set_reset_after(value);
    }
    policy.set_shared_name(Arc::clone(&spec.name));
    out.extend(quota_only);
    out.push(policy);
}

/// The policies of one field in the dialect's grammar, named after `suffix` when the field was
/// matched by a prefix.
fn one_field(
    spec: &Spec,
    suffix: Option<&str>,
    lines: &Lines<'_>,
    now: &mut dyn FnMut() -> SystemTime,
    out: &mut Vec<Policy>,
) {
    let Source::Field {
        grammar,
        separator,
        keys,
        ..
    } = &spec.source
    else {
        return;
    };
    if !lines.is_present() {
        return;
    }
    let name = |p: &mut Policy| match suffix {
        Some(s) => p.set_name_of(s),
        None => p.set_shared_name(Arc::clone(&spec.name)),
    };
    match grammar {
        FieldGrammar::Pairs => {
            let keys = PairKeys {
                limit: &keys[0],
                remaining: &keys[1],
                reset: &keys[2],
                used: &keys[3],
            };
            let unit = spec.reset_unit;
            let counters = read_pairs(lines, &[*separator], keys, |v| reset_after(unit, v, now));
            if let Some(mut p) = counters.and_then(|c| c.policy(Dialect::Declared)) {
                name(&mut p);
                out.push(p);
            }
        }
        FieldGrammar::UsedOfLimit => {
            let before = out.len();
            for line in lines.lines() {
                let Some(entries) = members(line, &[*separator]) else {
                    out.truncate(before);
                    break;
                };
                for entry in entries.into_iter().filter_map(used_of_limit) {
                    let mut p = entry.policy(Dialect::Declared);
                    match entry.name {
                        Some(n) => p.set_name_of(n),
                        None => name(&mut p),
                    }
                    out.push(p);
                }
            }
            if out.len() == before {
                let mut p = Policy::new(Dialect::Declared).unsound();
                name(&mut p);
                out.push(p);
            }
        }
    }
}

/// A reset written in `unit`, as the time from `now` (unclamped: `Policy::set_reset_after`
/// clamps it and marks the policy).
fn reset_after(
    unit: TimeUnit,
    value: &str,
    now: &mut dyn FnMut() -> SystemTime,
) -> Option<Duration> {
    match unit {
        TimeUnit::Auto => parse_reset_field(value, now()),
        unit => time(unit, trim_ows(bare_value(value)), now),
    }
}

/// A retry wait written in `unit`, at most `MAX_RETRY_AFTER`.
fn retry_wait(
    unit: TimeUnit,
    value: &str,
    now: &mut dyn FnMut() -> SystemTime,
) -> Option<Duration> {
    match unit {
        TimeUnit::Auto => parse_retry_after(value, now()),
        unit => time(unit, trim_ows(value), now).map(|d| d.min(MAX_RETRY_AFTER)),
    }
}

/// A length written in `unit` (a window).
fn length(unit: TimeUnit, value: &str) -> Option<Duration> {
    let value = trim_ows(value);
    match unit {
        TimeUnit::Seconds => parse_decimal_secs(value),
        TimeUnit::Milliseconds => parse_decimal_secs(value).map(millis_from_secs_reading),
        TimeUnit::GoDuration => parse_go_duration(value),
        _ => None,
    }
}

/// The time from `now` a value in an explicit `unit` stands for (zero for a time past);
/// `Auto` is each role's own reading.
fn time(unit: TimeUnit, value: &str, now: &mut dyn FnMut() -> SystemTime) -> Option<Duration> {
    let epoch = |d: Duration, now: SystemTime| until(d.as_nanos() as i128, now);
    match unit {
        TimeUnit::Auto => None,
        TimeUnit::Seconds | TimeUnit::Milliseconds | TimeUnit::GoDuration => length(unit, value),
        TimeUnit::EpochSeconds => Some(epoch(parse_decimal_secs(value)?, now())),
        TimeUnit::EpochMilliseconds => Some(epoch(
            millis_from_secs_reading(parse_decimal_secs(value)?),
            now(),
        )),
        TimeUnit::HttpDate => {
            let now = now();
            Some(until(parse_http_date(value, now)?, now))
        }
        TimeUnit::Rfc3339 => Some(until(parse_rfc3339(value)?, now())),
    }
}

#[cfg(test)]
mod tests;

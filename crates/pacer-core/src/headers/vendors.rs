//! Vendor specifics: what GitHub, Reddit, Discord, OpenAI, Linear, Imgur, Anthropic and Shopify
//! add to or do instead of the common fields.
//!
//! * **GitHub**: `X-RateLimit-Resource` (`core`, `search`, `graphql`, …) names the policy;
//!   `X-RateLimit-Used` gives the remaining when `-Remaining` is missing. Resets are epoch
//!   seconds (read by magnitude like every reset). A `used` above the limit contradicts it.
//! * **Reddit**: `x-ratelimit-used` and `x-ratelimit-remaining` (written `597.0`) without a
//!   limit and without a resource: the limit is their sum.
//! * **Discord**: `X-RateLimit-Reset-After` (fractional delta seconds, "if you can't sync your
//!   clocks") wins over the epoch `X-RateLimit-Reset`; `X-RateLimit-Bucket` is the partition key.
//! * **OpenAI** (and Azure OpenAI): `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`,
//!   one policy each, resets as Go durations (`6m0s`, `20ms`). A limit of `0` or `-1` means "not
//!   reported" there, so such a policy is dropped.
//! * **Linear**: `x-ratelimit-{requests,complexity}-{limit,remaining,reset}`, the name before
//!   the counter, resets as epoch milliseconds; complexity points are their own unit.
//! * **Imgur**: `X-RateLimit-{User,Client}{Limit,Remaining,Reset}`, the name glued to the
//!   counter; both policies count requests.
//! * **Anthropic**: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-*`, one
//!   policy each, resets as RFC 3339 times.
//! * **Shopify**: `X-Shopify-Shop-Api-Call-Limit: 32/40` is *used/size* of a leaky bucket. The
//!   bucket leaks `size / 20` per second (Shopify documents 40 leaking 2/s), so the reset is the
//!   estimated time to drain the used part, `used × 20 s / size`, and the window is 20 s.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use super::collect::{Lines, Named, XFields};
use super::counters::{CounterPolicy, read_counters, unreadable};
use super::num::{parse_count, parse_u64, trim_ows};
use super::policy::{Dialect, Policy, QuotaUnit};
use super::reset::parse_delta_seconds;

/// The `X-RateLimit-Used` count; a field sent but unreadable marks the policy unsound.
fn used(x: &XFields<'_>, policy: &mut Policy) -> Option<u64> {
    let used = x.used.singleton().and_then(parse_count);
    if unreadable(&x.used, &used) {
        policy.mark_unsound();
    }
    used
}

/// GitHub: policy name from the resource, remaining from `used` when missing.
pub(crate) fn github(x: &XFields<'_>, policy: &mut Policy) {
    if let Some(resource) = x
        .resource
        .singleton()
        .map(trim_ows)
        .filter(|r| !r.is_empty())
    {
        policy.set_name_of(resource);
    }
    let used = used(x, policy);
    if let (Some(limit), Some(used)) = (policy.limit(), used) {
        if used > limit {
            policy.mark_unsound();
        }
        if policy.remaining().is_none() {
            policy.set_remaining(Some(limit.saturating_sub(used)));
        }
    }
}

/// Reddit: no limit is sent; it is `used + remaining`.
pub(crate) fn reddit(x: &XFields<'_>, policy: &mut Policy) {
    let used = used(x, policy);
    if let (None, Some(used), Some(remaining)) = (policy.limit(), used, policy.remaining()) {
        policy.set_limit(Some(used.saturating_add(remaining)));
    }
}

/// Discord: the reset-after wins over the epoch reset; the bucket is the partition key.
pub(crate) fn discord(x: &XFields<'_>, policy: &mut Policy) {
    let after = x.reset_after.singleton().and_then(parse_delta_seconds);
    if unreadable(&x.reset_after, &after) {
        policy.mark_unsound();
    }
    if let Some(after) = after {
        policy.set_reset_after(Some(after));
    }
    if let Some(bucket) = x.bucket.singleton().map(trim_ows).filter(|b| !b.is_empty()) {
        policy.set_partition_key(Some(bucket.as_bytes().into()));
    }
}

/// A policy name, without allocating for the names vendors use.
fn policy_name(name: &str) -> Cow<'static, str> {
    const KNOWN: [&str; 8] = [
        "requests",
        "tokens",
        "input-tokens",
        "output-tokens",
        "tokens_usage_based",
        "complexity",
        "user",
        "client",
    ];
    match KNOWN.iter().find(|k| **k == name) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(name.to_owned()),
    }
}

/// The unit a vendor's policy name stands for.
fn unit_of(name: &str) -> QuotaUnit {
    match name {
        "requests" => QuotaUnit::Requests,
        "input-tokens" => QuotaUnit::InputTokens,
        "output-tokens" => QuotaUnit::OutputTokens,
        n if n.contains("token") => QuotaUnit::Tokens,
        n => match QuotaUnit::from_name(n) {
            // Linear's `endpoint-requests`.
            QuotaUnit::Other(_) if n.ends_with("-requests") => QuotaUnit::Requests,
            unit => unit,
        },
    }
}

/// OpenAI: one policy per `x-ratelimit-*-NAME` group. A limit of `0` or `-1` means "not
/// reported" (Azure OpenAI), so such a policy is dropped.
pub(crate) fn openai(named: &Named<'_>, now: SystemTime, out: &mut Vec<Policy>) {
    let not_reported = named.limit.joined().is_some_and(|v| {
        let v = trim_ows(&v);
        v == "-1" || parse_count(v) == Some(0)
    });
    if !not_reported {
        named_policy(Dialect::OpenAi, named, now, out, unit_of(named.name));
    }
}

/// Linear (and any server naming the policy before the counter): one policy per
/// `x-ratelimit-NAME-*` group.
pub(crate) fn linear(named: &Named<'_>, now: SystemTime, out: &mut Vec<Policy>) {
    named_policy(Dialect::Linear, named, now, out, unit_of(named.name));
}

/// Imgur: one policy per `x-ratelimit-NAME{limit,remaining,reset}` group, counting requests.
pub(crate) fn imgur(named: &Named<'_>, now: SystemTime, out: &mut Vec<Policy>) {
    named_policy(Dialect::Imgur, named, now, out, QuotaUnit::Requests);
}

/// Anthropic: one policy per `anthropic-ratelimit-NAME-*` group.
pub(crate) fn anthropic(named: &Named<'_>, now: SystemTime, out: &mut Vec<Policy>) {
    named_policy(Dialect::Anthropic, named, now, out, unit_of(named.name));
}

fn named_policy(
    dialect: Dialect,
    named: &Named<'_>,
    now: SystemTime,
    out: &mut Vec<Policy>,
    unit: QuotaUnit,
) {
    let Some(CounterPolicy { policy, quota_only }) =
        read_counters(dialect, &named.limit, &named.remaining, &named.reset, now)
    else {
        return;
    };
    let policy = policy
        .with_name(policy_name(named.name))
        .with_unit(unit.clone());
    out.extend(quota_only.into_iter().map(|q| q.with_unit(unit.clone())));
    out.push(policy);
}

/// Shopify: `used/size` of the REST Admin leaky bucket.
pub(crate) fn shopify(lines: &Lines<'_>) -> Option<Policy> {
    let (used, size) = lines.singleton()?.split_once('/')?;
    let used = parse_u64(used)?;
    let size = parse_u64(size).filter(|s| *s > 0)?;
    const DRAIN_SECS: u128 = 20;
    let drain_nanos = u128::from(used.min(size)) * DRAIN_SECS * 1_000_000_000 / u128::from(size);
    let reset = Duration::from_nanos(u64::try_from(drain_nanos).unwrap_or(u64::MAX));
    Some(
        Policy::new(Dialect::Shopify)
            .with_limit(size)
            .with_remaining(size.saturating_sub(used))
            .with_reset_after(reset)
            .with_window(Duration::from_secs(20)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RateLimitInfo;

    const NOW: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

    fn info(pairs: &[(&'static str, &str)]) -> RateLimitInfo {
        crate::headers::info_at(pairs, SystemTime::UNIX_EPOCH + Duration::from_secs(NOW))
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn github() {
        let reset = (NOW + 1200).to_string();
        let got = info(&[
            ("x-ratelimit-limit", "30"),
            ("x-ratelimit-remaining", "14"),
            ("x-ratelimit-reset", &reset),
            ("x-ratelimit-used", "16"),
            ("x-ratelimit-resource", "search"),
        ]);
        let want = Policy::new(Dialect::GitHub)
            .with_name("search")
            .with_limit(30)
            .with_remaining(14)
            .with_reset_after(secs(1200));
        assert_eq!(got.policies(), [want]);

        // The real dump's reset (2022) is long past: zero, not 4 years.
        let got = info(&[
            ("X-RateLimit-Limit", "30"),
            ("X-RateLimit-Used", "30"),
            ("X-RateLimit-Reset", "1655120964"),
            ("X-RateLimit-Resource", "core"),
        ]);
        assert_eq!(got.remaining(), Some(0));
        assert_eq!(got.reset_after(), Some(Duration::ZERO));
        assert!(got.is_exhausted());
    }

    #[test]
    fn github_used_that_contradicts_or_cannot_be_read() {
        let got = info(&[
            ("x-ratelimit-limit", "30"),
            ("x-ratelimit-used", "31"),
            ("x-ratelimit-resource", "search"),
        ]);
        assert_eq!(got.remaining(), Some(0));
        assert!(!got.is_sound());
        let got = info(&[
            ("x-ratelimit-limit", "30"),
            ("x-ratelimit-remaining", "14"),
            ("x-ratelimit-used", "n/a"),
            ("x-ratelimit-resource", "core"),
        ]);
        assert_eq!(got.remaining(), Some(14));
        assert!(!got.is_sound());
    }

    #[test]
    fn reddit_limit_is_used_plus_remaining() {
        let got = info(&[
            ("x-ratelimit-used", "3"),
            ("x-ratelimit-remaining", "597.0"),
            ("x-ratelimit-reset", "423"),
        ]);
        let want = Policy::new(Dialect::Reddit)
            .with_limit(600)
            .with_remaining(597)
            .with_reset_after(secs(423));
        assert_eq!(got.policies(), [want]);
        assert!(got.is_sound());
        let got = info(&[
            ("x-ratelimit-used", "599"),
            ("x-ratelimit-remaining", "0.4"),
        ]);
        assert_eq!((got.limit(), got.remaining()), (Some(599), Some(0)));
        let got = info(&[("x-ratelimit-used", "3"), ("x-ratelimit-remaining", "-1")]);
        assert_eq!(got.limit(), None);
        assert!(!got.is_sound());
    }

    #[test]
    fn linear_name_before_counter_with_epoch_millis() {
        let got = info(&[
            ("X-RateLimit-Requests-Limit", "1500"),
            ("X-RateLimit-Requests-Remaining", "1499"),
            ("X-RateLimit-Requests-Reset", "1767229200000"),
            ("X-RateLimit-Complexity-Limit", "250000"),
            ("X-RateLimit-Complexity-Remaining", "249000"),
            ("X-RateLimit-Complexity-Reset", "1767229200000"),
        ]);
        let requests = Policy::new(Dialect::Linear)
            .with_name("requests")
            .with_limit(1500)
            .with_remaining(1499)
            .with_reset_after(secs(3600));
        let complexity = Policy::new(Dialect::Linear)
            .with_name("complexity")
            .with_unit(QuotaUnit::Other("complexity".into()))
            .with_limit(250_000)
            .with_remaining(249_000)
            .with_reset_after(secs(3600));
        assert_eq!(got.policies(), [complexity, requests]);
        assert!(got.is_sound());
        let got = info(&[
            ("X-RateLimit-Endpoint-Requests-Limit", "100"),
            ("X-RateLimit-Endpoint-Requests-Remaining", "0"),
            ("X-RateLimit-Endpoint-Name", "issueCreate"),
        ]);
        assert_eq!(got.policy_name(), Some("endpoint-requests"));
        assert_eq!(got.quota_unit(), Some(&QuotaUnit::Requests));
        assert!(got.is_exhausted());
    }

    #[test]
    fn imgur_user_and_client() {
        let reset = (NOW + 1800).to_string();
        let got = info(&[
            ("X-RateLimit-UserLimit", "2000"),
            ("X-RateLimit-UserRemaining", "1999"),
            ("X-RateLimit-UserReset", &reset),
            ("X-RateLimit-ClientLimit", "12500"),
            ("X-RateLimit-ClientRemaining", "12499"),
        ]);
        let user = Policy::new(Dialect::Imgur)
            .with_name("user")
            .with_limit(2000)
            .with_remaining(1999)
            .with_reset_after(secs(1800));
        let client = Policy::new(Dialect::Imgur)
            .with_name("client")
            .with_limit(12_500)
            .with_remaining(12_499);
        assert_eq!(got.policies(), [user, client]);
    }

    #[test]
    fn kong_and_openai_beside_the_new_spellings() {
        let got = info(&[
            ("x-ratelimit-limit-minute", "3"),
            ("x-ratelimit-remaining-minute", "1"),
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-requests-limit", "1500"),
            ("x-ratelimit-requests-remaining", "1499"),
        ]);
        let dialects: Vec<_> = got
            .policies()
            .iter()
            .map(|p| (p.dialect(), p.name()))
            .collect();
        assert_eq!(
            dialects,
            [
                (Dialect::XRateLimit, Some("minute")),
                (Dialect::OpenAi, Some("requests")),
                (Dialect::Linear, Some("requests")),
            ]
        );
    }

    #[test]
    fn discord() {
        let got = info(&[
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "1767225660.123"),
            ("X-RateLimit-Reset-After", "1.234"),
            ("X-RateLimit-Bucket", "abcd1234"),
        ]);
        let want = Policy::new(Dialect::Discord)
            .with_limit(5)
            .with_remaining(0)
            .with_reset_after(Duration::from_millis(1234))
            .with_partition_key(*b"abcd1234");
        assert_eq!(got.policies(), [want]);
        // Without reset-after, the fractional epoch counts.
        let got = info(&[
            ("X-RateLimit-Remaining", "1"),
            ("X-RateLimit-Reset", "1767225660.5"),
            ("X-RateLimit-Bucket", "b"),
        ]);
        assert_eq!(got.reset_after(), Some(Duration::from_millis(60_500)));
        let got = info(&[
            ("X-RateLimit-Remaining", "1"),
            ("X-RateLimit-Reset-After", "soon"),
            ("X-RateLimit-Bucket", "b"),
        ]);
        assert!(!got.is_sound());
    }

    #[test]
    fn openai_requests_and_tokens() {
        let got = info(&[
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-remaining-tokens", "149984"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        let requests = Policy::new(Dialect::OpenAi)
            .with_name("requests")
            .with_limit(60)
            .with_remaining(59)
            .with_reset_after(secs(1));
        let tokens = Policy::new(Dialect::OpenAi)
            .with_name("tokens")
            .with_unit(QuotaUnit::Tokens)
            .with_limit(150_000)
            .with_remaining(149_984)
            .with_reset_after(secs(360));
        assert_eq!(got.policies(), [requests, tokens]);

        let got = info(&[
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-tokens", "100"),
            ("x-ratelimit-reset-tokens", "20ms"),
            ("x-ratelimit-limit-requests", "10"),
            ("x-ratelimit-remaining-requests", "5"),
        ]);
        assert_eq!(got.policy_name(), Some("tokens"));
        assert_eq!(got.reset_after(), Some(Duration::from_millis(20)));
    }

    #[test]
    fn azure_openai_zero_and_negative_limits_are_not_reported() {
        let got = info(&[
            ("x-ratelimit-limit-requests", "0"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-limit-tokens", "-1"),
            ("x-ratelimit-remaining-tokens", "-1"),
        ]);
        assert!(got.is_empty());
        assert!(!got.is_exhausted());
        // Elsewhere a limit of 0 is kept, unsound.
        let got = info(&[
            ("anthropic-ratelimit-requests-limit", "0"),
            ("anthropic-ratelimit-requests-remaining", "0"),
        ]);
        assert_eq!(got.limit(), Some(0));
        assert!(!got.is_sound());
    }

    #[test]
    fn anthropic() {
        let got = info(&[
            ("retry-after", "12"),
            ("anthropic-ratelimit-requests-limit", "1000"),
            ("anthropic-ratelimit-requests-remaining", "999"),
            ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:01Z"),
            ("anthropic-ratelimit-input-tokens-limit", "80000"),
            ("anthropic-ratelimit-input-tokens-remaining", "1000"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2026-01-01T00:00:30Z",
            ),
            ("anthropic-ratelimit-output-tokens-limit", "16000"),
            ("anthropic-ratelimit-output-tokens-remaining", "16000"),
            (
                "anthropic-ratelimit-output-tokens-reset",
                "2026-01-01T00:00:00Z",
            ),
            ("anthropic-ratelimit-tokens-limit", "96000"),
            ("anthropic-ratelimit-tokens-remaining", "17000"),
            ("anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:59Z"),
        ]);
        assert_eq!(got.retry_after(), Some(secs(12)));
        assert_eq!(got.policies().len(), 4);
        assert_eq!(got.policy_name(), Some("input-tokens"));
        assert_eq!(got.quota_unit(), Some(&QuotaUnit::InputTokens));
        assert_eq!(got.remaining_fraction(), Some(1000.0 / 80000.0));
        assert_eq!(got.reset_after(), Some(secs(30)));
        let tokens = got.policies().iter().find(|p| p.name() == Some("tokens"));
        assert_eq!(tokens.and_then(Policy::reset_after), Some(Duration::ZERO));
    }

    #[test]
    fn shopify_bucket() {
        let got = info(&[
            ("X-Shopify-Shop-Api-Call-Limit", "32/40"),
            ("Retry-After", "2.0"),
        ]);
        let want = Policy::new(Dialect::Shopify)
            .with_limit(40)
            .with_remaining(8)
            .with_reset_after(secs(16))
            .with_window(secs(20));
        assert_eq!(got.policies(), [want]);
        assert_eq!(got.retry_after(), Some(secs(2)));
        assert_eq!(
            info(&[("x-shopify-shop-api-call-limit", "41/40")]).remaining(),
            Some(0)
        );
        for bad in ["32", "32/0", "a/40", "32/40/1", "-1/40", ""] {
            assert!(
                info(&[("x-shopify-shop-api-call-limit", bad)]).is_empty(),
                "{bad}"
            );
        }
    }

    /// A server that describes its bucket twice, Shopify's field beside draft-11 fields of the
    /// same size and a stated window: the stated window wins over the assumed 20 s drain.
    #[test]
    fn shopify_beside_a_stated_window_of_the_same_bucket_gives_way() {
        let both = info(&[
            ("X-Shopify-Shop-Api-Call-Limit", "10/50"),
            ("RateLimit-Policy", r#""bucket";q=50;w=1"#),
            ("RateLimit", r#""bucket";r=40;t=1"#),
        ]);
        assert_eq!(both.policies().len(), 1, "{both:?}");
        assert_eq!(both.policies()[0].window(), Some(secs(1)));
        // Another size is another bucket: both are kept.
        let two = info(&[
            ("X-Shopify-Shop-Api-Call-Limit", "10/40"),
            ("RateLimit-Policy", r#""bucket";q=50;w=1"#),
            ("RateLimit", r#""bucket";r=40;t=1"#),
        ]);
        assert_eq!(two.policies().len(), 2, "{two:?}");
    }
}

//! `RateLimitInfo::from_headers`: one pass to collect the fields, then each dialect reads its
//! own. Dialects are not exclusive: a response that carries several (Kong sends the legacy IETF
//! fields and window-in-name ones) yields all their policies, and the most restrictive wins.

use std::time::SystemTime;

use http::HeaderMap;

use super::collect::{Collected, Family, may_be_field};
use super::info::RateLimitInfo;
use super::retry_after::retry_after;
use super::{ietf, vendors, x_ratelimit};

/// Parses every dialect in `headers` against `now`. Total: never fails, never panics.
pub(crate) fn parse(headers: &HeaderMap, now: SystemTime) -> RateLimitInfo {
    if !headers.keys().any(|name| may_be_field(name.as_str())) {
        return RateLimitInfo::default();
    }
    let mut c = Collected::default();
    c.fill(headers);
    if !c.found {
        return RateLimitInfo::default();
    }
    let mut policies = Vec::new();
    ietf::read(&c, now, &mut policies);
    x_ratelimit::read(&c, now, &mut policies);
    for named in &c.named {
        match named.family {
            Family::Anthropic => vendors::anthropic(named, now, &mut policies),
            Family::XRateLimit => match x_ratelimit::window_of(named.name) {
                Some((name, window)) => {
                    x_ratelimit::read_windowed(named, name, window, now, &mut policies);
                }
                None => vendors::openai(named, now, &mut policies),
            },
            Family::NameFirst => vendors::linear(named, now, &mut policies),
            Family::Glued => vendors::imgur(named, now, &mut policies),
        }
    }
    // Shopify's field states no leak rate: the 20 s drain is Shopify's documented one, assumed.
    // A response that also states the window of a bucket of the same size, in another dialect,
    // describes the same bucket twice; the stated window wins.
    policies.extend(vendors::shopify(&c.shopify).filter(|shopify| {
        !policies
            .iter()
            .any(|p| p.limit() == shopify.limit() && p.window().is_some_and(|w| !w.is_zero()))
    }));
    // A limit of 0 is out of range: no request could ever be sent. (OpenAI's "not reported"
    // zero has been dropped above.)
    for p in &mut policies {
        if p.limit() == Some(0) {
            p.mark_unsound();
        }
    }
    let retry_after = retry_after(&c.retry_after, &c.retry_after_ms, now);
    RateLimitInfo::from_parts(policies, retry_after)
}

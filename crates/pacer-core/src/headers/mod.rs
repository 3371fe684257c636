//! Rate-limit response headers in every dialect seen in the wild, read into one
//! [`RateLimitInfo`].
//!
//! Servers tell clients their quota in a dozen ways: the IETF drafts (three generations),
//! `X-RateLimit-*`, and vendor dialects (GitHub, Reddit, Discord, OpenAI, Linear, Imgur,
//! Anthropic, Shopify, HubSpot, Salesforce, Zendesk, Azure's `x-ms-retry-after-ms`). Resets come as delta seconds, milliseconds, epoch seconds or
//! milliseconds, Go durations, RFC 3339 or HTTP-dates. Reading them all into one shape, resolved
//! against a passed-in `now`, is what lets the throttling algorithms stay dialect-free.
//! `docs/headers.md` lists the dialects and rules.

mod advisory;
mod bounds;
mod collect;
mod counters;
mod datetime;
mod declared;
mod declared_read;
mod fields;
mod go_duration;
mod hubspot;
mod ietf;
mod info;
mod num;
mod parse;
mod policy;
mod reset;
mod restrictive;
mod retry_after;
mod salesforce;
mod sf;
pub(crate) mod spare;
mod vendors;
mod x_ratelimit;
mod zendesk;

#[cfg(test)]
mod hostile;

pub(crate) use datetime::{format_rfc3339, from_epoch_nanos, parse_rfc3339};
pub use declared::{DeclaredDialect, DeclaredDialectBuilder, FieldGrammar, TimeUnit};
pub(crate) use declared_read::apply as apply_declared;
pub use info::RateLimitInfo;
pub(crate) use parse::{Age, parse_with_age};
pub use policy::{Dialect, Policy, QuotaUnit};

/// The rate-limit state of these header lines (appended in order), read at `now`: the tests'
/// one way to build a response's headers.
#[cfg(test)]
pub(crate) fn info_at(pairs: &[(&'static str, &str)], now: std::time::SystemTime) -> RateLimitInfo {
    let mut m = http::HeaderMap::new();
    for (k, v) in pairs {
        m.append(*k, http::HeaderValue::from_str(v).expect("a header value"));
    }
    RateLimitInfo::from_headers(&m, now)
}

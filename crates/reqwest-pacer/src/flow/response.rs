//! Steps 5 and 6 of the flow: a 429's body, the classification, and what a response feeds
//! back into the endpoint's state; and what the caller is told.

use crate::classify::forbids_retry;
use crate::endpoints::Endpoint;
use crate::named::Named;
use crate::{BodyVerdict, LimiterConfig, Paced, QuotaExhausted};
use pacer_core::{RateLimitInfo, ServerQuota, Signal};
use reqwest::Response;
use std::sync::Arc;

/// Gives the caller what Pacer did, in the response's extensions.
pub(super) fn mark(mut response: Response, paced: Paced) -> Response {
    response.extensions_mut().insert(paced);
    response
}

/// Step 5 for a 429 with a JSON body: shows the classifier the body's first bytes
/// ([`crate::body`]) and marks a response whose account is out of credit with
/// [`QuotaExhausted`]. Any other result goes through untouched.
pub(super) async fn read_body(
    named: &Named,
    config: &LimiterConfig,
    key: &str,
    response: &mut Response,
) -> Verdict {
    // Taken out for the read, which rebuilds it, and put back (a 429's path only).
    let taken = std::mem::replace(
        response,
        Response::from(http::Response::new(Vec::<u8>::new())),
    );
    let (rebuilt, verdict) = crate::body::classify_body(&*config.classifier, taken).await;
    *response = rebuilt;
    match verdict {
        Some(BodyVerdict::QuotaExhausted { code }) => {
            tracing::info!(code = %code, "quota exhausted: not a throttle, not retried");
            response.extensions_mut().insert(QuotaExhausted {
                code,
                limiter: Arc::clone(&named.name),
                endpoint: Arc::from(key),
            });
            Verdict::QuotaExhausted
        }
        Some(BodyVerdict::NoRetry) => Verdict::NoRetry,
        _ => Verdict::None,
    }
}

/// What a 429's body said, in the one byte the request's future keeps of it (the provider's code
/// is in the response's [`QuotaExhausted`] mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing: the status and headers decide.
    None,
    /// A throttle not to be sent again.
    NoRetry,
    /// The account is out of credit: not a throttle.
    QuotaExhausted,
}

/// True if a throttled response must not be sent again: `x-should-retry: false`, or a body the
/// classifier says is not to be retried.
pub(super) fn refuses_retry(response: &Response, verdict: Verdict) -> bool {
    verdict == Verdict::NoRetry || forbids_retry(response.headers())
}

/// Parses the response's rate-limit state into the endpoint's state and classifies it. When the
/// state has a remaining and a reset, the endpoint's limiter paces to them
/// ([`pacer_core::Limiter::follow_server`]) before the response is fed back.
pub(super) fn observe(
    named: &Named,
    config: &LimiterConfig,
    key: &str,
    response: &Response,
    endpoint: Option<&Endpoint>,
    verdict: Verdict,
) -> Signal {
    let max_retry_after = config.options.max_retry_after;
    let info = RateLimitInfo::from_headers(response.headers(), named.clock.system_now());
    // An account out of credit is not a throttle: waiting will not help.
    let signal = match verdict {
        Verdict::QuotaExhausted => Signal::Neutral,
        _ => config
            .classifier
            .classify(response.status(), response.headers(), &info),
    };
    // The quotas in other units (tokens) as the server sent them: advice bounds an exhausted
    // policy's reset to one unit's interval, which is not the time its tokens take to return.
    let unit_policies = crate::unit_quota::unit_policies(&info);
    // Only a throttle can stop the endpoint: on any other response a Retry-After is a hint
    // (RFC 9110 §10.2.3) and the rate-limit fields are advice on the pace.
    let info = if matches!(signal, Signal::Throttled { .. }) {
        info
    } else {
        info.into_advisory()
    };
    // A response from a cache tells nothing of the quota now (draft-ietf-httpapi-ratelimit-headers).
    let from_cache = || {
        response
            .headers()
            .get(http::header::AGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|age| age > 0)
    };
    if (!info.is_empty() || named.headers_seen()) && !from_cache() {
        named.saw_headers();
        // Bounded once, here, so that a bounded stop also ends (see `RateLimitInfo::bounded`).
        let bounded = info.bounded(max_retry_after, config.server_stop.max_exhausted_delay());
        if let (Some(endpoint), Some(quota)) = (endpoint, ServerQuota::from_info(&bounded)) {
            named.record(&endpoint.limiter.follow_server(quota));
        }
        named.headers.observe(key, bounded, named.clock.now());
        crate::unit_quota::observe(named, endpoint, key, unit_policies);
    }
    signal
}

//! Steps 5 and 6 of the flow: a 429's body, then the engine's reading of the response and what
//! it changes in the endpoint; and what the caller is told.

use crate::named::Named;
use crate::{BodyVerdict, LimiterConfig, Paced, QuotaExhausted};
use pacer_core::{After, Endpoint, Signal, Timestamp};
use reqwest::Response;
use std::sync::Arc;

/// Gives the caller what Pacer did, in the response's extensions.
pub(super) fn mark(mut response: Response, paced: Paced) -> Response {
    mark_in(&mut response, paced);
    response
}

/// [`mark`] in place.
pub(super) fn mark_in(response: &mut Response, paced: Paced) {
    response.extensions_mut().insert(paced);
}

/// Step 5 for a 429 with a JSON body: shows the classifier the body's first bytes
/// ([`crate::body`]) and marks a response whose account is out of credit with
/// [`QuotaExhausted`]. Any other result goes through untouched.
pub(super) async fn read_body(
    named: &Named,
    config: &LimiterConfig,
    key: &str,
    response: &mut Response,
) -> Option<BodyVerdict> {
    // Taken out for the read, which rebuilds it, and put back (a 429's path only).
    let taken = std::mem::replace(
        response,
        Response::from(http::Response::new(Vec::<u8>::new())),
    );
    let (rebuilt, verdict) = crate::body::classify_body(&**config.rules.classifier(), taken).await;
    *response = rebuilt;
    if let Some(BodyVerdict::QuotaExhausted { code }) = &verdict {
        tracing::info!(code = %code, "quota exhausted: not a throttle, not retried");
        response.extensions_mut().insert(QuotaExhausted {
            code: code.clone(),
            limiter: Arc::clone(&named.name),
            endpoint: Arc::from(key),
        });
    }
    verdict
}

/// Step 6: the engine reads the response (with what its body said) and applies it to the
/// endpoint (see [`pacer_core::Engine::after`]).
pub(super) fn observe(
    named: &Named,
    config: &LimiterConfig,
    endpoint: &Endpoint,
    response: &Response,
    body: Option<&BodyVerdict>,
    units: u64,
    sent_at: Timestamp,
) -> (Signal, After) {
    let reading = config.rules.read(
        response.status(),
        response.headers(),
        body,
        named.clock.system_now(),
        config.options.max_retry_after,
    );
    let now = named.clock.now();
    let signal = reading.signal();
    let after = named.engine.after(endpoint, reading, units, sent_at, now);
    named.record(&after.changes);
    (signal, after)
}

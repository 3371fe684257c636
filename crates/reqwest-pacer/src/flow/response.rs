//! Steps 5 and 6 of the flow: a 429's body, then the engine's reading of the response and what
//! it changes in the endpoint; and what the caller is told.

use crate::named::Named;
use crate::{BodyVerdict, LimiterConfig, Paced, QuotaExhausted};
use pacer_core::{After, BodyReading, Endpoint, Signal, Timestamp};
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

/// Step 5 for a response whose body the rules read ([`crate::body::body_limit`]: a 429's with
/// a JSON body, any JSON response's when they read a GraphQL query's cost): shows the classifier
/// a 429's body ([`crate::body`]), reads the query's cost, and marks a response whose account is
/// out of credit with [`QuotaExhausted`]. Any other result goes through untouched.
pub(super) async fn read_body(
    named: &Named,
    config: &LimiterConfig,
    key: &str,
    response: &mut Response,
) -> BodyReading {
    // Taken out for the read, which rebuilds it, and put back.
    let taken = std::mem::replace(
        response,
        Response::from(http::Response::new(Vec::<u8>::new())),
    );
    let (rebuilt, said) = crate::body::read_body(&config.rules, taken).await;
    *response = rebuilt;
    if let Some(BodyVerdict::QuotaExhausted { code }) = &said.verdict {
        tracing::info!(code = %code, "quota exhausted: not a throttle, not retried");
        response.extensions_mut().insert(QuotaExhausted::new(
            code.clone(),
            Arc::clone(&named.name),
            Arc::from(key),
        ));
    }
    said
}

/// Step 6: the engine reads the response (with what its body said) and applies it to the
/// endpoint (see [`pacer_core::Engine::after`]).
pub(super) fn observe(
    named: &Named,
    config: &LimiterConfig,
    endpoint: &Endpoint,
    response: &Response,
    body: Option<&BodyReading>,
    units: u64,
    sent_at: Timestamp,
) -> (Signal, After) {
    // The bucket counted in the request's units.
    let cost = body
        .and_then(|b| b.cost.clone())
        .map(|c| c.with_units(units));
    let reading = config.rules.read_with_cost(
        response.status(),
        response.headers(),
        body.and_then(|b| b.verdict.as_ref()),
        cost.as_ref(),
        || named.clock.system_now(),
        config.options.max_retry_after,
    );
    let now = named.clock.now();
    let signal = reading.signal();
    let after = named.engine.after(endpoint, reading, units, sent_at, now);
    named.record(&after.changes);
    (signal, after)
}

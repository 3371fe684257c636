//! Step 5 of the flow: a 429's body (and a query's cost) read for the engine; and what the
//! caller is told.

use crate::named::Named;
use crate::{BodyVerdict, LimiterConfig, Paced, QuotaExhausted};
use pacer_core::BodyReading;
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

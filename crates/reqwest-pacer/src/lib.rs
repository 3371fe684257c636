//! Client-side rate limiting for `reqwest`, as a [`reqwest_middleware`] middleware.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use reqwest_middleware::ClientBuilder;
//! use reqwest_pacer::PacerMiddleware;
//!
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(PacerMiddleware::default())
//!     .build();
//! let response = client.get("https://api.example.com/orders").send().await?;
//! # let _ = response; Ok(()) }
//! ```
//!
//! # The request flow
//!
//! 1. **Key.** The request goes through a named limiter (a [`UseLimiter`] extension, else the
//!    default) and, within it, through the state of its endpoint key (an [`EndpointKey`]
//!    extension, else the limiter's [`EndpointKeyExtractor`]; `scheme://host:port` by default).
//! 2. **Cost.** Its units: a [`Cost`] extension, else the limiter's [`CostEstimator`] (1 by
//!    default). A request of 0 units neither waits nor moves the rate.
//! 3. **Wait**, all within one budget of `MaxWait`: a stop the server ordered for the key (a
//!    `Retry-After`, capped by `MaxRetryAfter`; or nothing remaining until the reset); else the
//!    proactive throttling algorithm's delay; the quotas the server reports in tokens, for the
//!    request's [`TokenCost`] (or the limiter's token estimator); then the adaptive limiter's
//!    queue for the units, in the request's [`Priority`] lane (interactive requests before
//!    batch work, one batch grant after at most [`INTERACTIVE_PER_BATCH`] interactive ones in
//!    a row), with a slot among the endpoint's requests in flight under `MaxConcurrent` (the
//!    limiter's, and a [`MaxConcurrent`] extension's, held until the response is read or the
//!    send fails, and given back if the request's future is dropped before; each retry takes a
//!    new one). A [`MaxWait`] extension replaces the limiter's `MaxWait` for the request.
//!    A request that would wait longer, or finds the queue at `QueueLimit`, is refused **without
//!    being sent**, with a [`PacerError::Rejected`] that says which limit and the wait it needed.
//!    A [`TotalTimeout`] extension bounds the whole request (every wait, send and retry):
//!    a wait that would outlast it is refused at once ([`RejectReason::PastTimeout`]).
//! 4. **Send** with `next.run`, within what is left of the request's [`TotalTimeout`], if it has
//!    one ([`PacerError::TimedOut`]). reqwest's own `.timeout()` starts inside the send, so
//!    Pacer's wait comes on top of it: with the default `MaxWait` of 30 s a 5 s reqwest timeout
//!    can take 35 s.
//! 5. **Classify** the response with the limiter's [`ThrottleClassifier`]: throttled (429; 503 or
//!    403 with `Retry-After`; 403 with nothing remaining), success, or neutral. Not every 429 is
//!    a throttle: the classifier sees the first [`BODY_LIMIT`] bytes of a 429 with a JSON body,
//!    and one that says the account is out of credit (OpenAI's `insufficient_quota`) is neutral,
//!    not retried, and handed on marked [`QuotaExhausted`] (see [`PacerResponseExt`]). With
//!    [`LimiterConfig::query_cost`] on, every JSON body is read (up to
//!    [`QUERY_COST_BODY_LIMIT`]) for a GraphQL query's cost ([`QueryCost`], Shopify's
//!    `extensions.cost`): its bucket joins the rate-limit state, and a query refused as
//!    `THROTTLED` is a throttle even with a 200.
//! 6. **Feed back.** The rate-limit headers update the endpoint's state; a throttle cuts the rate
//!    (once per `DecreaseCooldown`, never for a request sent before the last cut) and pauses for
//!    `Retry-After`; a success lets the controller raise the rate.
//! 7. **Retry** a throttled request while attempts < `MaxAttempts` (4), its body can be cloned
//!    and the server did not say `x-should-retry: false` (nor the classifier [`BodyVerdict::NoRetry`]):
//!    back to step 3, so each attempt waits for its units again. Otherwise, and after the last
//!    attempt, the caller gets the server's last response unchanged. A request with a streaming
//!    body is never sent twice.
//! 8. **Say what happened.** The response handed on carries a [`Paced`] in its extensions
//!    ([`PacerResponseExt::paced`]): the time waited over all attempts, the attempts, the
//!    limiter, the endpoint key and the rate at the last send; a refusal carries the same
//!    ([`Rejection::paced`]).
//!
//! # With other retries
//!
//! Put Pacer **after** (inside) `reqwest-retry`'s `RetryTransientMiddleware`, so every attempt it
//! makes waits for its units and feeds the rate; or, simpler, let Pacer retry throttles itself and
//! configure `reqwest-retry` to not treat 429 as transient, so a throttle is not retried twice
//! over. reqwest's own retries (0.13's `ClientBuilder::retry`, which by default re-sends requests
//! the server refused at the protocol level) happen below every middleware, so Pacer does not see
//! them: use `reqwest::retry::never()` when the count of requests must be exact.
//!
//! # Observability
//!
//! Each request runs in a `pacer` span with the fields `limiter`, `endpoint` (the key, never a
//! query string or a header), `method` and `units`; structured events mark a change of rate
//! (`rate`, `previous_rate`, `reason`), a pause, and a refusal (`reason`, `needed_wait_ms`).
//! With the `metrics` feature (on by default) the counters, gauges and histogram below go
//! through the `metrics` facade, labelled with the limiter's name only (and a refusal's
//! `reason`), so no URL can multiply the series. The handles are kept with the recorder they were
//! registered with and registered again when another recorder is in force, so a recorder
//! installed after the first request sees what follows. [`PacerMiddleware::state`] reads a
//! limiter's state from code.
//!
//! # Metrics
//!
//! | name | kind | what |
//! |---|---|---|
//! | `pacer_units_total` | counter | units of the requests sent |
//! | `pacer_throttled_total` | counter | responses classified as throttled |
//! | `pacer_rejected_total` | counter | requests refused before sending, label `reason` |
//! | `pacer_wait_seconds` | histogram | how long each attempt waited before it was sent |
//! | `pacer_rate` | gauge | the sum of the endpoints' rates, units per minute for this process |
//! | `pacer_waiting_requests` | gauge | requests waiting now (for a stop, a delay or units) |

mod body;
mod config;
mod cost;
mod error;
mod extensions;
mod flow;
mod key;
mod middleware;
mod named;
mod window;

pub use config::{LimiterConfig, TokenEstimator};
pub use cost::{CostEstimator, CostFn, UnitCost};
pub use error::{PacerError, PacerErrorExt, Rejection};
pub use extensions::{PacerResponseExt, UseLimiter};
pub use key::{EndpointKeyExtractor, KeyFn};
pub use middleware::{
    BuildError, DEFAULT_LIMITER, EndpointState, PacerBuilder, PacerMiddleware, UpdateError,
};
pub use pacer_core::DEFAULT_FRAMES;
pub use pacer_core::StoreFailure;
pub use pacer_core::{
    BODY_LIMIT, BodyVerdict, ClassifierStatuses, DefaultClassifier, QUERY_COST_BODY_LIMIT,
    QueryCost, RefusalClass, RejectReason, ThrottleClassifier, WaitCause, insufficient_quota,
};
pub use pacer_core::{ControllerFactory, KeyMode, UnknownKeyMode};
pub use pacer_core::{
    Cost, EndpointKey, MaxConcurrent, MaxWait, OutputTokens, TokenCost, TokenUsage, TotalTimeout,
};
pub use pacer_core::{DeclaredDialect, FieldGrammar, TimeUnit};
pub use pacer_core::{INTERACTIVE_PER_BATCH, Priority};
pub use pacer_core::{LimiterKind, ServerModel};
pub use pacer_core::{Paced, QuotaExhausted};
pub use pacer_core::{UnitBudget, UnitBudgets};
pub use window::{StrictWindow, WindowKeyFn};

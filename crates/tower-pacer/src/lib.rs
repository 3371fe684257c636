//! Pacer as a [tower] [`Layer`](tower_layer::Layer): client-side rate limiting for any tower
//! HTTP client (a `hyper-util` client, a tonic channel with the `tonic` feature).
//!
//! [`PacerLayer`] wraps a service of `http::Request<B>` → `http::Response<R>` (making it one
//! of `http::Request<B>` → `http::Response<`[`PacerBody`]`<R>>`) and drives the same
//! request engine as the `reqwest` middleware (`reqwest-pacer`), [`pacer_core::Engine`], with the
//! same options ([`LimiterOptions`]) and rules ([`Rules`]). Per endpoint key it:
//!
//! 1. waits for what the server ordered (a `Retry-After`, a spent quota until its reset) and the
//!    proactive delay its rate-limit fields call for, then for the adaptive limiter's units, all
//!    within one `MaxWait`, else refuses the request with a [`Rejection`] (the middleware's: its
//!    [`RejectReason`], the limiter, the endpoint and what was done until then);
//! 2. sends it, reads the response ([`Rules::read_with_cost`]: throttle or not, the server's
//!    numbers; a 429's or 403's JSON body for the classifier and, with `QueryCost`, a GraphQL query's
//!    cost: [`Rules::body_limit`]), and adapts the rate ([`pacer_core::Engine::after`]);
//! 3. sends a throttled request again, up to `MaxAttempts` in all, when its body can be sent
//!    again ([`ReplayBody`]) and the server did not say not to (`x-should-retry: false`).
//!
//! A request that cannot get through its wait after a throttle gets the server's last answer,
//! as with the middleware.
//!
//! A request may choose for itself in its extensions, as with the middleware: [`Cost`],
//! [`EndpointKey`], [`MaxWait`], [`Priority`], [`TokenCost`] (for the quotas in tokens the
//! server reports, OpenAI's and Anthropic's), [`TotalTimeout`] (the most the whole request
//! may take: a send still running then fails with [`TimedOut`]) and [`MaxConcurrent`] (send
//! only while fewer requests of its endpoint are in flight; the limiter's `MaxConcurrent`
//! applies too, and a slot is held from the grant until the response has been read or the
//! send failed, given back if the request's future is dropped before).
//!
//! Strict windows ([`pacer_core::WindowLimit`], [`PacerLayerBuilder::window`]) are waited for
//! as the middleware waits for them, keyed by the endpoint key or, with
//! [`PacerLayerBuilder::window_keyed_by`], by what a function derives from the request.
//!
//! Each response handed on carries a [`Paced`] in its extensions (the waits of all attempts,
//! the attempts, the rate at the last send), and one whose body says the account is out of
//! credit a [`QuotaExhausted`], as with the middleware.
//!
//! With the `metrics` feature (on by default) it records the middleware's metrics, labelled
//! with the layer's name ([`PacerLayerBuilder::name`]).
//!
//! What the middleware does and this layer does not: named limiters (one layer is one limiter;
//! stack a layer per API).
//!
//! # Example
//!
//! A `hyper-util` client behind the layer (`cargo run -p tower-pacer --example hyper_client`
//! runs it against a loopback server):
//!
//! ```no_run
//! use http_body_util::Full;
//! use hyper_util::client::legacy::Client;
//! use hyper_util::rt::TokioExecutor;
//! use pacer_core::LimiterOptions;
//! use tower_pacer::PacerLayer;
//! use tower_layer::Layer;
//! use tower_service::Service;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let client = Client::builder(TokioExecutor::new()).build_http::<Full<bytes::Bytes>>();
//! let mut paced = PacerLayer::new(LimiterOptions::default())?.layer(client);
//! let request = http::Request::get("http://127.0.0.1:8080/items")
//!     .body(Full::default())?;
//! let response = paced.call(request).await?;
//! println!("{}", response.status());
//! # Ok(())
//! # }
//! ```
//!
//! [tower]: https://docs.rs/tower
#![cfg_attr(docsrs, feature(doc_cfg))]

mod body;
mod error;
mod layer;
mod service;

pub use body::ReplayBody;
#[cfg(feature = "config")]
pub use error::SettingsError;
pub use error::TimedOut;
pub use layer::{PacerLayer, PacerLayerBuilder};
pub use pacer_core::PacerBody;
pub use service::{PacerFuture, PacerService};

pub use pacer_core::{
    Cost, EndpointKey, KeyMode, LimiterOptions, MaxConcurrent, MaxWait, Paced, Priority,
    QUERY_COST_BODY_LIMIT, QueryCost, QuotaExhausted, RejectReason, Rejection, Rules, TokenCost,
    TotalTimeout, WaitCause,
};
pub use pacer_core::{LimiterKind, ServerModel};
pub use pacer_core::{OutputTokens, TokenUsage, UnitBudget, UnitBudgets};

/// The error type of a [`PacerService`], boxed: a [`Rejection`] (a request refused before it
/// was sent: downcast to it), a [`pacer_core::Refusal`] (a strict window's store failed), a
/// [`TimedOut`] (its [`TotalTimeout`] ran out during the send), or the inner service's error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The guide's examples (`docs/tower.md`), compiled as doctests (one needs `config`, one
/// `tonic`).
#[doc = include_str!("../../../docs/tower.md")]
#[cfg(all(doctest, feature = "config", feature = "tonic"))]
pub struct GuideDoctests;

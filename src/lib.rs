//! Pacer: client-side rate limiting for `reqwest` that finds the rate an API allows and stays
//! just under it, honours `Retry-After`, paces to the rate-limit headers servers send, and
//! enforces strict windows.
//!
//! This facade re-exports the workspace crates behind features:
//!
//! | feature | default | what |
//! |---|---|---|
//! | `reqwest` | yes | [`PacerMiddleware`], the `reqwest-middleware` middleware (crate `reqwest-pacer`) |
//! | `metrics` | yes | metrics through the `metrics` facade |
//! | `redis` | no | strict windows and fleets shared through Redis (or a Redis Cluster): [`redis::RedisWindowStore`], [`redis::RedisFleetStore`] (crate `pacer-redis`) |
//! | `config` | no | limiters from JSON/TOML files and environment overrides, a reload watcher: [`from_config_file`] (crate `pacer-config`) |
//! | `test-util` | no | [`ManualClock`] for deterministic tests |
//!
//! The algorithms (crate `pacer-core`) are always there: [`Limiter`], [`Aimd`], [`Cubic`],
//! [`RateLimitInfo`], the throttling algorithms. The top level re-exports what a user needs;
//! the rest of each crate is under [`core`] and [`middleware`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use pacer::PacerMiddleware;
//! use reqwest_middleware::ClientBuilder;
//!
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(PacerMiddleware::default())
//!     .build();
//! let orders = client.get("https://api.example.com/orders").send().await?;
//! # let _ = orders; Ok(()) }
//! ```
//!
//! With the `config` feature, the limiters come from a file, such as an existing .NET
//! `appsettings.json` section `AdaptiveRateLimiting:Limiters:<name>` (see
//! `docs/configuration.md`):
//!
//! ```no_run
//! # #[cfg(feature = "config")]
//! # fn run() -> Result<(), pacer::ConfigError> {
//! let pacer = pacer::from_config_file("config/appsettings.json")?;
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(pacer)
//!     .build();
//! # let _ = client; Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

/// Everything in `pacer-core`, the algorithms free of HTTP: the limiter's internals
/// ([`core::LimiterCore`]), endpoint state, unit budgets, the window conformance suite.
pub use pacer_core as core;

// The limiter and its options.
pub use pacer_core::{
    ControllerKind, Feedback, INTERACTIVE_PER_BATCH, InvalidOption, InvalidOptions, Limiter,
    LimiterBuilder, LimiterOptions, LimiterSnapshot, LimiterStats, Permit, Priority, RateChange,
    RateChangeReason, ServerQuota, Signal, UnknownController,
};
// Rate controllers, and the contracts for one of your own: events in and its own state
// (`Controller`), or the whole state in (`RateController`, run in a `PureController`).
pub use pacer_core::{
    Aimd, AimdOptions, Controller, ControllerContext, ControllerFactory, Cubic, CubicOptions,
    PacerController, PacerControllerOptions, PureController, RateController, RateControllerState,
};
// What the limiter learned of the server's own limiter.
pub use pacer_core::{LimiterKind, ServerModel};
// Budgets in tokens: what a request reserves, what its answer reports it used.
pub use pacer_core::{TokenUsage, UnitBudget, UnitBudgets};
// Time.
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub use pacer_core::ManualClock;
pub use pacer_core::{Clock, RealClock, Timestamp};
// Rate-limit headers and the throttling algorithms that turn them into a delay.
pub use pacer_core::{
    AdaptiveDelay, Composite, DeclaredDialect, DeclaredDialectBuilder, Dialect, FieldGrammar,
    FixedThreshold, Global, Pacing, Percentage, Policy, QueryCost, QuotaUnit, RateLimitInfo,
    RateLimitStateProvider, ServerStop, ServerStopPolicy, StopCause, ThrottlingAlgorithm,
    ThrottlingConfigError, ThrottlingContext, ThrottlingResult, TimeUnit,
};
// Strict windows, and the contract for a store of your own.
pub use pacer_core::{
    BoxError, EtaOutcome, EventsOutcome, FallbackWindowStore, FillOutcome, GeometryError,
    MemoryWindowStore, TryOutcome, WindowError, WindowFuture, WindowGeometry, WindowStore,
    WindowTime,
};
// What was learnt, kept across a restart.
pub use pacer_core::{ControllerMemory, EndpointMemory, LimiterMemory, PacerMemory, Recalled};
// Fleets: one learned rate for many processes, and the contract for a store of your own.
pub use pacer_core::{
    CommitReply, CommitRequest, FleetError, FleetFuture, FleetOptions, FleetStore, Gauges,
    MemoryFleetStore, NewsFuture, SyncReply, SyncRequest, TickData,
};

/// Everything in `reqwest-pacer`, the middleware: besides what the top level re-exports, the
/// builders' helper types ([`middleware::KeyFn`], [`middleware::CostFn`], …) and constants.
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use reqwest_pacer as middleware;

// The middleware, its builder and a limiter's configuration.
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use reqwest_pacer::{
    BuildError, DEFAULT_LIMITER, EndpointState, LimiterConfig, PacerBuilder, PacerMiddleware,
    UpdateError,
};
// Per-request extensions, and what comes back.
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use reqwest_pacer::{
    Cost, EndpointKey, MaxConcurrent, MaxWait, OutputTokens, Paced, PacerResponseExt,
    QuotaExhausted, TokenCost, TotalTimeout, UseLimiter,
};
// Errors and refusals.
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use reqwest_pacer::{PacerError, PacerErrorExt, RejectReason, Rejection, WaitCause};
// Endpoint keys, costs, classifiers, strict windows.
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use reqwest_pacer::{
    BodyVerdict, ClassifierStatuses, CostEstimator, DefaultClassifier, EndpointKeyExtractor,
    KeyMode, RefusalClass, StoreFailure, StrictWindow, ThrottleClassifier, TokenEstimator,
    UnitCost, insufficient_quota,
};

#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use pacer_redis as redis;

#[cfg(feature = "config")]
#[cfg_attr(docsrs, doc(cfg(feature = "config")))]
pub use pacer_config::{
    self as config, ConfigError, ConfigLoader, ConfigWatcher, FleetSettings, LimiterSettings,
    PacerSettings, Problem, ProblemKind, Problems, Reload, ThrottlingSettings, WatchHandle,
    from_config_file, from_config_file_with_env, from_config_section, limiter_options_from_file,
    watch,
};

/// The README's examples, compiled as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The recipes' examples, compiled as doctests.
#[doc = include_str!("../docs/recipes.md")]
#[cfg(doctest)]
pub struct RecipesDoctests;

/// The restarts guide's examples, compiled as doctests.
#[doc = include_str!("../docs/restarts.md")]
#[cfg(doctest)]
pub struct RestartsGuideDoctests;

/// The guide to `MaxConcurrent`'s examples, compiled as doctests.
#[doc = include_str!("../docs/concurrency.md")]
#[cfg(doctest)]
pub struct ConcurrencyGuideDoctests;

/// The server model guide's examples, compiled as doctests.
#[doc = include_str!("../docs/server-model.md")]
#[cfg(all(doctest, feature = "reqwest"))]
pub struct ServerModelGuideDoctests;

/// The model API guide's examples, compiled as doctests.
#[doc = include_str!("../docs/llm.md")]
#[cfg(all(doctest, feature = "reqwest"))]
pub struct LlmGuideDoctests;

/// The fleet guide's examples, compiled as doctests.
#[doc = include_str!("../docs/fleet.md")]
#[cfg(doctest)]
pub struct FleetGuideDoctests;

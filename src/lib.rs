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
//! | `redis` | no | strict windows shared through Redis: [`redis::RedisWindowStore`] (crate `pacer-redis`) |
//! | `config` | no | limiters from JSON/TOML files and environment overrides, a reload watcher: [`from_config_file`] (crate `pacer-config`) |
//! | `test-util` | no | [`ManualClock`] for deterministic tests |
//!
//! The algorithms (crate `pacer-core`) are always there: [`Limiter`], [`Aimd`], [`Cubic`],
//! [`RateLimitInfo`], the throttling algorithms.
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

pub use pacer_core as core;
pub use pacer_core::*;

#[cfg(feature = "reqwest")]
pub use reqwest_pacer::{self as middleware, *};

#[cfg(feature = "redis")]
pub use pacer_redis as redis;

#[cfg(feature = "config")]
pub use pacer_config::{
    self as config, ConfigError, ConfigLoader, ConfigWatcher, LimiterSettings, PacerSettings,
    Problem, ProblemKind, Problems, Reload, ThrottlingSettings, WatchHandle, from_config_file,
    from_config_file_with_env, from_config_section, limiter_options_from_file, watch,
};

/// The README's examples, compiled as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

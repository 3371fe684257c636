//! `pacer-sim`: Pacer's real limiter against a model API with a hidden quota, on virtual time.
//!
//! The simulator runs the very `pacer_core::LimiterCore` that the middleware runs, one per client
//! instance, against a model API whose quota is a sliding 60 s window of units that a story
//! changes over time. It is deterministic per seed: no clock is read, no thread races, no hash
//! order leaks into the output, so the same seed prints the same table, byte for byte. Every mode
//! sees the same requests at the same times.
//!
//! ```
//! use pacer_sim::{SimOptions, Story, compare, mode_by_name};
//!
//! let options = SimOptions { minutes: 2, ..SimOptions::default() };
//! let stories = [Story::by_name("free-run").unwrap()];
//! let modes = [mode_by_name("aimd").unwrap()];
//! let comparison = compare(&options, &stories, &modes).unwrap();
//! let row = &comparison.rows[0];
//! assert_eq!((row.story.as_str(), row.mode.as_str()), ("free-run", "aimd"));
//! assert!(row.metrics.throughput > 0.0);
//! ```
//!
//! `pacer-sim serve` puts the same model API behind a real HTTP server on the real clock
//! ([`serve`]), and `pacer-sim live` drives real reqwest clients with Pacer's middleware against
//! it or any URL ([`live`]), printing the same columns; [`Speed`] runs both faster than real time.
//!
//! `docs/simulation.md` describes the model and every assumption in it.

mod arg_values;
pub mod cli;
mod compare;
mod configured;
mod engine;
mod error;
pub mod live;
pub mod llm;
pub mod metrics;
pub mod model;
mod modes;
mod options;
pub mod plot;
pub mod report;
mod runtime;
pub mod serve;
mod speed;

pub use compare::{Comparison, Row, compare};
pub use configured::ConfiguredLimiter;
pub use engine::{RunResult, run};
pub use error::SimError;
pub use model::{Arrivals, COSTS_NAMES, Costs, SHAPE_NAMES, ServerShape, Story};
pub use modes::{
    Answered, Client, ClientSetup, ExchangeClient, FleetClient, FleetMode, HeadersMode,
    LIBRARY_DEFAULT_MODES, LimiterClient, LimiterMode, MODE_NAMES, Mode, ModeError,
    NAMED_ONLY_MODES, NO_RETRY_AFTER_DELAY, NoLimiter, OptionsAdjust, Response, STORE_LATENCY,
    Settled, StoreAnswer, WindowsFn, default_modes, header_map, mode_by_name, server_quota,
    signal_of,
};
pub use options::{
    SIM_INITIAL_UNITS_PER_MINUTE, SIM_MAX_UNITS_PER_MINUTE, SIM_MAX_WAIT, SIM_QUEUE_LIMIT,
    SimOptions, sim_limiter_defaults,
};
pub use speed::{MAX_SPEED, Speed};

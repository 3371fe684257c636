//! Proactive throttling: from an endpoint's rate-limit state to a delay before the next request.
//!
//! The server-ordered stop ([`ServerStopPolicy`]) is applied first and cannot be overridden; the
//! pluggable [`ThrottlingAlgorithm`] decides otherwise. Algorithms are pure: the context carries
//! the state already adjusted for elapsed time, so nothing here reads a clock.

mod adaptive_delay;
mod algorithm;
mod composite;
mod context;
mod error;
mod fixed_threshold;
mod global;
mod pacing;
mod percentage;
mod provider;
mod result;
mod server_stop;

pub use adaptive_delay::{AdaptiveDelay, AdaptiveDelayBuilder};
pub use algorithm::ThrottlingAlgorithm;
pub use composite::{Composite, CompositeBuilder};
pub use context::ThrottlingContext;
pub use error::ThrottlingConfigError;
pub use fixed_threshold::FixedThreshold;
pub use global::{Global, GlobalBuilder};
pub use pacing::Pacing;
pub use percentage::{Percentage, PercentageBuilder};
pub use provider::RateLimitStateProvider;
pub use result::ThrottlingResult;
pub use server_stop::{ServerStop, ServerStopPolicy, StopCause};

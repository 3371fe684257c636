//! Why a request failed in the layer, and why a layer cannot be made from a configuration.

use pacer_core::Paced;
use std::time::Duration;

/// A request's [`TotalTimeout`](crate::TotalTimeout) ran out while it was being sent: the send
/// was abandoned. (One that would run out while waiting is refused before it is sent, with
/// [`RejectReason::PastTimeout`](crate::RejectReason::PastTimeout).) The middleware's
/// `PacerError::TimedOut`, with the same fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "request to {} through limiter {:?} timed out: TotalTimeout of {:.3} s",
    .paced.endpoint(), .paced.limiter(), .timeout.as_secs_f64()
)]
#[non_exhaustive]
pub struct TimedOut {
    /// What the layer did with the request until then (the attempt that timed out counted).
    pub paced: Paced,
    /// The request's `TotalTimeout`.
    pub timeout: Duration,
}

/// A layer cannot be made from a limiter's settings ([`PacerLayer::from_settings`]).
///
/// [`PacerLayer::from_settings`]: crate::PacerLayer::from_settings
#[cfg(feature = "config")]
#[cfg_attr(docsrs, doc(cfg(feature = "config")))]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A strict window cannot be built: refused rather than left out.
    #[error("the window {name:?} cannot be built: {message}")]
    Window {
        /// The window's name.
        name: String,
        /// Why.
        message: String,
    },
    /// The fleet cannot be built (a Redis URL or key prefix that loading would have refused,
    /// or pacer-config without its `redis` feature): refused rather than left out.
    #[error("the fleet cannot be built: {0}")]
    Fleet(String),
    /// The settings are invalid.
    #[error(transparent)]
    Config(#[from] pacer_config::ConfigError),
}

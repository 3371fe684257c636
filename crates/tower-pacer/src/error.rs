//! Why a request was refused before it was sent.

use pacer_core::{Rejected, WaitCause};
use std::time::Duration;

/// A request refused before it was sent: it would have waited longer than it may, or the
/// adaptive limiter's queue refused it. A [`PacerService`](crate::PacerService)'s error is this
/// (downcast the [`BoxError`](crate::BoxError)) or the inner service's.
///
/// ```
/// use pacer_core::WaitCause;
/// use std::time::Duration;
/// use tower_pacer::Refused;
///
/// let refused = Refused::WaitTooLong {
///     cause: WaitCause::ServerStop,
///     needed: Duration::from_secs(90),
///     max_wait: Duration::from_secs(30),
/// };
/// let boxed: tower_pacer::BoxError = Box::new(refused.clone());
/// assert_eq!(boxed.downcast_ref::<Refused>(), Some(&refused));
/// assert_eq!(refused.needed_wait(), Some(Duration::from_secs(90)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// Waiting for `cause` would have taken `needed` in all, more than `MaxWait`.
    #[error(
        "refused: waiting for {} would take {needed:?}, longer than the {max_wait:?} it may wait",
        .cause.as_str()
    )]
    WaitTooLong {
        /// What it would have waited for.
        cause: WaitCause,
        /// The whole wait it would have needed, from the time it came in.
        needed: Duration,
        /// `MaxWait`.
        max_wait: Duration,
    },
    /// The adaptive limiter refused it (its queue is full, or the request costs more than it
    /// can ever give).
    #[error(transparent)]
    Limiter(Rejected),
}

impl Refused {
    /// The wait the request would have needed, when that is why it was refused.
    #[must_use]
    pub fn needed_wait(&self) -> Option<Duration> {
        match self {
            Refused::WaitTooLong { needed, .. } => Some(*needed),
            Refused::Limiter(r) => r.needed_wait(),
        }
    }

    /// What held it back.
    #[must_use]
    pub fn cause(&self) -> WaitCause {
        match self {
            Refused::WaitTooLong { cause, .. } => *cause,
            Refused::Limiter(_) => WaitCause::Queue,
        }
    }
}

/// A layer cannot be made from a limiter's settings ([`PacerLayer::from_settings`]).
///
/// [`PacerLayer::from_settings`]: crate::PacerLayer::from_settings
#[cfg(feature = "config")]
#[cfg_attr(docsrs, doc(cfg(feature = "config")))]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The limiter has strict windows, which the layer does not have yet: refused rather than
    /// left out.
    #[error("tower-pacer has no strict windows yet; the limiter configures {0:?}")]
    Windows(Vec<String>),
    /// The settings are invalid.
    #[error(transparent)]
    Config(#[from] pacer_config::ConfigError),
}

//! What a limiter does with a strict window whose store cannot be reached.

/// What a limiter does with a strict window when its store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StoreFailure {
    /// Refuse the request with an error naming the window (the middleware's `PacerError::WindowStore`): the
    /// limit is never exceeded, and nothing is sent while the store is down — nor for one window
    /// length after the last failure, because a store that restarted may have lost the events
    /// of the window that spans the outage.
    FailClosed,
    /// Send without the window while the store is down.
    FailOpen,
    /// Use an in-memory window in this process with the limit divided by the instance count, so
    /// the processes together stay near the limit. The default. Logged once per outage.
    #[default]
    Fallback,
}

impl StoreFailure {
    /// The name in configuration: `FailClosed`, `FailOpen`, `Fallback`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StoreFailure::FailClosed => "FailClosed",
            StoreFailure::FailOpen => "FailOpen",
            StoreFailure::Fallback => "Fallback",
        }
    }
}

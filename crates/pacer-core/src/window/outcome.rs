//! The results of window operations. Each carries the store's `now`, so the caller computes a
//! wait as `eta − now` on one clock.

use super::WindowTime;
use std::time::Duration;

/// The result of [`WindowStore::try_take`](super::WindowStore::try_take): all or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TryOutcome {
    /// Events recorded: the whole count, or 0.
    pub taken: u64,
    /// When the count fits: `now` if it was taken, else the first moment a retry can succeed
    /// (if nothing else is recorded meanwhile). Never earlier than the exact sliding window
    /// would allow.
    pub eta: WindowTime,
    /// The store's clock when it decided.
    pub now: WindowTime,
}

impl TryOutcome {
    /// True when the events were recorded (a count of 0 is always "recorded").
    #[must_use]
    pub fn is_acquired(&self) -> bool {
        self.eta <= self.now
    }

    /// How long to wait before retrying: `eta − now`, zero when acquired.
    #[must_use]
    pub fn wait(&self) -> Duration {
        self.eta.saturating_duration_since(self.now)
    }
}

/// The result of [`WindowStore::fill`](super::WindowStore::fill): the largest part that fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillOutcome {
    /// Events recorded, between 0 and the count.
    pub taken: u64,
    /// When the rest (count − taken) fits: `now` if nothing is left.
    pub eta: WindowTime,
    /// The store's clock when it decided.
    pub now: WindowTime,
}

impl FillOutcome {
    /// How long until the rest fits: `eta − now`.
    #[must_use]
    pub fn wait(&self) -> Duration {
        self.eta.saturating_duration_since(self.now)
    }
}

/// The result of [`WindowStore::events`](super::WindowStore::events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsOutcome {
    /// Events in the window after the call.
    pub total: u64,
    /// Events that left the window since the key was last written (0 when the key had
    /// expired or never existed).
    pub expired: u64,
    /// The store's clock.
    pub now: WindowTime,
}

/// The result of [`WindowStore::eta`](super::WindowStore::eta).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtaOutcome {
    /// When the count would fit: `now` if it fits now, `None` if never (count above limit).
    pub eta: Option<WindowTime>,
    /// The store's clock.
    pub now: WindowTime,
}

impl EtaOutcome {
    /// How long until the count fits, `None` if never.
    #[must_use]
    pub fn wait(&self) -> Option<Duration> {
        self.eta.map(|eta| eta.saturating_duration_since(self.now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_eta_minus_now() {
        let now = WindowTime::from_micros(1_000);
        let later = WindowTime::from_micros(3_500);
        let denied = TryOutcome {
            taken: 0,
            eta: later,
            now,
        };
        assert!(!denied.is_acquired());
        assert_eq!(denied.wait(), Duration::from_micros(2_500));
        let taken = TryOutcome {
            taken: 2,
            eta: now,
            now,
        };
        assert!(taken.is_acquired());
        assert_eq!(taken.wait(), Duration::ZERO);
        let fill = FillOutcome {
            taken: 1,
            eta: later,
            now,
        };
        assert_eq!(fill.wait(), Duration::from_micros(2_500));
        assert_eq!(EtaOutcome { eta: None, now }.wait(), None);
        assert_eq!(
            EtaOutcome {
                eta: Some(now),
                now
            }
            .wait(),
            Some(Duration::ZERO)
        );
    }
}

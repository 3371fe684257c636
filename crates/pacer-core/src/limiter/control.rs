//! The bookkeeping the controller contract promises around a rate: when the last cut was and
//! the rate before it, when the rate last rose, whether a request waited, how many cuts, and the
//! unlimited start. One process's limiter keeps it, and so does a fleet's.

use crate::{ControllerContext, Timestamp};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The contract's bookkeeping (the .NET adaptive limiter's `RateControllerState` fields): a cut
/// only after `DecreaseCooldown` and for a request sent after the last one; the increase clock
/// restarted by a throttle and by a change on success, and not running during a pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Control {
    created_at: Timestamp,
    last_decrease_at: Option<Timestamp>,
    rate_before_last_decrease: f64,
    last_increase_at: Timestamp,
    /// True if a request had to wait for units since the last change.
    pub(crate) waited: bool,
    /// How many cuts so far.
    pub(crate) decreases: u64,
    /// False while `InitialUnitsPerMinute` is unset and no throttle signal has come yet: the
    /// rate is then the maximum and nothing is held back.
    pub(crate) limiting: bool,
    /// The initial rate for the whole budget: `InitialUnitsPerMinute`, or the measured send rate
    /// at the first throttle signal (the maximum before it).
    pub(crate) initial_whole: f64,
}

impl Control {
    /// Bookkeeping from `now`, at `rate` (the rate "before the last cut" until the first one).
    pub(crate) fn new(rate: f64, limiting: bool, initial_whole: f64, now: Timestamp) -> Self {
        Control {
            created_at: now,
            last_decrease_at: None,
            rate_before_last_decrease: rate,
            last_increase_at: now,
            waited: false,
            decreases: 0,
            limiting,
            initial_whole,
        }
    }

    /// When the limiter was made.
    pub(crate) fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// Whether a throttle at `now` of a request sent at `sent_at` cuts: the first one does;
    /// later ones once `cooldown` has passed since the last cut, for a request sent after it.
    pub(crate) fn may_cut(&self, sent_at: Timestamp, now: Timestamp, cooldown: Duration) -> bool {
        match self.last_decrease_at {
            None => true,
            Some(cut) => now - cut >= cooldown && sent_at >= cut,
        }
    }

    /// Whether a request sent at `sent_at` left after the last cut (or there was none).
    pub(crate) fn sent_after_cut(&self, sent_at: Timestamp) -> bool {
        self.last_decrease_at.is_none_or(|cut| sent_at >= cut)
    }

    /// A cut at `now` from `rate`.
    pub(crate) fn cut(&mut self, rate: f64, now: Timestamp) {
        self.rate_before_last_decrease = rate;
        self.last_decrease_at = Some(now);
        self.decreases += 1;
        self.waited = false;
    }

    /// The controller changed the rate on a success at `now`.
    pub(crate) fn changed(&mut self, now: Timestamp) {
        self.last_increase_at = now;
        self.waited = false;
    }

    /// Restarts the increase clock at `now` (a throttle, the end of following the server).
    pub(crate) fn restart_increase_clock(&mut self, now: Timestamp) {
        self.last_increase_at = now;
    }

    /// The unlimited start ends at `now`: the rate starts at `rate`, `instances` sharing it.
    /// False if it had ended already.
    pub(crate) fn start(&mut self, rate: f64, instances: u32, now: Timestamp) -> bool {
        if self.limiting {
            return false;
        }
        self.limiting = true;
        self.initial_whole = rate * f64::from(instances.max(1));
        self.rate_before_last_decrease = rate;
        self.last_increase_at = now;
        true
    }

    /// A context at `now` for a controller of a limiter at `rate` within `[min, max]`, with its
    /// share of the initial rate and its pause: the contract's fields filled, the rest as
    /// [`ControllerContext::new`] leaves them.
    pub(crate) fn context(
        &self,
        now: Timestamp,
        (rate, min, max): (f64, f64, f64),
        initial_rate: f64,
        pause_until: Timestamp,
    ) -> ControllerContext {
        let decreased_at = self.last_decrease_at.unwrap_or(self.created_at);
        // The increase clock does not run during a pause: after one it counts from its end.
        let increase_clock = if pause_until <= now {
            self.last_increase_at.max(pause_until)
        } else {
            now
        };
        let mut cx = ControllerContext::new(now, rate, min, max);
        cx.initial_rate = initial_rate;
        cx.rate_before_last_decrease = self.rate_before_last_decrease;
        cx.since_last_decrease = now - decreased_at;
        cx.since_last_increase = now - increase_clock;
        cx.waited = self.waited;
        cx.decreases = self.decreases;
        cx.pause_until = pause_until;
        cx
    }
}

/// The rate a cut sets from what the controller proposed: no higher than `rate`, no lower than
/// `min`; a NaN keeps the rate.
pub(crate) fn bounded_cut(proposed: f64, rate: f64, min: f64) -> f64 {
    if proposed.is_nan() {
        rate
    } else {
        proposed.min(rate).max(min)
    }
}

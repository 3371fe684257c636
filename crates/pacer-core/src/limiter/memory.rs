//! What a limiter learnt, in a form that outlives its process: a restarted client starts where
//! it was instead of learning each endpoint's limit again.
//!
//! A limiter's state is full of its process's monotonic clock (meters, pauses, ages), which
//! means nothing to another process. What it *learnt* does not depend on that clock: the rate
//! it held requests to and its controller's estimate of the limit. That, and the wall-clock time
//! it was saved at, is what is kept.

use super::{Changes, LimiterCore, RateChangeReason};
use crate::Timestamp;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a controller learnt of the server ([`Controller::memory`](crate::Controller::memory)):
/// its estimate of the limit and the window the server counts over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ControllerMemory {
    /// Its estimate of the limit, units per minute for the whole budget (every process that
    /// shares it), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
    /// Whether the estimate was measured with the server's window full of this client's units
    /// (the [`PacerController`](crate::PacerController)'s *firm* estimate).
    #[serde(default)]
    pub firm: bool,
    /// The window the server counts over, if the controller learnt one shorter than
    /// `QuotaWindow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Duration>,
}

impl ControllerMemory {
    /// An estimate of `limit` units per minute for the whole budget, `firm` or not.
    #[must_use]
    pub fn new(limit: Option<f64>, firm: bool) -> Self {
        ControllerMemory {
            limit,
            firm,
            window: None,
        }
    }

    /// The same, with the server's window learnt.
    #[must_use]
    pub fn with_window(mut self, window: Option<Duration>) -> Self {
        self.window = window;
        self
    }
}

/// What one endpoint's limiter learnt ([`LimiterCore::memory`](crate::LimiterCore::memory),
/// [`LimiterCore::recall`](crate::LimiterCore::recall)): the rate it held requests to and its
/// controller's memory. Rates are for the whole budget, so a process with another
/// `InstanceCount` takes its own share of them.
///
/// ```
/// use pacer_core::{LimiterCore, LimiterOptions, Timestamp};
///
/// let options = LimiterOptions::default();
/// let mut old = LimiterCore::new(options.clone(), Timestamp::ZERO).unwrap();
/// assert!(old.memory().is_none(), "an unlimited start has learnt nothing");
/// # let _ = &mut old;
/// let json = r#"{"rate":1200.0,"controller":{"limit":1250.0,"firm":true}}"#;
/// let memory: pacer_core::LimiterMemory = serde_json::from_str(json).unwrap();
/// let mut new = LimiterCore::new(options, Timestamp::ZERO).unwrap();
/// let _ = new.recall(&memory, Timestamp::ZERO);
/// assert!(new.is_limiting());
/// assert_eq!(new.rate(), 1200.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LimiterMemory {
    /// The rate it held requests to, units per minute for the whole budget.
    pub rate: f64,
    /// What its controller learnt.
    #[serde(default)]
    pub controller: ControllerMemory,
}

impl LimiterMemory {
    /// A rate of `rate` units per minute for the whole budget, and what the controller learnt.
    #[must_use]
    pub fn new(rate: f64, controller: ControllerMemory) -> Self {
        LimiterMemory { rate, controller }
    }

    /// Whether its numbers can be used: finite and above zero.
    #[must_use]
    pub fn is_sound(&self) -> bool {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        positive(self.rate)
            && self.controller.limit.is_none_or(positive)
            && self.controller.window.is_none_or(|w| !w.is_zero())
    }
}

impl LimiterCore {
    /// What it learnt, to start a limiter of another process from ([`recall`](Self::recall)):
    /// the rate it holds requests to and its controller's memory. `None` before it limits (an
    /// unlimited start has learnt nothing).
    #[must_use]
    pub fn memory(&self) -> Option<LimiterMemory> {
        self.control.limiting.then(|| {
            LimiterMemory::new(
                self.rate * f64::from(self.instance_count.max(1)),
                self.controller.memory(),
            )
        })
    }

    /// Starts from what a limiter of an earlier process learnt ([`memory`](Self::memory)): it
    /// limits from now on, at its share of the remembered rate (within this limiter's
    /// `[MinUnitsPerMinute, MaxUnitsPerMinute]`), and its controller starts from what the
    /// earlier one learnt (an `InitialUnitsPerMinute` too gives way to it). A memory whose
    /// numbers are not finite and positive changes nothing, and so does any memory once a
    /// response came (what this limiter learnt itself stands).
    pub fn recall(&mut self, memory: &LimiterMemory, now: Timestamp) -> Changes {
        let mut changes = Changes::default();
        let heard = self.stats.successes + self.stats.throttled > 0;
        if !memory.is_sound() || heard {
            return changes;
        }
        let rate = self
            .share(memory.rate)
            .clamp(self.min_rate(), self.max_rate());
        changes.started_limiting = !self.control.limiting;
        self.control.start(rate, self.instance_count, now);
        let previous = self.rate;
        self.set_rate(rate, now);
        changes.rate_moved(previous, rate, RateChangeReason::Reconfigured);
        self.controller.recall(&memory.controller, now);
        changes
    }
}

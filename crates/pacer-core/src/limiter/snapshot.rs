//! A limiter's state and counters, as read from code, logs and metrics.

use super::LimiterCore;
use crate::Timestamp;
use std::time::Duration;

/// Counters since the limiter was created.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct LimiterStats {
    /// Requests that got their units (0-unit requests are not counted).
    pub granted_requests: u64,
    /// Units granted.
    pub granted_units: f64,
    /// Requests that had to wait before they got their units.
    pub waited_requests: u64,
    /// The sum of the waits of granted requests.
    pub total_wait: Duration,
    /// Units given back by callers that went away after their grant.
    pub refunded_units: f64,
    /// Requests refused because the queue was full.
    pub rejected_queue_full: u64,
    /// Requests refused because they would have waited too long.
    pub rejected_wait: u64,
    /// Requests refused because they cost more than the limiter could ever repay within
    /// `MaxWait` ([`RejectReason::CostAboveLimit`](crate::RejectReason::CostAboveLimit)).
    pub rejected_cost: u64,
    /// Responses classified as success.
    pub successes: u64,
    /// Responses classified as throttled.
    pub throttled: u64,
}

impl LimiterStats {
    pub(super) fn granted(&mut self, units: f64, waited: Duration) {
        self.granted_requests += 1;
        self.granted_units += units;
        if !waited.is_zero() {
            self.waited_requests += 1;
            self.total_wait += waited;
        }
    }

    pub(super) fn refunded(&mut self, units: f64) {
        self.refunded_units += units;
    }
}

/// A limiter's state at one moment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LimiterSnapshot {
    /// The current rate, in units per minute for this process.
    pub rate: f64,
    /// The current rate times the instance count: this process's estimate for the whole budget.
    pub budget_rate: f64,
    /// This process's minimum and maximum rate.
    pub min_rate: f64,
    /// See [`min_rate`](Self::min_rate).
    pub max_rate: f64,
    /// Units in the bucket (negative while a request larger than the bucket is being paid off).
    pub available_units: f64,
    /// The bucket's capacity: `rate × Burst`.
    pub capacity: f64,
    /// Requests waiting for units.
    pub queue_len: usize,
    /// Units those requests wait for.
    pub queued_units: f64,
    /// Requests granted and not yet answered, failed or given up
    /// ([`LimiterCore::in_flight`](super::LimiterCore::in_flight)): what `MaxConcurrent` caps.
    pub in_flight: u32,
    /// What is left of a Retry-After pause, if one is on.
    pub paused_for: Option<Duration>,
    /// The measured send rate in units per minute, once measured.
    pub measured_send_rate: Option<f64>,
    /// The instance count in force.
    pub instance_count: u32,
    /// How many times the rate was cut.
    pub decreases: u64,
    /// Whether a request waited since the last change of the rate.
    pub waited: bool,
    /// Whether the limiter holds requests back (`Enabled`).
    pub enabled: bool,
    /// Whether the rate limits yet: false while `InitialUnitsPerMinute` is unset and no throttle
    /// signal has come ([`LimiterCore::is_limiting`](super::LimiterCore::is_limiting)).
    pub limiting: bool,
    /// Counters since creation.
    pub stats: LimiterStats,
}

impl LimiterCore {
    /// The limiter's state at `now`.
    #[must_use]
    pub fn snapshot(&self, now: Timestamp) -> LimiterSnapshot {
        LimiterSnapshot {
            rate: self.rate,
            budget_rate: self.rate * f64::from(self.instance_count),
            min_rate: self.min_rate(),
            max_rate: self.max_rate(),
            available_units: self.bucket.level_at(now),
            capacity: self.bucket.capacity(),
            queue_len: self.queue.len(),
            queued_units: self.queue.units(),
            in_flight: self.in_flight,
            paused_for: (self.pause_until > now).then(|| self.pause_until - now),
            measured_send_rate: self.meter.per_minute(),
            instance_count: self.instance_count,
            decreases: self.control.decreases,
            waited: self.control.waited,
            enabled: self.options.enabled,
            limiting: self.control.limiting,
            stats: self.stats,
        }
    }

    /// Counters since creation.
    #[must_use]
    pub fn stats(&self) -> &LimiterStats {
        &self.stats
    }
}

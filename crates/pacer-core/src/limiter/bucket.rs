//! The token bucket: units flow in at the rate, up to `rate × Burst`.

use crate::Timestamp;

/// Tolerance (a millionth of a unit) for float rounding when comparing a level with a need: a waiter whose timer fired
/// at the computed instant must not find itself a hair short and sleep for a nanosecond again.
const EPSILON: f64 = 1e-6;

/// A token bucket in units, refilled lazily from the time of the last update. The level may go
/// below zero: a request larger than the bucket waits until the bucket is full, then takes all of
/// it and leaves a debt that later requests wait out, so the long-run rate holds for any cost.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    level: f64,
    capacity: f64,
    /// Units per second.
    per_sec: f64,
    updated: Timestamp,
}

impl Bucket {
    /// A full bucket at `per_minute`, holding `burst_secs` seconds of units.
    pub(crate) fn new(per_minute: f64, burst_secs: f64, now: Timestamp) -> Self {
        let per_sec = per_minute / 60.0;
        let capacity = per_sec * burst_secs;
        Bucket {
            level: capacity,
            capacity,
            per_sec,
            updated: now,
        }
    }

    /// Stops the flow until `until` (a Retry-After pause): the bucket gives up what it holds (a
    /// debt stays), and nothing flows in before `until`; it fills again at the rate from then on.
    pub(crate) fn hold_until(&mut self, until: Timestamp, now: Timestamp) {
        self.refill(now);
        self.level = self.level.min(0.0);
        if until > self.updated {
            self.updated = until;
        }
    }

    /// Adds what flowed in since the last update (nothing before the end of a hold).
    pub(crate) fn refill(&mut self, now: Timestamp) {
        if now > self.updated {
            let secs = now.secs_since(self.updated);
            self.level = (self.level + secs * self.per_sec).min(self.capacity);
            self.updated = now;
        }
    }

    /// Keeps at most `units` in the bucket (refill first, up to `now`); a debt stays.
    pub(crate) fn cap_level(&mut self, units: f64, now: Timestamp) {
        self.refill(now);
        self.level = self.level.min(units.max(0.0));
    }

    /// Changes the rate and the size (refill first, at the old rate, up to `now`).
    pub(crate) fn set_rate(&mut self, per_minute: f64, burst_secs: f64, now: Timestamp) {
        self.refill(now);
        self.per_sec = per_minute / 60.0;
        self.capacity = self.per_sec * burst_secs;
        self.level = self.level.min(self.capacity);
    }

    /// What a request of `units` needs in the bucket before it may go: all its units, or a full
    /// bucket for a request larger than the bucket.
    pub(crate) fn need(&self, units: f64) -> f64 {
        units.min(self.capacity)
    }

    /// Whether `units` may be taken now (after [`Bucket::refill`]).
    pub(crate) fn has(&self, units: f64) -> bool {
        self.level + EPSILON * self.need(units).max(1.0) >= self.need(units)
    }

    pub(crate) fn take(&mut self, units: f64) {
        self.level -= units;
    }

    /// Gives back units that were taken but not used, up to the capacity.
    pub(crate) fn give_back(&mut self, units: f64) {
        self.level = (self.level + units).min(self.capacity);
    }

    /// The level `at`, without changing anything (the level of the last update if `at` is
    /// before it, as during a hold).
    pub(crate) fn level_at(&self, at: Timestamp) -> f64 {
        let secs = at.secs_since(self.updated);
        (self.level + secs * self.per_sec).min(self.capacity)
    }

    /// When the bucket, starting at `start` and refilling from there, will have given `units`
    /// beyond its level at `start`; `start` itself if it already has them.
    pub(crate) fn time_to_reach(&self, start: Timestamp, units: f64) -> Timestamp {
        let missing = units - self.level_at(start);
        if missing <= EPSILON * units.max(1.0) {
            start
        } else {
            start.saturating_add_secs_f64(missing / self.per_sec)
        }
    }

    #[cfg(test)]
    pub(crate) fn level(&self) -> f64 {
        self.level
    }

    pub(crate) fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Units per second.
    pub(crate) fn per_sec(&self) -> f64 {
        self.per_sec
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn t(ms: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn starts_full_and_refills_at_the_rate_up_to_the_capacity() {
        let mut b = Bucket::new(600.0, 1.0, t(0)); // 10 units/s, holds 10
        assert_eq!(b.level(), 10.0);
        b.take(10.0);
        b.refill(t(500));
        assert!((b.level() - 5.0).abs() < 1e-9);
        b.refill(t(5000));
        assert_eq!(b.level(), 10.0);
    }

    #[test]
    fn a_request_larger_than_the_bucket_waits_for_a_full_bucket_and_leaves_a_debt() {
        let mut b = Bucket::new(600.0, 1.0, t(0));
        assert_eq!(b.need(25.0), 10.0);
        assert!(b.has(25.0));
        b.take(25.0);
        assert_eq!(b.level(), -15.0);
        assert_eq!(b.time_to_reach(t(0), 1.0), t(1600));
    }

    #[test]
    fn a_rate_change_refills_at_the_old_rate_first() {
        let mut b = Bucket::new(600.0, 1.0, t(0));
        b.take(10.0);
        b.set_rate(60.0, 1.0, t(100)); // +1 unit at the old rate, then capacity 1
        assert!((b.level() - 1.0).abs() < 1e-9);
        assert_eq!(b.capacity(), 1.0);
    }
}

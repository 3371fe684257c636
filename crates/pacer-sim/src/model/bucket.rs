//! The `token-bucket` and `leaky-bucket` shapes' memory: a bucket that drains continuously.
//!
//! Seen as a meter, a leaky bucket and a token bucket are one algorithm: a leaky bucket's level
//! is the token bucket's missing tokens. The level here is held in units × window nanoseconds,
//! so that a bucket of `limit` units draining `limit` units per window loses exactly `limit`
//! per nanosecond: integer arithmetic, exact to the nanosecond, as the sliding window is.
//!
//! When the limit changes (a noisy neighbour, a quota cut), the level is kept: a bucket fuller
//! than its new size refuses until it has drained below it, at the new pace. The pace applied to
//! the time since the last request is the limit at the request (the stories change it in steps,
//! and requests come every few milliseconds).

use super::nanos;
use pacer_core::Timestamp;
use std::time::Duration;

/// A bucket of `limit` units that drains `limit` units every `span`.
#[derive(Debug, Clone)]
pub struct Bucket {
    span: Duration,
    /// Units in the bucket × `span` in nanoseconds.
    level: u128,
    /// When `level` was last drained, nanoseconds since time 0.
    at: u128,
}

fn after(now: Timestamp, nanos: u128) -> Timestamp {
    now + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

impl Bucket {
    /// An empty bucket (a full one, counted in tokens) that drains over `span`.
    #[must_use]
    pub fn new(span: Duration) -> Self {
        Bucket {
            span,
            level: 0,
            at: 0,
        }
    }

    /// The time the bucket takes to drain from full.
    #[must_use]
    pub fn span(&self) -> Duration {
        self.span
    }

    fn scale(&self) -> u128 {
        self.span.as_nanos().max(1)
    }

    fn drain(&mut self, limit: u64, now: Timestamp) {
        let now = nanos(now);
        let elapsed = now.saturating_sub(self.at);
        self.level = self.level.saturating_sub(u128::from(limit) * elapsed);
        self.at = self.at.max(now);
    }

    /// The units in the bucket at `now`, rounded up (what Shopify calls *used*).
    pub fn used(&mut self, limit: u64, now: Timestamp) -> u64 {
        self.drain(limit, now);
        u64::try_from(self.level.div_ceil(self.scale())).unwrap_or(u64::MAX)
    }

    /// The whole units that fit now under a size of `limit`.
    pub fn remaining(&mut self, limit: u64, now: Timestamp) -> u64 {
        self.drain(limit, now);
        let free = (u128::from(limit) * self.scale()).saturating_sub(self.level);
        u64::try_from(free / self.scale()).unwrap_or(u64::MAX)
    }

    /// When the bucket will be empty (full of tokens); `None` if it is.
    pub fn empty_at(&mut self, limit: u64, now: Timestamp) -> Option<Timestamp> {
        self.drain(limit, now);
        if self.level == 0 || limit == 0 {
            return None;
        }
        Some(after(now, self.level.div_ceil(u128::from(limit))))
    }

    /// When a request of `units` would first fit under a size of `limit`: `now`, the moment
    /// enough has drained, or `None` if it never can (`units > limit`).
    pub fn fits_at(&mut self, units: u64, limit: u64, now: Timestamp) -> Option<Timestamp> {
        if units > limit || limit == 0 {
            return None;
        }
        self.drain(limit, now);
        let need = self.level + u128::from(units) * self.scale();
        let size = u128::from(limit) * self.scale();
        if need <= size {
            return Some(now);
        }
        Some(after(now, (need - size).div_ceil(u128::from(limit))))
    }

    /// Pours `units` accepted at `now` in, after [`Bucket::fits_at`] said they fit at `now`.
    pub fn push(&mut self, units: u64, limit: u64, now: Timestamp) {
        self.drain(limit, now);
        self.level += u128::from(units) * self.scale();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::at_ms as at;

    #[test]
    fn a_full_bucket_admits_at_the_drain_pace() {
        // Shopify's: 40 units, 2 a second (40 per 20 s).
        let mut b = Bucket::new(Duration::from_secs(20));
        b.push(40, 40, at(0));
        assert_eq!((b.used(40, at(0)), b.remaining(40, at(0))), (40, 0));
        assert_eq!(b.fits_at(1, 40, at(0)), Some(at(500)));
        assert_eq!(b.fits_at(3, 40, at(0)), Some(at(1_500)));
        assert_eq!(b.fits_at(1, 40, at(500)), Some(at(500)));
        assert_eq!(b.remaining(40, at(1_250)), 2);
        assert_eq!(b.used(40, at(1_250)), 38, "37.5, rounded up");
        assert_eq!(b.empty_at(40, at(1_250)), Some(at(20_000)));
        assert_eq!(b.fits_at(41, 40, at(0)), None);
        assert_eq!(b.empty_at(40, at(20_000)), None);
    }

    #[test]
    fn a_smaller_limit_keeps_the_level_and_drains_at_its_pace() {
        let mut b = Bucket::new(Duration::from_secs(10));
        b.push(100, 100, at(0));
        // The size halves: 50 units must drain at 5 a second.
        assert_eq!(b.fits_at(1, 50, at(0)), Some(at(10_200)));
    }
}

//! The `gcra` shape's memory: the generic cell rate algorithm (ITU-T I.371, the virtual
//! scheduling form), as redis-cell, governor and many API gateways compute it.
//!
//! Each unit is due one emission interval `T = window / limit` after the previous one; the
//! theoretical arrival time (TAT) is when the units accepted so far would all have been due. A
//! request of `n` units fits if, once its `n × T` are added, the TAT is at most `τ + T` ahead of
//! now, with the tolerance `τ = window − T`: a burst of the window's whole quota. That is a token
//! bucket of `limit` units refilled over `window`, stored as one timestamp; the test below holds
//! it to the [`Bucket`](super::Bucket) on the same stream.
//!
//! When the limit changes, the TAT (a time) is kept and the new interval applies to what comes
//! next, where a bucket keeps its level in units: after a cut, GCRA lets the same backlog of time
//! drain, a bucket the same units.

use super::{at_nanos, nanos};
use pacer_core::Timestamp;
use std::time::Duration;

/// The theoretical arrival time of a GCRA whose tolerance is a whole window.
#[derive(Debug, Clone)]
pub struct Gcra {
    span: Duration,
    /// The theoretical arrival time, nanoseconds since time 0.
    tat: u128,
}

impl Gcra {
    /// A GCRA with nothing accepted yet, its tolerance `span`.
    #[must_use]
    pub fn new(span: Duration) -> Self {
        Gcra { span, tat: 0 }
    }

    /// The window: the tolerance plus one interval.
    #[must_use]
    pub fn span(&self) -> Duration {
        self.span
    }

    /// `units × T` for a limit of `limit` units per window, rounded up to the nanosecond.
    fn increment(&self, units: u64, limit: u64) -> u128 {
        (u128::from(units) * self.span.as_nanos()).div_ceil(u128::from(limit.max(1)))
    }

    /// When a request of `units` would first conform under `limit` units per window: `now`,
    /// the moment the TAT is close enough, or `None` if it never can (`units > limit`).
    pub fn fits_at(&self, units: u64, limit: u64, now: Timestamp) -> Option<Timestamp> {
        if units > limit || limit == 0 {
            return None;
        }
        let now = nanos(now);
        let new_tat = self.tat.max(now) + self.increment(units, limit);
        let earliest = new_tat.saturating_sub(self.span.as_nanos());
        Some(at_nanos(earliest.max(now)))
    }

    /// Accepts `units` at `now`: the TAT moves on by their intervals.
    pub fn push(&mut self, units: u64, limit: u64, now: Timestamp) {
        self.tat = self.tat.max(nanos(now)) + self.increment(units, limit);
    }

    /// The whole units that would conform now.
    #[must_use]
    pub fn remaining(&self, limit: u64, now: Timestamp) -> u64 {
        let backlog = self.tat.saturating_sub(nanos(now));
        let free = self.span.as_nanos().saturating_sub(backlog);
        u64::try_from(free * u128::from(limit) / self.span.as_nanos().max(1)).unwrap_or(u64::MAX)
    }

    /// The units the backlog stands for, rounded up.
    #[must_use]
    pub fn used(&self, limit: u64, now: Timestamp) -> u64 {
        let backlog = self.tat.saturating_sub(nanos(now));
        u64::try_from((backlog * u128::from(limit)).div_ceil(self.span.as_nanos().max(1)))
            .unwrap_or(u64::MAX)
    }

    /// When the whole tolerance is back (the TAT); `None` if it is now.
    #[must_use]
    pub fn full_at(&self, now: Timestamp) -> Option<Timestamp> {
        (self.tat > nanos(now)).then(|| at_nanos(self.tat))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Bucket;
    use super::*;
    use crate::model::at_ms as at;

    #[test]
    fn a_burst_of_the_window_then_one_unit_per_interval() {
        // 50 per second: T = 20 ms.
        let mut g = Gcra::new(Duration::from_secs(1));
        for _ in 0..50 {
            assert_eq!(g.fits_at(1, 50, at(0)), Some(at(0)));
            g.push(1, 50, at(0));
        }
        assert_eq!(g.fits_at(1, 50, at(0)), Some(at(20)));
        assert_eq!(g.fits_at(2, 50, at(5)), Some(at(40)));
        assert_eq!((g.remaining(50, at(30)), g.used(50, at(30))), (1, 49));
        assert_eq!(g.full_at(at(30)), Some(at(1_000)));
        assert_eq!(g.fits_at(51, 50, at(0)), None);
    }

    /// GCRA admits exactly what a token bucket of the same rate and burst admits, and tells
    /// the same moment when it refuses, on a pseudo-random stream of requests of 1–5 units.
    #[test]
    fn admits_what_a_token_bucket_of_the_same_parameters_admits() {
        for (span, limit) in [(60, 3000), (1, 50), (10, 8)] {
            let span = Duration::from_secs(span);
            let (mut g, mut b) = (Gcra::new(span), Bucket::new(span));
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            let mut now = at(0);
            let (mut admitted, mut refused) = (0, 0);
            for step in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                now += span.mul_f64((x % 1000) as f64 / 1000.0 / limit as f64 * 4.0);
                let units = 1 + (x >> 20) % 5;
                let (fg, fb) = (g.fits_at(units, limit, now), b.fits_at(units, limit, now));
                assert_eq!(fg, fb, "step {step}");
                assert_eq!(
                    g.remaining(limit, now),
                    b.remaining(limit, now),
                    "step {step}"
                );
                if fg == Some(now) {
                    g.push(units, limit, now);
                    b.push(units, limit, now);
                    admitted += 1;
                } else {
                    refused += 1;
                }
            }
            assert!(admitted > 1000 && refused > 1000, "{admitted} / {refused}");
        }
    }
}

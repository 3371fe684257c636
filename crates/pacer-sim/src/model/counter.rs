//! The `haproxy` shape's memory: HAProxy's stick-table rate (`http_req_rate(<period>)` and the
//! other `*_rate` counters), a sliding-window counter that counts refused requests too.
//!
//! HAProxy keeps three numbers per key (its `freq_ctr`): the count of the current period, the
//! count of the one before, and when the current one began. The rate it reads at `now` is the
//! current count plus the previous one weighted by the share of it still inside a period back
//! from `now`, `curr + prev × (period − elapsed) ÷ period`, rounded down. A request past the limit
//! (`deny if { sc_http_req_rate(0) gt N }`) is refused, but tracking it counted it first: a client
//! that goes on sending while refused keeps the rate over the limit and is refused on and on, as
//! in many gateways that count every request they see. The periods follow each other from the
//! first request; after a silence of two periods or more they start again at the next request.

use super::{at_nanos, nanos};
use pacer_core::Timestamp;
use std::time::Duration;

/// HAProxy's `freq_ctr` over one period.
#[derive(Debug, Clone)]
pub struct SlidingCounter {
    span: Duration,
    /// When the current period began, nanoseconds since time 0.
    tick: u128,
    /// Units counted in the current period.
    curr: u64,
    /// Units counted in the period before it.
    prev: u64,
}

impl SlidingCounter {
    /// A counter with nothing counted, its period `span`.
    #[must_use]
    pub fn new(span: Duration) -> Self {
        SlidingCounter {
            span,
            tick: 0,
            curr: 0,
            prev: 0,
        }
    }

    /// The period.
    #[must_use]
    pub fn span(&self) -> Duration {
        self.span
    }

    fn period(&self) -> u128 {
        self.span.as_nanos().max(1)
    }

    /// The counts and the current period's start as they would be read at `now` (HAProxy's
    /// rotation, without storing it): `(tick, curr, prev)`.
    fn rotated(&self, now: Timestamp) -> (u128, u64, u64) {
        let (now, period) = (nanos(now), self.period());
        let elapsed = now.saturating_sub(self.tick);
        if elapsed < period {
            (self.tick, self.curr, self.prev)
        } else if elapsed < 2 * period {
            (self.tick + period, 0, self.curr)
        } else {
            (now, 0, 0)
        }
    }

    /// The rate times the period at `now` with `more` units added to the current period's
    /// count: `(curr + more) × period + prev × (period − elapsed)`.
    fn total(&self, more: u64, now: Timestamp) -> u128 {
        let (tick, curr, prev) = self.rotated(now);
        let period = self.period();
        let left = period - (nanos(now) - tick).min(period);
        u128::from(curr + more) * period + u128::from(prev) * left
    }

    /// Whether a request of `units` counted at `now` leaves the rate at most `limit` (HAProxy
    /// refuses when the rate read after counting it is greater).
    fn admits(&self, units: u64, limit: u64, now: Timestamp) -> bool {
        self.total(units, now) / self.period() <= u128::from(limit)
    }

    /// When a request of `units` would first be admitted under `limit` if nothing else came:
    /// `now`, the moment the previous period's weight has fallen enough, or `None` if it never
    /// can (`units > limit`).
    pub fn fits_at(&self, units: u64, limit: u64, now: Timestamp) -> Option<Timestamp> {
        if units > limit {
            return None;
        }
        if self.admits(units, limit, now) {
            return Some(now);
        }
        let (tick, curr, prev) = self.rotated(now);
        let period = self.period();
        // The largest total that is admitted: `(limit + 1) × period − 1`.
        let most = (u128::from(limit) + 1) * period - 1;
        // Within this period the weight of `prev` falls as time passes.
        let here = u128::from(curr + units) * period;
        if prev > 0 && here <= most {
            // prev × (period − e) ≤ most − here  ⇔  e ≥ period − (most − here) ÷ prev.
            let e = period - (most - here) / u128::from(prev);
            return Some(at_nanos(tick + e).max(now));
        }
        // In the next period the current count is the weighted one.
        let next = tick + period;
        let here = u128::from(units) * period;
        if curr > 0 {
            let e = period.saturating_sub((most - here) / u128::from(curr));
            return Some(at_nanos(next + e).max(now));
        }
        Some(at_nanos(next).max(now))
    }

    /// Counts `units` at `now`, admitted or refused.
    pub fn push(&mut self, units: u64, now: Timestamp) {
        (self.tick, self.curr, self.prev) = self.rotated(now);
        self.curr += units;
    }

    /// The rate HAProxy reads at `now`, rounded down.
    #[must_use]
    pub fn used(&self, now: Timestamp) -> u64 {
        u64::try_from(self.total(0, now) / self.period()).unwrap_or(u64::MAX)
    }

    /// When the rate reads zero again if nothing else comes (`None`: it does now).
    #[must_use]
    pub fn empty_at(&self, now: Timestamp) -> Option<Timestamp> {
        let (tick, curr, prev) = self.rotated(now);
        let period = self.period();
        if curr > 0 {
            Some(at_nanos(tick + 2 * period))
        } else if prev > 0 {
            Some(at_nanos(tick + period))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::at_ms as at;

    #[test]
    fn the_previous_period_counts_by_the_share_of_it_still_in_the_window() {
        let mut c = SlidingCounter::new(Duration::from_secs(10));
        for i in 0..100 {
            assert!(c.admits(1, 100, at(i * 10)));
            c.push(1, at(i * 10));
        }
        assert_eq!(c.used(at(5_000)), 100);
        // The 101st is refused until the previous period weighs less than a request: at
        // 10 s the 100 units are the previous period, weighing 100 × (10 − e) ÷ 10.
        assert!(!c.admits(1, 100, at(9_999)));
        assert_eq!(
            c.fits_at(1, 100, at(9_999)),
            Some(at(10_000) + Duration::from_nanos(1))
        );
        assert_eq!(c.used(at(12_500)), 75);
        assert!(c.admits(25, 100, at(12_500)));
        assert!(!c.admits(26, 100, at(12_500)));
        assert_eq!(c.used(at(20_000)), 0);
        assert_eq!(c.empty_at(at(12_500)), Some(at(20_000)));
        // Two periods of silence: the periods start again at the next request.
        c.push(3, at(45_000));
        assert_eq!(c.used(at(45_000)), 3);
        assert_eq!(c.empty_at(at(45_000)), Some(at(65_000)));
        assert_eq!(c.fits_at(101, 100, at(45_000)), None);
    }

    #[test]
    fn refused_requests_counted_keep_a_client_that_goes_on_refused() {
        // 10 a second into a counter of 100 per 10 s: the first 100 pass, then every request
        // counts and the rate never falls under the limit while the client keeps sending.
        let mut c = SlidingCounter::new(Duration::from_secs(10));
        let (mut admitted, mut refused_after_full) = (0, 0);
        for i in 0..600 {
            let now = at(i * 100);
            if c.admits(1, 100, now) {
                admitted += 1;
            } else if admitted >= 100 {
                refused_after_full += 1;
            }
            c.push(1, now);
        }
        assert_eq!(admitted, 100, "only the first window's quota");
        assert_eq!(refused_after_full, 500);
        // A client that stops for the time `fits_at` says is admitted again.
        let now = at(60_000);
        let free = c.fits_at(1, 100, now).expect("fits at some point");
        assert!(free > now);
        assert!(c.admits(1, 100, free));
        assert!(!c.admits(1, 100, at_nanos(nanos(free) - 1_000_000)));
    }

    /// `fits_at` is the first moment `admits` says yes, for a pseudo-random state.
    #[test]
    fn fits_at_is_the_first_admitted_moment() {
        let span = Duration::from_secs(1);
        let mut c = SlidingCounter::new(span);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut now = at(0);
        for step in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += Duration::from_micros(x % 40_000);
            let units = 1 + (x >> 20) % 5;
            let fits = c.fits_at(units, 50, now).expect("units ≤ limit");
            assert!(c.admits(units, 50, fits), "step {step}");
            if fits > now {
                assert!(
                    !c.admits(units, 50, at_nanos(nanos(fits) - 1)),
                    "step {step}"
                );
            }
            c.push(units, now);
        }
    }
}

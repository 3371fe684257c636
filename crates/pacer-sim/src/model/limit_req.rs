//! The `nginx` shape's memory: nginx's `limit_req` as a site leaves it, its burst queued.
//!
//! nginx keeps one number per key, the *excess*: requests over the pace, drained at the pace.
//! A request sets it to `max(0, excess − pace × elapsed + 1)`; a request that would set it above
//! the burst is refused (a bare 503, its default `limit_req_status`) and changes nothing;
//! otherwise, without `nodelay`, the request waits in nginx `excess ÷ pace` before it is served
//! (`ngx_http_limit_req_module.c`: `ngx_http_limit_req_lookup` and `_account`). A request that
//! finds the excess drained goes at once. Here a request of `units` adds `units`, and the excess
//! is held in units × window nanoseconds, as [`Bucket`](super::Bucket)'s level is, so that it is
//! exact to the nanosecond.

use super::nanos;
use pacer_core::Timestamp;
use std::time::Duration;

/// nginx's `limit_req` with a burst of `limit` (the window's quota) draining `limit` every
/// `span`, requests over the pace queued.
#[derive(Debug, Clone)]
pub struct LimitReq {
    span: Duration,
    /// The excess × `span` in nanoseconds.
    excess: u128,
    /// When `excess` was last set, nanoseconds since time 0; `None` before the first request
    /// (nginx makes a key's node with no excess: its first request goes at once).
    at: Option<u128>,
}

impl LimitReq {
    /// Nothing in excess, draining over `span`.
    #[must_use]
    pub fn new(span: Duration) -> Self {
        LimitReq {
            span,
            excess: 0,
            at: None,
        }
    }

    /// The time a full burst takes to drain.
    #[must_use]
    pub fn span(&self) -> Duration {
        self.span
    }

    fn scale(&self) -> u128 {
        self.span.as_nanos().max(1)
    }

    /// What has drained of the excess by `now`, in its units (all of it before the first
    /// request).
    fn drained(&self, limit: u64, now: Timestamp) -> u128 {
        self.at.map_or(u128::MAX, |at| {
            u128::from(limit) * nanos(now).saturating_sub(at)
        })
    }

    /// The excess a request of `units` at `now` would leave: nginx's
    /// `max(0, excess − pace × elapsed + 1)`, with `units` for its 1. A drained key (a new one
    /// too) serves one unit at once: the request's others wait.
    fn excess_with(&self, units: u64, limit: u64, now: Timestamp) -> u128 {
        let drained = self.drained(limit, now).min(self.excess + self.scale());
        (self.excess + u128::from(units) * self.scale()).saturating_sub(drained)
    }

    /// When a request of `units` would first be admitted under a burst of `limit`: `now`, or
    /// the moment enough has drained; `None` if it never can (`units > limit`).
    pub fn fits_at(&mut self, units: u64, limit: u64, now: Timestamp) -> Option<Timestamp> {
        if units > limit || limit == 0 {
            return None;
        }
        let excess = self.excess_with(units, limit, now);
        let burst = u128::from(limit) * self.scale();
        if excess <= burst {
            return Some(now);
        }
        let wait = (excess - burst).div_ceil(u128::from(limit));
        Some(now + Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)))
    }

    /// Admits `units` at `now`, after [`LimitReq::fits_at`] said they fit at `now`.
    pub fn push(&mut self, units: u64, limit: u64, now: Timestamp) {
        self.excess = self.excess_with(units, limit, now);
        self.at = Some(self.at.unwrap_or(0).max(nanos(now)));
    }

    /// How long the request just admitted waits in nginx before it is served: the excess over
    /// the pace.
    #[must_use]
    pub fn delay(&self, limit: u64) -> Duration {
        if limit == 0 {
            return Duration::ZERO;
        }
        let nanos = self.excess / u128::from(limit);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// The excess at `now`, rounded up (the units queued).
    pub fn used(&mut self, limit: u64, now: Timestamp) -> u64 {
        let left = self.excess.saturating_sub(self.drained(limit, now));
        u64::try_from(left.div_ceil(self.scale())).unwrap_or(u64::MAX)
    }

    /// When the excess will have drained; `None` if it has.
    pub fn empty_at(&mut self, limit: u64, now: Timestamp) -> Option<Timestamp> {
        let left = self.excess.saturating_sub(self.drained(limit, now));
        if left == 0 || limit == 0 {
            return None;
        }
        let wait = left.div_ceil(u128::from(limit));
        Some(now + Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::at_ms as at;

    /// nginx's `rate=5r/s burst=20`: a burst of 20 over 4 s.
    fn five_a_second() -> LimitReq {
        LimitReq::new(Duration::from_secs(4))
    }

    #[test]
    fn a_burst_is_queued_at_the_pace_and_what_is_over_it_refused() {
        let mut l = five_a_second();
        // 21 requests at once: the first goes at once (a new key has no excess), each of the
        // next 20 waits 200 ms more; the 22nd is over the burst.
        l.push(1, 20, at(0));
        assert_eq!(l.delay(20), Duration::ZERO);
        for k in 1..=20 {
            assert_eq!(l.fits_at(1, 20, at(0)), Some(at(0)));
            l.push(1, 20, at(0));
            assert_eq!(l.delay(20), Duration::from_millis(200 * k));
        }
        assert_eq!(l.fits_at(1, 20, at(0)), Some(at(200)));
        // 200 ms on, one has drained: the next waits the whole queue, 4 s.
        assert_eq!(l.fits_at(1, 20, at(200)), Some(at(200)));
        l.push(1, 20, at(200));
        assert_eq!(l.delay(20), Duration::from_secs(4));
        assert_eq!(l.used(20, at(200)), 20);
        assert_eq!(l.empty_at(20, at(200)), Some(at(4_200)));
    }

    #[test]
    fn a_request_at_the_pace_never_waits() {
        let mut l = five_a_second();
        for k in 0..50 {
            assert_eq!(l.fits_at(1, 20, at(k * 200)), Some(at(k * 200)));
            l.push(1, 20, at(k * 200));
            assert_eq!(l.delay(20), Duration::ZERO, "{k}");
        }
        // Twice as fast: each request adds half a unit's wait.
        l.push(1, 20, at(9_900));
        assert_eq!(l.delay(20), Duration::from_millis(100));
        assert_eq!(l.used(20, at(9_900)), 1);
        assert_eq!(l.empty_at(20, at(9_900)), Some(at(10_000)));
        assert_eq!(l.empty_at(20, at(10_000)), None);
        assert_eq!(l.fits_at(21, 20, at(0)), None);
        // A request of 3 units on a drained key: one at once, two waiting.
        let mut l = five_a_second();
        l.push(3, 20, at(0));
        assert_eq!(l.delay(20), Duration::from_millis(400));
    }
}

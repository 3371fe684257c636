//! The `fixed` shape's memory: a window that counts from zero again on each boundary.
//!
//! Many servers count this way (a counter per `floor(now / window)` key, as express-rate-limit
//! and most Redis `INCR` + `EXPIRE` limiters do): cheap, and it lets a client send up to twice
//! the limit across a boundary. The windows start at time 0 of the run.

use super::at_nanos;
use pacer_core::Timestamp;
use std::time::Duration;

/// Units accepted in the current fixed window.
#[derive(Debug, Clone)]
pub struct FixedWindow {
    span: Duration,
    /// The index of the current window: `floor(now / span)`.
    index: u128,
    used: u64,
}

impl FixedWindow {
    /// An empty window of `span`; windows are `[k × span, (k + 1) × span)`.
    #[must_use]
    pub fn new(span: Duration) -> Self {
        FixedWindow {
            span,
            index: 0,
            used: 0,
        }
    }

    /// The window's length.
    #[must_use]
    pub fn span(&self) -> Duration {
        self.span
    }

    fn roll(&mut self, now: Timestamp) {
        let index = now.as_duration().as_nanos() / self.span.as_nanos().max(1);
        if index != self.index {
            self.index = index;
            self.used = 0;
        }
    }

    /// The end of the window `now` is in: when the count starts again from zero.
    pub fn boundary(&mut self, now: Timestamp) -> Timestamp {
        self.roll(now);
        let nanos = (self.index + 1) * self.span.as_nanos();
        at_nanos(nanos)
    }

    /// The units counted in the window `now` is in.
    pub fn used(&mut self, now: Timestamp) -> u64 {
        self.roll(now);
        self.used
    }

    /// When a request of `units` would first fit under `limit`: `now`, the next boundary, or
    /// `None` if it never can (`units > limit`).
    pub fn fits_at(&mut self, units: u64, limit: u64, now: Timestamp) -> Option<Timestamp> {
        if units > limit {
            return None;
        }
        if self.used(now) + units <= limit {
            Some(now)
        } else {
            Some(self.boundary(now))
        }
    }

    /// Counts `units` accepted at `now`.
    pub fn push(&mut self, units: u64, now: Timestamp) {
        self.roll(now);
        self.used += units;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::at_ms as at;

    #[test]
    fn counts_from_zero_on_each_boundary() {
        let mut w = FixedWindow::new(Duration::from_secs(10));
        for i in 0..5 {
            assert_eq!(w.fits_at(1, 5, at(9_000 + i)), Some(at(9_000 + i)));
            w.push(1, at(9_000 + i));
        }
        // Full until 10 s, then 5 more at once: 10 units within 1 s, as fixed windows allow.
        assert_eq!(w.fits_at(1, 5, at(9_999)), Some(at(10_000)));
        assert_eq!(w.boundary(at(9_999)), at(10_000));
        assert_eq!(w.used(at(10_000)), 0);
        assert_eq!(w.fits_at(5, 5, at(10_000)), Some(at(10_000)));
        w.push(5, at(10_000));
        assert_eq!(w.fits_at(1, 5, at(10_001)), Some(at(20_000)));
        assert_eq!(w.fits_at(6, 5, at(10_001)), None);
    }
}

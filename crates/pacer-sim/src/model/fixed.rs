//! The `fixed` shape's memory: a window that counts from zero again on each boundary.
//!
//! Many servers count this way (a counter per `floor(now / window)` key, as express-rate-limit
//! and most Redis `INCR` + `EXPIRE` limiters do): cheap, and it lets a client send up to twice
//! the limit across a boundary. The windows start at time 0 of the run, or a phase before it
//! (a server's windows do not start when a client does).

use super::at_nanos;
use pacer_core::Timestamp;
use std::time::Duration;

/// Units accepted in the current fixed window.
#[derive(Debug, Clone)]
pub struct FixedWindow {
    span: Duration,
    /// How far into its current window the server was at time 0, in nanoseconds (less than
    /// `span`).
    phase: u128,
    /// The index of the current window: `floor((now + phase) / span)`.
    index: u128,
    used: u64,
}

impl FixedWindow {
    /// An empty window of `span`; windows are `[k × span, (k + 1) × span)`.
    #[must_use]
    pub fn new(span: Duration) -> Self {
        FixedWindow::with_phase(span, Duration::ZERO)
    }

    /// An empty window of `span` that was `phase` into its current window at time 0: the first
    /// boundary comes at `span − phase`, then every `span` (`phase` is taken modulo `span`).
    #[must_use]
    pub fn with_phase(span: Duration, phase: Duration) -> Self {
        FixedWindow {
            span,
            phase: phase.as_nanos() % span.as_nanos().max(1),
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
        let index = (now.as_duration().as_nanos() + self.phase) / self.span.as_nanos().max(1);
        if index != self.index {
            self.index = index;
            self.used = 0;
        }
    }

    /// The end of the window `now` is in: when the count starts again from zero.
    pub fn boundary(&mut self, now: Timestamp) -> Timestamp {
        self.roll(now);
        let nanos = (self.index + 1) * self.span.as_nanos() - self.phase;
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

    #[test]
    fn a_phase_moves_every_boundary_earlier_by_it() {
        // The server was 7 s into a window of 10 s when the run began: its boundaries fall at
        // 3 s, 13 s, 23 s, …
        let mut w = FixedWindow::with_phase(Duration::from_secs(10), Duration::from_secs(7));
        assert_eq!(w.boundary(at(0)), at(3_000));
        w.push(5, at(2_999));
        assert_eq!(w.fits_at(1, 5, at(2_999)), Some(at(3_000)));
        assert_eq!(w.used(at(3_000)), 0);
        assert_eq!(w.boundary(at(3_000)), at(13_000));
        // Taken modulo the window: 17 s is 7 s.
        let mut same = FixedWindow::with_phase(Duration::from_secs(10), Duration::from_secs(17));
        assert_eq!(same.boundary(at(12_999)), at(13_000));
    }
}

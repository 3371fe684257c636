//! The hidden quota's memory: an exact sliding window of accepted units.
//!
//! The model API counts every accepted unit for exactly `span` (60 s) after it was accepted. No
//! buckets, no rounding: each accepted request is one entry `(time, running total)`, so the units
//! in the window, and the moment enough of them will have left for a new request to fit, are exact
//! to the nanosecond. The running total turns "when will `n` units have left" into a binary
//! search instead of a walk, which keeps a 429 cheap even when the quota is cut and the window
//! holds thousands of entries.

use pacer_core::Timestamp;
use std::collections::VecDeque;
use std::time::Duration;

/// Units accepted within the last `span`, exactly.
#[derive(Debug, Clone)]
pub struct SlidingWindow {
    span: Duration,
    /// `(accepted at, units pushed so far including this entry)`, oldest first.
    entries: VecDeque<(Timestamp, u64)>,
    /// Units ever pushed.
    pushed: u64,
    /// Units that have left the window (the running total of the last expired entry).
    expired: u64,
}

impl SlidingWindow {
    /// An empty window that remembers each unit for `span`.
    #[must_use]
    pub fn new(span: Duration) -> Self {
        SlidingWindow {
            span,
            entries: VecDeque::new(),
            pushed: 0,
            expired: 0,
        }
    }

    /// How long a unit stays in the window.
    #[must_use]
    pub fn span(&self) -> Duration {
        self.span
    }

    /// Forgets every unit accepted at or before `now - span`: a unit accepted at `s` counts
    /// during `[s, s + span)`.
    pub fn expire(&mut self, now: Timestamp) {
        while let Some(&(at, total)) = self.entries.front() {
            if at + self.span > now {
                break;
            }
            self.expired = total;
            self.entries.pop_front();
        }
    }

    /// The units in the window at `now`.
    pub fn used(&mut self, now: Timestamp) -> u64 {
        self.expire(now);
        self.pushed - self.expired
    }

    /// Counts `units` accepted at `now`. Calls must come in time order.
    pub fn push(&mut self, units: u64, now: Timestamp) {
        debug_assert!(self.entries.back().is_none_or(|&(at, _)| at <= now));
        if units == 0 {
            return;
        }
        self.pushed += units;
        self.entries.push_back((now, self.pushed));
    }

    /// When a request of `units` would first fit under `limit` if nothing more were accepted:
    /// `now` if it fits already, the moment enough old units leave otherwise, and `None` if it can
    /// never fit (`units > limit`).
    pub fn fits_at(&mut self, units: u64, limit: u64, now: Timestamp) -> Option<Timestamp> {
        if units > limit {
            return None;
        }
        let used = self.used(now);
        let excess = (used + units).saturating_sub(limit);
        if excess == 0 {
            return Some(now);
        }
        // The first entry whose departure brings the expired total to `expired + excess`.
        let target = self.expired + excess;
        let i = self.entries.partition_point(|&(_, total)| total < target);
        let (at, _) = self.entries[i];
        Some(at + self.span)
    }

    /// When the oldest entry leaves, without forgetting anything first (it may already be due).
    #[must_use]
    pub fn oldest_departure(&self) -> Option<Timestamp> {
        self.entries.front().map(|&(at, _)| at + self.span)
    }

    /// When the oldest unit in the window leaves it; `None` when the window is empty.
    pub fn next_departure(&mut self, now: Timestamp) -> Option<Timestamp> {
        self.expire(now);
        self.entries.front().map(|&(at, _)| at + self.span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::at_ms as at;

    fn window() -> SlidingWindow {
        SlidingWindow::new(Duration::from_secs(60))
    }

    #[test]
    fn a_unit_counts_for_exactly_the_span() {
        let mut w = window();
        w.push(3, at(1_000));
        assert_eq!(w.used(at(1_000)), 3);
        assert_eq!(w.used(at(60_999)), 3);
        assert_eq!(w.used(at(61_000)), 0, "gone at s + 60 s");
    }

    #[test]
    fn fits_at_is_when_enough_old_units_have_left() {
        let mut w = window();
        w.push(2, at(0));
        w.push(5, at(10_000));
        w.push(1, at(20_000));
        // 8 used, limit 10.
        assert_eq!(w.fits_at(2, 10, at(30_000)), Some(at(30_000)));
        // 3 more need 1 unit out: the first entry leaves at 60 s.
        assert_eq!(w.fits_at(3, 10, at(30_000)), Some(at(60_000)));
        // 5 more need 3 out: the first two entries, the second leaves at 70 s.
        assert_eq!(w.fits_at(5, 10, at(30_000)), Some(at(70_000)));
        // 10 need all 8 out.
        assert_eq!(w.fits_at(10, 10, at(30_000)), Some(at(80_000)));
        assert_eq!(w.fits_at(11, 10, at(30_000)), None, "never");
    }

    #[test]
    fn fits_at_handles_a_limit_far_below_what_is_used() {
        // A quota cut: 8 units inside, the limit drops to 1.
        let mut w = window();
        for i in 0..8 {
            w.push(1, at(i * 1_000));
        }
        assert_eq!(w.fits_at(1, 1, at(10_000)), Some(at(67_000)));
    }

    #[test]
    fn next_departure_is_the_oldest_unit() {
        let mut w = window();
        assert_eq!(w.next_departure(at(0)), None);
        w.push(1, at(5_000));
        w.push(1, at(6_000));
        assert_eq!(w.next_departure(at(7_000)), Some(at(65_000)));
        assert_eq!(w.next_departure(at(65_000)), Some(at(66_000)));
    }

    /// Admission against a reference that sums every accepted request of the last 60 s by brute
    /// force, over a pseudo-random stream with a limit that changes.
    #[test]
    fn admission_matches_a_brute_force_reference() {
        let mut w = window();
        let mut reference: Vec<(Timestamp, u64)> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut now = at(0);
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += Duration::from_micros(x % 40_000);
            let units = 1 + (x >> 20) % 5;
            let limit = if (step / 3_000) % 2 == 0 { 300 } else { 120 };
            reference.retain(|&(s, _)| s + Duration::from_secs(60) > now);
            let used: u64 = reference.iter().map(|&(_, u)| u).sum();
            let expected_fit = used + units <= limit;
            let fit_at = w.fits_at(units, limit, now).unwrap();
            assert_eq!(fit_at == now, expected_fit, "step {step}");
            if expected_fit {
                w.push(units, now);
                reference.push((now, units));
            } else {
                // At fit_at (and not a nanosecond before) the reference admits it.
                let used_at = |t: Timestamp| -> u64 {
                    reference
                        .iter()
                        .filter(|&&(s, _)| s + Duration::from_secs(60) > t && s <= t)
                        .map(|&(_, u)| u)
                        .sum()
                };
                assert!(used_at(fit_at) + units <= limit, "step {step}");
                assert!(
                    used_at(fit_at.saturating_sub(Duration::from_nanos(1))) + units > limit,
                    "step {step}"
                );
            }
        }
    }
}

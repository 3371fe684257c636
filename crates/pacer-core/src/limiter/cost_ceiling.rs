//! The largest cost of a request lately: how far one send can move a server's count at once.

use crate::Timestamp;
use std::time::Duration;

/// The largest cost among the requests answered in the current span and the one before it, so a
/// large request is remembered for one to two spans and then forgotten.
#[derive(Debug, Clone)]
pub(crate) struct CostCeiling {
    span: Duration,
    started: Timestamp,
    current: u64,
    previous: u64,
}

impl CostCeiling {
    /// A ceiling over spans of `span` (the limiter's `QuotaWindow`), starting at `now`.
    pub(crate) fn new(span: Duration, now: Timestamp) -> Self {
        CostCeiling {
            span: span.max(Duration::from_millis(1)),
            started: now,
            current: 0,
            previous: 0,
        }
    }

    /// Counts a request of `units` answered at `now`.
    pub(crate) fn record(&mut self, units: u64, now: Timestamp) {
        self.roll(now);
        self.current = self.current.max(units);
    }

    /// The largest cost lately, at least 1.
    pub(crate) fn largest(&self, now: Timestamp) -> u64 {
        let seen = match self.spans_since_start(now) {
            0 => self.current.max(self.previous),
            1 => self.current,
            _ => 0,
        };
        seen.max(1)
    }

    /// Whole spans from the current one's start to `now`.
    fn spans_since_start(&self, now: Timestamp) -> u128 {
        if now < self.started {
            return 0;
        }
        (now - self.started).as_nanos() / self.span.as_nanos()
    }

    fn roll(&mut self, now: Timestamp) {
        // Within the current span (nearly every response): no division.
        if now < self.started || now - self.started < self.span {
            return;
        }
        let spans = self.spans_since_start(now);
        if spans == 0 {
            return;
        }
        self.previous = if spans == 1 { self.current } else { 0 };
        self.current = 0;
        let whole = u32::try_from(spans).unwrap_or(u32::MAX);
        self.started += self.span.saturating_mul(whole);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Timestamp {
        Timestamp::from_secs_f64(s)
    }

    #[test]
    fn a_large_cost_is_remembered_for_one_to_two_spans() {
        let mut c = CostCeiling::new(Duration::from_secs(60), secs(0.0));
        assert_eq!(c.largest(secs(0.0)), 1, "nothing seen: 1");
        c.record(2, secs(1.0));
        c.record(5, secs(30.0));
        c.record(1, secs(59.0));
        assert_eq!(c.largest(secs(59.0)), 5);
        // The next span still remembers the 5.
        c.record(2, secs(70.0));
        assert_eq!(c.largest(secs(119.0)), 5);
        // Two spans on, only the 2 of the span before.
        assert_eq!(c.largest(secs(121.0)), 2);
        // A long silence forgets everything.
        assert_eq!(c.largest(secs(1000.0)), 1);
        c.record(3, secs(1000.0));
        assert_eq!(c.largest(secs(1000.0)), 3);
    }
}

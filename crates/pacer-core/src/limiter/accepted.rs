//! The accepted throughput: units of successful responses in the last minute.

use crate::Timestamp;

/// Slots of one second: a minute of them.
const SLOTS: usize = 60;
const NANOS_PER_SLOT: u64 = 1_000_000_000;

/// Counts the units of the responses the server accepted, in one-second slots over the last 60 s.
///
/// Why a minute: the limiter's rates are units per minute, and most quotas it meets count a
/// minute (requests or tokens per minute). When a throttle comes after a full window, the units
/// accepted over that window are the quota (this process's share of it) — a far better estimate
/// of the limit than the rate at the cut, which a slow window lets run ahead. For a shorter
/// window the minute's units are the average, at or below its limit.
///
/// The memory is fixed (60 counters); the oldest second is dropped as a new one starts, so the
/// count is exact to within the second at each end.
#[derive(Debug, Clone)]
pub(crate) struct AcceptedMeter {
    slots: [f64; SLOTS],
    /// The second (since the timeline's origin) of the newest slot.
    newest: u64,
}

impl AcceptedMeter {
    pub(crate) fn new(now: Timestamp) -> Self {
        AcceptedMeter {
            slots: [0.0; SLOTS],
            newest: second_of(now),
        }
    }

    /// Counts `units` accepted at `now`.
    pub(crate) fn record(&mut self, units: f64, now: Timestamp) {
        self.advance(now);
        self.slots[(self.newest % SLOTS as u64) as usize] += units;
    }

    /// The units accepted in the last 60 s (the current second and the 59 before it).
    pub(crate) fn last_minute(&self, now: Timestamp) -> f64 {
        let window = SLOTS as u64 - 1;
        let from = second_of(now)
            .saturating_sub(window)
            .max(self.newest.saturating_sub(window));
        (from..=self.newest)
            .map(|s| self.slots[(s % SLOTS as u64) as usize])
            .sum()
    }

    /// Starts the slot of `now`'s second, clearing the slots of the seconds skipped.
    fn advance(&mut self, now: Timestamp) {
        let second = second_of(now);
        if second <= self.newest {
            return;
        }
        let from = (self.newest + 1).max(second.saturating_sub(SLOTS as u64 - 1));
        for s in from..=second {
            self.slots[(s % SLOTS as u64) as usize] = 0.0;
        }
        self.newest = second;
    }
}

fn second_of(t: Timestamp) -> u64 {
    t.as_nanos() / NANOS_PER_SLOT
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(ms: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn counts_the_units_of_the_last_sixty_seconds() {
        let mut m = AcceptedMeter::new(at(0));
        assert_eq!(m.last_minute(at(0)), 0.0);
        m.record(2.0, at(500));
        m.record(5.0, at(30_000));
        assert_eq!(m.last_minute(at(30_000)), 7.0);
        assert_eq!(m.last_minute(at(59_999)), 7.0);
        assert_eq!(m.last_minute(at(60_000)), 5.0, "the second 0 has left");
        m.record(1.0, at(61_000));
        assert_eq!(m.last_minute(at(61_000)), 6.0);
        assert_eq!(m.last_minute(at(89_999)), 6.0);
        assert_eq!(m.last_minute(at(90_000)), 1.0);
        assert_eq!(m.last_minute(at(121_000)), 0.0);
    }

    #[test]
    fn a_long_gap_forgets_everything_and_counting_starts_again() {
        let mut m = AcceptedMeter::new(at(0));
        for s in 0..60 {
            m.record(1.0, at(s * 1000));
        }
        assert_eq!(m.last_minute(at(59_000)), 60.0);
        m.record(3.0, at(1_000_000));
        assert_eq!(m.last_minute(at(1_000_000)), 3.0);
        m.record(1.0, at(1_030_000));
        assert_eq!(m.last_minute(at(1_030_000)), 4.0);
    }

    #[test]
    fn matches_a_brute_force_count_over_a_stream() {
        let mut m = AcceptedMeter::new(at(0));
        let mut log: Vec<(u64, f64)> = Vec::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut now = 0u64;
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 3_000;
            let units = (1 + x % 5) as f64;
            m.record(units, at(now));
            log.push((now / 1000, units));
            let second = now / 1000;
            let expected: f64 = log
                .iter()
                .filter(|&&(s, _)| s + 60 > second)
                .map(|&(_, u)| u)
                .sum();
            assert_eq!(m.last_minute(at(now)), expected, "at {now} ms");
        }
    }
}

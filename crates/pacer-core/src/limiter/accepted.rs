//! The accepted throughput: units of successful responses over the server's quota window.

use crate::Timestamp;
use std::time::Duration;

/// The window is counted in this many slots.
const SLOTS: usize = 60;
const MINUTE_SECS: f64 = 60.0;

/// Counts the units of the responses the server accepted, in 60 slots over the last
/// `QuotaWindow` (one-second slots for the default minute).
///
/// Why the quota window: when a throttle comes after a full window, the units accepted over that
/// window are the quota (this process's share of it) — a far better estimate of the limit than the
/// rate at the cut, which a slow window lets run ahead. For a server whose window is shorter than
/// `QuotaWindow`, the count is the average over several of its windows, at or below its limit.
///
/// The memory is fixed (60 counters); the oldest slot is dropped as a new one starts, so the
/// count is exact to within a slot at each end.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct AcceptedMeter {
    #[serde(with = "slots")]
    slots: [f64; SLOTS],
    /// The index (slots since the timeline's origin) of the newest slot.
    newest: u64,
    /// The length of a slot: the window ÷ 60, at least 1 ns.
    slot_nanos: u64,
    /// Units per window → units per minute.
    per_minute: f64,
    /// The sum of the slots, kept so that the count up to the newest slot (asked after every
    /// success) is not a sum of 60 numbers each time. Summed anew when a slot starts, so no
    /// rounding can build up.
    total: f64,
    /// The window counted over.
    window: Duration,
}

impl AcceptedMeter {
    pub(crate) fn new(window: Duration, now: Timestamp) -> Self {
        let slot_nanos = (window.as_nanos() / SLOTS as u128).clamp(1, u128::from(u64::MAX)) as u64;
        let mut m = AcceptedMeter {
            slots: [0.0; SLOTS],
            newest: 0,
            slot_nanos,
            per_minute: MINUTE_SECS / window.as_secs_f64(),
            total: 0.0,
            window,
        };
        m.newest = m.slot_of(now);
        m
    }

    /// Counts `units` accepted at `now`.
    pub(crate) fn record(&mut self, units: f64, now: Timestamp) {
        self.advance(now);
        self.slots[(self.newest % SLOTS as u64) as usize] += units;
        self.total += units;
    }

    /// The units accepted in the last window (the current slot and the 59 before it).
    pub(crate) fn in_window(&self, now: Timestamp) -> f64 {
        let slot = self.slot_of(now);
        if slot <= self.newest {
            return self.total;
        }
        let window = SLOTS as u64 - 1;
        let from = slot
            .saturating_sub(window)
            .max(self.newest.saturating_sub(window));
        (from..=self.newest)
            .map(|s| self.slots[(s % SLOTS as u64) as usize])
            .sum()
    }

    /// The units accepted since `from` (at most the last window), to within a slot.
    pub(crate) fn since(&self, from: Timestamp, now: Timestamp) -> f64 {
        let slot = self.slot_of(now).max(self.newest);
        let first = self
            .slot_of(from)
            .max(slot.saturating_sub(SLOTS as u64 - 1));
        (first..=self.newest)
            .map(|s| self.slots[(s % SLOTS as u64) as usize])
            .sum()
    }

    /// [`in_window`](Self::in_window) in units per minute: the same count for the default
    /// one-minute window.
    pub(crate) fn per_minute(&self, now: Timestamp) -> f64 {
        self.in_window(now) * self.per_minute
    }

    /// The units of this window's two oldest slots (the part of the count that leaves the
    /// server's window next), in units per minute.
    pub(crate) fn leaving_per_minute(&self, now: Timestamp) -> f64 {
        let slot = self.slot_of(now);
        // The window is the slots `slot - 59 ..= slot`; slots before the origin hold nothing.
        let units: f64 = [SLOTS as u64 - 1, SLOTS as u64 - 2]
            .into_iter()
            .filter_map(|back| slot.checked_sub(back))
            .filter(|s| *s <= self.newest && *s + SLOTS as u64 > self.newest)
            .map(|s| self.slots[(s % SLOTS as u64) as usize])
            .sum();
        units / 2.0 * SLOTS as f64 * self.per_minute
    }

    /// Starts the slot of `now`, clearing the slots skipped.
    fn advance(&mut self, now: Timestamp) {
        let slot = self.slot_of(now);
        if slot <= self.newest {
            return;
        }
        let from = (self.newest + 1).max(slot.saturating_sub(SLOTS as u64 - 1));
        for s in from..=slot {
            self.slots[(s % SLOTS as u64) as usize] = 0.0;
        }
        self.newest = slot;
        self.total = self.slots.iter().sum();
    }

    fn slot_of(&self, t: Timestamp) -> u64 {
        t.as_nanos() / self.slot_nanos
    }
}

/// An [`AcceptedMeter`] over the limiter's `QuotaWindow`, for the parts that count what the
/// server accepted (a controller, header-following): made when the window is first known, made
/// anew when it changes. Counts nothing before.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct QuotaWindowMeter(Option<AcceptedMeter>);

impl QuotaWindowMeter {
    /// A meter over `window` from `now`.
    pub(crate) fn new(window: Duration, now: Timestamp) -> Self {
        QuotaWindowMeter(Some(AcceptedMeter::new(window, now)))
    }

    /// Counts over `window` from now on; a count over another window starts again.
    pub(crate) fn set_window(&mut self, window: Duration, now: Timestamp) {
        if self.0.as_ref().is_none_or(|m| m.window != window) {
            self.0 = Some(AcceptedMeter::new(window, now));
        }
    }

    /// The window it counts over, once known.
    pub(crate) fn window(&self) -> Option<Duration> {
        self.0.as_ref().map(|m| m.window)
    }

    /// Counts `units` accepted at `now`.
    pub(crate) fn record(&mut self, units: f64, now: Timestamp) {
        if let Some(m) = &mut self.0 {
            m.record(units, now);
        }
    }

    /// [`AcceptedMeter::since`] in units per minute over the window; 0 before it is known.
    pub(crate) fn per_minute_since(&self, from: Timestamp, now: Timestamp) -> f64 {
        self.0
            .as_ref()
            .map_or(0.0, |m| m.since(from, now) * m.per_minute)
    }

    /// [`AcceptedMeter::per_minute`]; 0 before the window is known.
    pub(crate) fn per_minute(&self, now: Timestamp) -> f64 {
        self.0.as_ref().map_or(0.0, |m| m.per_minute(now))
    }

    /// [`AcceptedMeter::leaving_per_minute`]; 0 before the window is known.
    pub(crate) fn leaving_per_minute(&self, now: Timestamp) -> f64 {
        self.0.as_ref().map_or(0.0, |m| m.leaving_per_minute(now))
    }
}

/// The slots as a list (serde writes arrays of at most 32 by itself).
mod slots {
    use super::SLOTS;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(slots: &[f64; SLOTS], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(slots.iter())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; SLOTS], D::Error> {
        let list = Vec::<f64>::deserialize(d)?;
        let n = list.len();
        list.try_into().map_err(|_| {
            serde::de::Error::invalid_length(n, &"the 60 slots of an accepted-units meter")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MINUTE: Duration = Duration::from_secs(60);

    fn at(ms: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn the_two_oldest_seconds_are_what_leaves_next() {
        let mut m = AcceptedMeter::new(MINUTE, at(0));
        m.record(4.0, at(500));
        m.record(2.0, at(1_500));
        m.record(8.0, at(30_000));
        let table = [
            (57_999, 0.0, "the window starts at −2 s"),
            (58_999, 120.0, "−1 s (nothing) and 0 s (4 units)"),
            (59_000, 180.0, "4 and 2 units a second each"),
            (60_000, 60.0, "2 units over two seconds"),
            (61_000, 0.0, "seconds 2 and 3: nothing"),
            (88_000, 240.0, "second 30, in a window of 29–88"),
            (200_000, 0.0, "all left long ago"),
        ];
        for (ms, per_minute, why) in table {
            assert_eq!(m.leaving_per_minute(at(ms)), per_minute, "{why}");
        }
    }

    #[test]
    fn counts_the_units_of_the_last_sixty_seconds() {
        let mut m = AcceptedMeter::new(MINUTE, at(0));
        assert_eq!(m.in_window(at(0)), 0.0);
        m.record(2.0, at(500));
        m.record(5.0, at(30_000));
        assert_eq!(m.in_window(at(30_000)), 7.0);
        assert_eq!(m.in_window(at(59_999)), 7.0);
        assert_eq!(m.in_window(at(60_000)), 5.0, "the second 0 has left");
        m.record(1.0, at(61_000));
        assert_eq!(m.in_window(at(61_000)), 6.0);
        assert_eq!(m.in_window(at(89_999)), 6.0);
        assert_eq!(m.in_window(at(90_000)), 1.0);
        assert_eq!(m.in_window(at(121_000)), 0.0);
    }

    #[test]
    fn a_long_gap_forgets_everything_and_counting_starts_again() {
        let mut m = AcceptedMeter::new(MINUTE, at(0));
        for s in 0..60 {
            m.record(1.0, at(s * 1000));
        }
        assert_eq!(m.in_window(at(59_000)), 60.0);
        m.record(3.0, at(1_000_000));
        assert_eq!(m.in_window(at(1_000_000)), 3.0);
        m.record(1.0, at(1_030_000));
        assert_eq!(m.in_window(at(1_030_000)), 4.0);
    }

    #[test]
    fn matches_a_brute_force_count_over_a_stream() {
        let mut m = AcceptedMeter::new(MINUTE, at(0));
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
            assert_eq!(m.in_window(at(now)), expected, "at {now} ms");
            // And since a time up to 70 s back: the slots from its own, within the window.
            let from = now.saturating_sub(x % 70_000);
            let since: f64 = log
                .iter()
                .filter(|&&(s, _)| s >= from / 1000 && s + 60 > second)
                .map(|&(_, u)| u)
                .sum();
            assert_eq!(
                m.since(at(from), at(now)),
                since,
                "since {from} at {now} ms"
            );
        }
    }

    #[test]
    fn a_shorter_window_counts_in_shorter_slots_and_scales_to_a_minute() {
        // A 6 s window: slots of 100 ms, and a window's units × 10 per minute.
        let mut m = AcceptedMeter::new(Duration::from_secs(6), at(0));
        m.record(3.0, at(50));
        m.record(2.0, at(5_950));
        assert_eq!(m.in_window(at(5_950)), 5.0);
        assert_eq!(m.per_minute(at(5_950)), 50.0);
        assert_eq!(m.in_window(at(6_000)), 2.0, "the first slot has left");
        assert_eq!(m.per_minute(at(12_000)), 0.0);
        // The default window is the plain count.
        let mut m = AcceptedMeter::new(MINUTE, at(0));
        m.record(7.0, at(10));
        assert_eq!(m.per_minute(at(10)), 7.0);
    }
}

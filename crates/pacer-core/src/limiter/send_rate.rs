//! The measured send rate: units of responses per half-second period, smoothed.

use crate::Timestamp;

/// Length of a measurement period, in seconds (the AWS SDK's half-second buckets).
const PERIOD_SECS: f64 = 0.5;
/// Weight of the newest period in the moving average (the AWS SDK's `SMOOTH`).
const SMOOTH: f64 = 0.8;

/// Measures the rate at which responses come back, as the AWS SDK adaptive mode does, but in
/// units instead of requests: time is cut into half-second periods; when a response arrives in a
/// later period, the units counted since the last boundary divided by the time between the two
/// boundaries is the newest rate, and `measured = newest × 0.8 + measured × 0.2`.
#[derive(Debug, Clone)]
pub(crate) struct SendRateMeter {
    /// Start of the current period, in seconds on the limiter's timeline.
    period_start: f64,
    /// Units of responses counted in the current period.
    units: f64,
    /// Smoothed rate in units per second; `None` until the first period has ended.
    measured: Option<f64>,
}

impl SendRateMeter {
    pub(crate) fn new(now: Timestamp) -> Self {
        SendRateMeter {
            period_start: period_of(now),
            units: 0.0,
            measured: None,
        }
    }

    /// Counts the units of a response that arrived at `now`.
    pub(crate) fn record(&mut self, units: f64, now: Timestamp) {
        if later_period(now, self.period_start) {
            let period = period_of(now);
            let newest = self.units / (period - self.period_start);
            let previous = self.measured.unwrap_or(0.0);
            self.measured = Some(newest * SMOOTH + previous * (1.0 - SMOOTH));
            self.units = 0.0;
            self.period_start = period;
        }
        self.units += units;
    }

    /// The smoothed rate in units per minute, or `None` before the first period has ended.
    pub(crate) fn per_minute(&self) -> Option<f64> {
        self.measured.map(|r| r * 60.0)
    }
}

impl SendRateMeter {
    /// The smoothed rate in units per minute; before the first period has ended, the units
    /// counted so far over the time since the period began (at least one period).
    pub(crate) fn per_minute_at(&self, now: Timestamp) -> f64 {
        self.per_minute().unwrap_or_else(|| {
            let secs = (now.as_secs_f64() - self.period_start).max(PERIOD_SECS);
            self.units / secs * 60.0
        })
    }
}

fn period_of(now: Timestamp) -> f64 {
    (now.as_secs_f64() / PERIOD_SECS).floor() * PERIOD_SECS
}

/// `period_of(now) > start` for a `start` that `period_of` gave, without the `floor`: the
/// period's number `k = start / PERIOD_SECS` is a whole number, and `floor(x) > k` exactly when
/// `x ≥ k + 1`. (Dividing by a power of two is exact.)
fn later_period(now: Timestamp, start: f64) -> bool {
    now.as_secs_f64() / PERIOD_SECS >= start / PERIOD_SECS + 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64) -> Timestamp {
        Timestamp::from_secs_f64(secs)
    }

    #[test]
    fn smooths_half_second_periods_with_0_8() {
        let mut m = SendRateMeter::new(at(0.0));
        assert_eq!(m.per_minute(), None);
        // 5 units in [0, 0.5): 10 units/s.
        for i in 0..5 {
            m.record(1.0, at(0.1 * f64::from(i)));
        }
        assert_eq!(m.per_minute(), None, "the first period has not ended");
        m.record(1.0, at(0.5));
        assert!((m.per_minute().unwrap() - 0.8 * 10.0 * 60.0).abs() < 1e-9);
        // 1 unit in [0.5, 1.0), then a response at 1.0: newest = 2 units/s.
        m.record(1.0, at(1.0));
        let expected = (2.0 * 0.8 + 8.0 * 0.2) * 60.0;
        assert!((m.per_minute().unwrap() - expected).abs() < 1e-9);
    }

    #[test]
    fn a_later_period_is_told_as_the_floor_tells_it() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let start = period_of(Timestamp::from_nanos(x % 4_000_000_000_000));
            // Around the start's period and the next one's edges, and far off.
            let nanos = match x % 4 {
                0 => (start * 1e9) as u64 + x % 1_000_000_000,
                1 => ((start + PERIOD_SECS) * 1e9) as u64 - 1 + x % 3,
                _ => x % 4_000_000_000_000,
            };
            let now = Timestamp::from_nanos(nanos);
            assert_eq!(
                later_period(now, start),
                period_of(now) > start,
                "{nanos} ns, {start}"
            );
        }
    }

    #[test]
    fn an_idle_gap_spreads_the_last_period_over_the_gap() {
        let mut m = SendRateMeter::new(at(0.0));
        m.record(10.0, at(0.2));
        m.record(1.0, at(10.2)); // 10 units over [0, 10): 1 unit/s
        assert!((m.per_minute().unwrap() - 0.8 * 60.0).abs() < 1e-9);
    }
}

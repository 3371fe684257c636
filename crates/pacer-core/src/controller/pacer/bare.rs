//! Runs of bare throttles (no `Retry-After`): telling a bucket's leak from a window's count.

use crate::Timestamp;
use std::collections::VecDeque;
use std::time::Duration;

/// The least span of a run whose accepted units measure the server's pace, as a fraction of
/// `QuotaWindow` (and at least [`LEAST_SPAN`]).
const SPAN_FRACTION: f64 = 0.05;
const LEAST_SPAN: Duration = Duration::from_secs(1);
/// How far under what a sliding window would have given back the run's pace must be to say
/// "not a sliding window".
const BAND: f64 = 0.25;
/// Samples of the running count per window.
const SAMPLES_PER_WINDOW: u32 = 40;
/// A run's pace is a leak only if the server still accepted at least this fraction of what was
/// sent, now and at the run's first throttle: a bucket accepts its leak, a spent window next to
/// nothing until units leave it or it resets.
const LEAK_FLOOR: f64 = 0.25;

/// The units accepted over time, and the current run of bare throttles.
///
/// During a run the server refuses part of what we send, so what it accepts is what it can: a
/// bucket accepts its leak, whatever we sent before; a sliding window gives back what it took a
/// window earlier. A run that took clearly less than that was not refused by a sliding window,
/// and its pace is the server's: the window's count at the first throttle also held what a
/// bucket let through while it filled.
#[derive(Debug, Clone, Default)]
pub(super) struct BareRuns {
    /// The units accepted since the start.
    total: f64,
    /// `(when, total)`, about [`SAMPLES_PER_WINDOW`] a window, two windows and a span back.
    history: VecDeque<(Timestamp, f64)>,
    run: Option<Run>,
    /// The window the samples are spaced for, and their spacing.
    spacing: (Duration, Duration),
}

#[derive(Debug, Clone, Copy)]
struct Run {
    start: Timestamp,
    last: Timestamp,
    /// The total at the run's first throttle.
    at_start: f64,
    /// The send rate at the run's first throttle, units per minute.
    sent: f64,
}

impl BareRuns {
    /// `units` were accepted at `now`.
    pub(super) fn accepted(&mut self, units: f64, now: Timestamp, window: Duration) {
        self.total += units;
        if self.spacing.0 != window {
            self.spacing = (window, window / SAMPLES_PER_WINDOW);
        }
        // On every success: the sample and the pruning only when one is due.
        let step = self.spacing.1;
        if self
            .history
            .back()
            .is_some_and(|(at, _)| now.saturating_duration_since(*at) < step)
        {
            return;
        }
        self.history.push_back((now, self.total));
        let keep = window.mul_f64(2.0 + SPAN_FRACTION) + LEAST_SPAN;
        while self
            .history
            .get(1)
            .is_some_and(|(at, _)| now.saturating_duration_since(*at) > keep)
        {
            self.history.pop_front();
        }
    }

    /// A throttle at `now`, while `sent` units a minute go out: with no `Retry-After`, it starts
    /// or extends a run; once the run spans enough and took clearly less than a sliding window
    /// would have given back, but at least [`LEAK_FLOOR`] of what was sent (at the run's first
    /// throttle too: the run's cuts and pauses lower the send rate, and a floor that followed it
    /// down would take a spent window's trickle for a leak), the server's pace, units per minute
    /// (this process's).
    pub(super) fn throttled(
        &mut self,
        now: Timestamp,
        window: Duration,
        retry_after: Option<Duration>,
        sent: f64,
    ) -> Option<f64> {
        if retry_after.is_some() {
            return None;
        }
        let run = match self.run {
            Some(r) if now.saturating_duration_since(r.last) <= window => Run { last: now, ..r },
            _ => Run {
                start: now,
                last: now,
                at_start: self.total,
                sent,
            },
        };
        self.run = Some(run);
        let span = now.saturating_duration_since(run.start);
        if span < window.mul_f64(SPAN_FRACTION).max(LEAST_SPAN) {
            return None;
        }
        let taken = self.total - run.at_start;
        // What a sliding window would have given back: what it took a window earlier.
        let from = self.total_at(before(run.start, window)?)?;
        let to = self.total_at(before(now, window)?)?;
        let given_back = to - from;
        let pace = taken * 60.0 / span.as_secs_f64();
        (taken > 0.0
            && taken < given_back * (1.0 - BAND)
            && pace >= sent.max(run.sent) * LEAK_FLOOR)
            .then_some(pace)
    }

    /// The total at `at`: the last sample at or before it (`None` before the history).
    fn total_at(&self, at: Timestamp) -> Option<f64> {
        if self.history.front().is_none_or(|(first, _)| *first > at) {
            return None;
        }
        self.history
            .iter()
            .rev()
            .find(|(when, _)| *when <= at)
            .map(|(_, total)| *total)
    }
}

/// `d` before `t`, if the clock goes back that far.
fn before(t: Timestamp, d: Duration) -> Option<Timestamp> {
    (t.as_duration() >= d).then(|| t.saturating_sub(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_millis(ms)
    }

    const W: Duration = Duration::from_secs(10);

    /// `per_second` units a second from `from` to `to` (ms), in tenths of a second.
    fn accept(runs: &mut BareRuns, per_second: f64, from: u64, to: u64) {
        let mut t = from;
        while t < to {
            runs.accepted(per_second / 10.0, at(t), W);
            t += 100;
        }
    }

    #[test]
    fn a_bucket_s_leak_is_its_pace() {
        let mut runs = BareRuns::default();
        // 80 a second while the bucket fills, then its leak of 50 as it refuses the rest.
        accept(&mut runs, 80.0, 0, 30_000);
        assert_eq!(
            runs.throttled(at(30_000), W, None, 0.0),
            None,
            "a run starts"
        );
        accept(&mut runs, 50.0, 30_000, 32_000);
        let pace = runs.throttled(at(32_000), W, None, 0.0).expect("a bucket");
        assert!((pace - 3_000.0).abs() < 100.0, "{pace}");
    }

    #[test]
    fn a_sliding_window_giving_back_what_it_took_says_nothing() {
        let mut runs = BareRuns::default();
        // A climb into a window of 300 units: 20 a second, then 40, full at 10 s; from then on
        // the window gives back the 20s it took a window earlier, and that is what it accepts.
        accept(&mut runs, 20.0, 0, 5_000);
        accept(&mut runs, 40.0, 5_000, 10_000);
        assert_eq!(runs.throttled(at(10_000), W, None, 0.0), None);
        accept(&mut runs, 20.0, 10_000, 12_000);
        assert_eq!(runs.throttled(at(12_000), W, None, 0.0), None);
    }

    #[test]
    fn a_trickle_under_a_quarter_of_what_the_run_began_sending_is_no_leak() {
        // 50 a second (3,000 a minute) into a sliding window that a cut left full: its first
        // refusal, then 2 a second as units leave it, while the cuts and pauses bring what is
        // sent down to 200 a minute. A quarter of that (50) the trickle passes; a quarter of
        // the 3,000 sent at the run's start it does not.
        let mut runs = BareRuns::default();
        accept(&mut runs, 50.0, 0, 30_000);
        assert_eq!(runs.throttled(at(30_000), W, None, 3_000.0), None);
        accept(&mut runs, 2.0, 30_000, 34_000);
        assert_eq!(runs.throttled(at(34_000), W, None, 200.0), None);
        // A leak of 20 a second (1,200 a minute) is more than a quarter of the 3,000 sent at the
        // run's start: a pace.
        let mut runs = BareRuns::default();
        accept(&mut runs, 50.0, 0, 30_000);
        assert_eq!(runs.throttled(at(30_000), W, None, 3_000.0), None);
        accept(&mut runs, 20.0, 30_000, 34_000);
        let pace = runs.throttled(at(34_000), W, None, 200.0).expect("a leak");
        assert!((pace - 1_200.0).abs() < 100.0, "{pace}");
    }

    #[test]
    fn a_retry_after_or_a_young_history_says_nothing() {
        let mut runs = BareRuns::default();
        accept(&mut runs, 80.0, 0, 5_000);
        assert_eq!(runs.throttled(at(5_000), W, None, 0.0), None);
        accept(&mut runs, 50.0, 5_000, 7_000);
        assert_eq!(
            runs.throttled(at(7_000), W, None, 0.0),
            None,
            "no window back yet"
        );
        let mut runs = BareRuns::default();
        accept(&mut runs, 80.0, 0, 30_000);
        runs.throttled(at(30_000), W, None, 0.0);
        accept(&mut runs, 50.0, 30_000, 32_000);
        assert_eq!(
            runs.throttled(at(32_000), W, Some(Duration::from_secs(1)), 0.0),
            None
        );
    }
}

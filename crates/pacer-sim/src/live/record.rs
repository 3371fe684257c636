//! What a live run counts, in story time, turned into the same columns as `compare`'s.
//!
//! Everything is stamped with the story time at which it happened; what happens at or after the
//! end of the run is not counted (as in `compare`, whose run stops at its end), so a request cut
//! off by the end counts as unfinished.

use crate::engine::recorder::Recorder;
use crate::metrics::{RunMetrics, Series};
use crate::model::QuotaDrop;
use pacer_core::Timestamp;
use std::time::Duration;

/// How a request ended, from the caller's point of view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A 2xx.
    Succeeded,
    /// Pacer refused it, at its first attempt or a retry.
    Rejected,
    /// Its last attempt got a 429.
    GaveUp,
    /// Anything else: a transport error, another status; what it was.
    Error(String),
}

/// The counters and the per-second series of one mode's run: `compare`'s [`Recorder`], fed only
/// what happens before the end, plus the errors `compare` cannot have.
#[derive(Debug)]
pub(crate) struct LiveRecorder {
    end: Duration,
    counts: Recorder,
    errors: u64,
    first_error: Option<String>,
    quota_known: bool,
}

impl LiveRecorder {
    /// A recorder for a run of `seconds` story seconds; `quota_known`: whether the share can be
    /// computed.
    pub(crate) fn new(seconds: usize, quota_known: bool) -> Self {
        LiveRecorder {
            end: Duration::from_secs(seconds as u64),
            counts: Recorder::new(seconds),
            errors: 0,
            first_error: None,
            quota_known,
        }
    }

    /// `at` as a timestamp of the run, if it is before the end.
    fn counted(&self, at: Duration) -> Option<Timestamp> {
        (at < self.end).then(|| Timestamp::ZERO + at)
    }

    /// An attempt was sent at `at` after waiting `waited` (story time) for Pacer.
    pub(crate) fn sent(&mut self, at: Duration, waited: Duration) {
        if self.counted(at).is_some() {
            self.counts.sent(waited);
        }
    }

    /// The server accepted `units` of an attempt that `instance` sent at `at`.
    pub(crate) fn accepted(&mut self, at: Duration, instance: u32, units: u64) {
        if let Some(t) = self.counted(at) {
            self.counts.accepted_from(instance, units, t);
        }
    }

    /// The server answered 429 to an attempt sent at `at`.
    pub(crate) fn throttled(&mut self, at: Duration) {
        if let Some(t) = self.counted(at) {
            self.counts.throttled(t);
        }
    }

    /// A request ended at `at`.
    pub(crate) fn ended(&mut self, at: Duration, outcome: Outcome) {
        if self.counted(at).is_none() {
            return;
        }
        match outcome {
            Outcome::Succeeded => self.counts.succeeded(),
            Outcome::Rejected => self.counts.rejected(),
            Outcome::GaveUp => self.counts.gave_up(),
            Outcome::Error(what) => {
                self.errors += 1;
                self.first_error.get_or_insert(what);
            }
        }
    }

    /// The summed rate (story units per minute) and the quota available at `second`.
    pub(crate) fn sample(&mut self, second: usize, rate: Option<f64>, quota: f64) {
        if (second as u64) < self.end.as_secs() {
            self.counts.sample(second, rate, quota);
        }
    }

    /// The 429s counted so far.
    pub(crate) fn throttled_so_far(&self) -> u64 {
        self.counts.throttled_so_far()
    }

    /// Requests that ended in an error (not a column of the table), and the first error.
    pub(crate) fn errors(&self) -> (u64, Option<String>) {
        (self.errors, self.first_error.clone())
    }

    /// The row, as `compare`'s recorder computes it (`whole_run`: the instances that ran from
    /// the start to the end); the share is NaN (printed `n/a`) when the quota is unknown, and a
    /// request that ended in an error is not unfinished.
    pub(crate) fn finish(
        self,
        requests: u64,
        minutes: u32,
        drop: Option<QuotaDrop>,
        whole_run: &[u32],
    ) -> (RunMetrics, Series) {
        let (mut metrics, series) = self.counts.finish(requests, minutes, drop, whole_run);
        if !self.quota_known {
            metrics.share = f64::NAN;
        }
        metrics.unfinished = metrics.unfinished.saturating_sub(self.errors);
        (metrics, series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn counts_only_what_happens_before_the_end() {
        let mut r = LiveRecorder::new(120, true);
        r.sent(s(1.5), s(0.0));
        r.accepted(s(1.5), 0, 2);
        r.sent(s(2.0), s(3.0));
        r.throttled(s(2.0));
        r.ended(s(2.1), Outcome::GaveUp);
        r.ended(s(1.6), Outcome::Succeeded);
        r.sent(s(120.0), s(9.0));
        r.accepted(s(120.0), 1, 5);
        r.ended(s(120.5), Outcome::Succeeded);
        for second in 0..120 {
            r.sample(second, Some(100.0), 10.0);
        }
        let (m, series) = r.finish(5, 2, None, &[0, 1]);
        assert_eq!((m.attempts, m.accepted_units, m.throttled), (2, 2, 1));
        assert_eq!((m.succeeded, m.gave_up, m.unfinished), (1, 1, 3));
        assert_eq!(m.throughput, 1.0);
        assert_eq!(m.share, 0.1);
        assert_eq!(m.p95_wait_s, 3.0);
        assert_eq!(series.accepted[1], 2);
        assert_eq!(series.throttled[2], 1);
        // Instance 1's units came after the end: it got none of what was counted.
        assert_eq!(m.evenness, Some(0.0));
    }

    #[test]
    fn an_unknown_quota_has_no_share() {
        let r = LiveRecorder::new(60, false);
        let (m, _) = r.finish(0, 1, None, &[]);
        assert!(m.share.is_nan());
    }
}

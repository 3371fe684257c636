//! What a run counts as it goes, turned into the .NET adaptive limiter's columns at the end.

use crate::metrics::{RunMetrics, Series, percentile, recovery};
use crate::model::QuotaDrop;
use pacer_core::Timestamp;
use std::time::Duration;

/// Counters and the per-second series of one run.
#[derive(Debug)]
pub(crate) struct Recorder {
    series: Series,
    waits: Vec<Duration>,
    accepted_units: u64,
    succeeded: u64,
    throttled: u64,
    rejected: u64,
    gave_up: u64,
    attempts: u64,
}

impl Recorder {
    pub(crate) fn new(seconds: usize) -> Self {
        Recorder {
            series: Series::new(seconds),
            waits: Vec::new(),
            accepted_units: 0,
            succeeded: 0,
            throttled: 0,
            rejected: 0,
            gave_up: 0,
            attempts: 0,
        }
    }

    fn second(&self, now: Timestamp) -> Option<usize> {
        let s = now.as_duration().as_secs() as usize;
        (s < self.series.accepted.len()).then_some(s)
    }

    /// The 429s so far.
    pub(crate) fn throttled_so_far(&self) -> u64 {
        self.throttled
    }

    /// An attempt got its units after `waited` and was sent.
    pub(crate) fn sent(&mut self, waited: Duration) {
        self.attempts += 1;
        self.waits.push(waited);
    }

    /// The API accepted `units` at `now`.
    pub(crate) fn accepted(&mut self, units: u64, now: Timestamp) {
        self.accepted_units += units;
        if let Some(s) = self.second(now) {
            self.series.accepted[s] += units;
        }
    }

    /// The API answered a 429 at `now`.
    pub(crate) fn throttled(&mut self, now: Timestamp) {
        self.throttled += 1;
        if let Some(s) = self.second(now) {
            self.series.throttled[s] += 1;
        }
    }

    /// A request's response said it was accepted.
    pub(crate) fn succeeded(&mut self) {
        self.succeeded += 1;
    }

    /// A request was refused by its limiter.
    pub(crate) fn rejected(&mut self) {
        self.rejected += 1;
    }

    /// A request got a 429 on its last attempt.
    pub(crate) fn gave_up(&mut self) {
        self.gave_up += 1;
    }

    /// The summed rate and the available quota at the start of `second`.
    pub(crate) fn sample(&mut self, second: usize, rate: Option<f64>, quota: f64) {
        self.series.rate[second] = rate;
        self.series.quota[second] = quota;
    }

    /// The row of this run, and its series.
    pub(crate) fn finish(
        mut self,
        requests: u64,
        minutes: u32,
        drop: Option<QuotaDrop>,
    ) -> (RunMetrics, Series) {
        let throughput = self.accepted_units as f64 / f64::from(minutes.max(1));
        let mean_quota = self.series.mean_quota();
        let share = if mean_quota > 0.0 {
            throughput / mean_quota
        } else {
            0.0
        };
        let p95 = percentile(&mut self.waits, 95.0);
        let recovered = recovery(&self.series.accepted, drop);
        let finished = self.succeeded + self.rejected + self.gave_up;
        let metrics = RunMetrics {
            throughput,
            share,
            throttled: self.throttled,
            rejected: self.rejected,
            gave_up: self.gave_up,
            p95_wait_s: p95.as_secs_f64(),
            recovery_s: recovered.seconds(),
            recovery: recovered.as_str(),
            mean_quota,
            requests,
            succeeded: self.succeeded,
            accepted_units: self.accepted_units,
            attempts: self.attempts,
            unfinished: requests.saturating_sub(finished),
        };
        (metrics, self.series)
    }
}

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
    /// The units accepted from each instance, by its index.
    per_instance: Vec<u64>,
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
            per_instance: Vec::new(),
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

    /// The API accepted `units` from `instance` at `now`.
    pub(crate) fn accepted_from(&mut self, instance: u32, units: u64, now: Timestamp) {
        self.accepted(units, now);
        let i = instance as usize;
        if self.per_instance.len() <= i {
            self.per_instance.resize(i + 1, 0);
        }
        self.per_instance[i] += units;
    }

    /// The units accepted from the instance of `instances` that got the fewest over those of
    /// the one that got the most; `None` for fewer than two, or none accepted.
    fn evenness(&self, instances: &[u32]) -> Option<f64> {
        let of = |i: &u32| self.per_instance.get(*i as usize).copied().unwrap_or(0);
        let most = instances.iter().map(of).max()?;
        let fewest = instances.iter().map(of).min()?;
        (instances.len() >= 2 && most > 0).then(|| fewest as f64 / most as f64)
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

    /// The row of this run, and its series; `whole_run`: the instances that ran from the start
    /// to the end, whose accepted units the evenness compares.
    pub(crate) fn finish(
        mut self,
        requests: u64,
        minutes: u32,
        drop: Option<QuotaDrop>,
        whole_run: &[u32],
    ) -> (RunMetrics, Series) {
        let evenness = self.evenness(whole_run);
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
            evenness,
            identified: None,
            identified_by_fifth: None,
        };
        (metrics, self.series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evenness_is_the_fewest_units_over_the_most_among_the_whole_run_s_instances() {
        let mut r = Recorder::new(60);
        let t = Timestamp::from_secs_f64(1.0);
        r.accepted_from(0, 30, t);
        r.accepted_from(1, 60, t);
        r.accepted_from(2, 5, t); // joined later: not compared
        assert_eq!(r.evenness(&[0, 1]), Some(0.5));
        assert_eq!(r.evenness(&[0, 1, 2]), Some(5.0 / 60.0));
        // An instance that got nothing is the fewest.
        assert_eq!(r.evenness(&[0, 1, 3]), Some(0.0));
        // Fewer than two, or nothing accepted: no figure.
        assert_eq!(r.evenness(&[1]), None);
        assert_eq!(r.evenness(&[]), None);
        assert_eq!(Recorder::new(60).evenness(&[0, 1]), None);
        let (m, _) = r.finish(10, 1, None, &[0, 1]);
        assert_eq!((m.evenness, m.accepted_units), (Some(0.5), 95));
    }
}

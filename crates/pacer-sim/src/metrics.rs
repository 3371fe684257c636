//! The .NET adaptive limiter's columns, computed from what a run recorded.
//!
//! | column | what is counted |
//! |---|---|
//! | throughput | units the API accepted from our clients, per minute of the run |
//! | share | throughput divided by the mean quota available to our clients (the hidden quota, less the neighbour's share, 0 during a stop), a fraction 0..1 |
//! | throttled | 429 responses, every attempt counted |
//! | rejected | requests the limiter refused without sending them (queue full, or a wait longer than `MaxWait`, at any attempt, also when refused from the queue after a cut or a pause) |
//! | gave up | requests whose 4 attempts all got a 429 |
//! | p95 wait | the 95th percentile (nearest rank) of the waits for units of every attempt that got its units, those that went at once counting as 0; a Retry-After sleep of the `none` mode is not a wait for units |
//! | recovery | see [`recovery`] |

use crate::model::QuotaDrop;
use serde::Serialize;
use std::time::Duration;

/// What one run recorded, second by second.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Units the API accepted from our clients during each second `[s, s + 1)`.
    pub accepted: Vec<u64>,
    /// 429s the API answered during each second.
    pub throttled: Vec<u32>,
    /// The sum of the running instances' limiter rates at the start of each second (an instance
    /// that stopped no longer counts), in units per minute (an estimate of the whole budget);
    /// `None` in a mode without a limiter.
    pub rate: Vec<Option<f64>>,
    /// The quota available to our clients during each second, in units per minute.
    pub quota: Vec<f64>,
}

impl Series {
    /// A series of `seconds` empty seconds.
    #[must_use]
    pub fn new(seconds: usize) -> Self {
        Series {
            accepted: vec![0; seconds],
            throttled: vec![0; seconds],
            rate: vec![None; seconds],
            quota: vec![0.0; seconds],
        }
    }

    /// Accepted units in the 60 s up to the end of each second (fewer at the start): the
    /// accepted units per minute, as the API's window sees them.
    #[must_use]
    pub fn accepted_per_minute(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.accepted.len());
        let mut sum = 0;
        for (i, &a) in self.accepted.iter().enumerate() {
            sum += a;
            if i >= 60 {
                sum -= self.accepted[i - 60];
            }
            out.push(sum);
        }
        out
    }

    /// The mean of [`quota`](Self::quota), in units per minute.
    #[must_use]
    pub fn mean_quota(&self) -> f64 {
        if self.quota.is_empty() {
            return 0.0;
        }
        self.quota.iter().sum::<f64>() / self.quota.len() as f64
    }
}

/// How the accepted units came back after the quota did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The story has no drop, or the quota does not come back within the run: nothing to
    /// measure.
    NoDrop,
    /// The quota came back, but the accepted units never reached the mark before the run ended.
    Never,
    /// They reached it this many whole seconds after the quota came back.
    After(u64),
}

impl Recovery {
    /// The seconds, when it recovered.
    #[must_use]
    pub fn seconds(self) -> Option<u64> {
        match self {
            Recovery::After(s) => Some(s),
            _ => None,
        }
    }
}

/// The .NET adaptive limiter's recovery: seconds after the quota comes back until the accepted units reach 90% of
/// the minute before the drop.
///
/// Precisely: the mark is 90% of the units accepted per second during the 60 s before the drop
/// (fewer if the drop starts earlier). The accepted rate at a whole second `T` is the units
/// accepted during `[T - 1, T)`. Recovery is the least `s ≥ 0` such that the rate at
/// `until + s` reaches the mark: 0 if the last second of the drop already did (nothing was lost),
/// 1 if the first second after it did.
#[must_use]
pub fn recovery(accepted: &[u64], drop: Option<QuotaDrop>) -> Recovery {
    let Some(drop) = drop else {
        return Recovery::NoDrop;
    };
    let from = drop.from.as_secs() as usize;
    let until = drop.until.as_secs() as usize;
    if from == 0 || until <= from || until > accepted.len() {
        return Recovery::NoDrop;
    }
    let before = &accepted[from.saturating_sub(60)..from];
    let mark = 0.9 * before.iter().sum::<u64>() as f64 / before.len() as f64;
    accepted[until - 1..]
        .iter()
        .position(|&a| a as f64 >= mark)
        .map_or(Recovery::Never, |s| Recovery::After(s as u64))
}

/// The `p`-th percentile (0 < p ≤ 100) by nearest rank: the smallest value with at least `p`% of
/// the values at or below it. Zero for no values.
#[must_use]
pub fn percentile(values: &mut [Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    let index = rank.clamp(1, values.len()) - 1;
    *values.select_nth_unstable(index).1
}

/// One row of the comparison: the .NET adaptive limiter's columns and a few more for JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunMetrics {
    /// Accepted units per minute.
    pub throughput: f64,
    /// Throughput over the mean available quota, 0..1.
    pub share: f64,
    /// 429 responses.
    pub throttled: u64,
    /// Requests refused by the limiter.
    pub rejected: u64,
    /// Requests that got a 429 on each of their attempts.
    pub gave_up: u64,
    /// The 95th percentile wait for units, in seconds.
    pub p95_wait_s: f64,
    /// Recovery in seconds (`None`: see [`recovery`](Self::recovery)).
    pub recovery_s: Option<u64>,
    /// `after`, `never` or `no-drop`.
    pub recovery: &'static str,
    /// The mean quota available to our clients, units per minute.
    pub mean_quota: f64,
    /// Requests that arrived.
    pub requests: u64,
    /// Requests that ended accepted.
    pub succeeded: u64,
    /// Units accepted.
    pub accepted_units: u64,
    /// Attempts sent.
    pub attempts: u64,
    /// Requests still waiting, in flight or sleeping before a retry when the run ended.
    pub unfinished: u64,
    /// How evenly the instances that ran the whole run shared what was accepted: the units
    /// accepted from the one that got the fewest over those of the one that got the most (1: an
    /// even split). `None` with fewer than two such instances.
    pub evenness: Option<f64>,
    /// What the first instance identified of the server's limiter at the end of the run
    /// ([`pacer_core::ServerModel`]); `None` for modes without one, or before a refusal.
    pub identified: Option<Identified>,
    /// The same at the first instance's fifth refusal.
    pub identified_by_fifth: Option<Identified>,
}

/// A [`pacer_core::ServerModel`] as the report prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Identified {
    /// `sliding`, `fixed` or `bucket`.
    pub kind: &'static str,
    /// Units per window, for the whole budget.
    pub limit: f64,
    /// The window in seconds.
    pub window_s: f64,
    /// How likely the kind is, 0 to 1.
    pub confidence: f64,
}

impl From<&pacer_core::ServerModel> for Identified {
    fn from(m: &pacer_core::ServerModel) -> Self {
        Identified {
            kind: m.kind.as_str(),
            limit: m.limit,
            window_s: m.window.as_secs_f64(),
            confidence: m.confidence,
        }
    }
}

/// What a client learned of the server's limiter ([`Client::learned`](crate::modes::Client::learned)).
#[derive(Debug, Clone, Default)]
pub struct Learned {
    /// At its fifth refusal.
    pub by_fifth: Option<pacer_core::ServerModel>,
    /// Now.
    pub now: Option<pacer_core::ServerModel>,
}

impl Recovery {
    /// `after`, `never` or `no-drop`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Recovery::NoDrop => "no-drop",
            Recovery::Never => "never",
            Recovery::After(_) => "after",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop(from: u64, until: u64) -> Option<QuotaDrop> {
        Some(QuotaDrop {
            from: Duration::from_secs(from),
            until: Duration::from_secs(until),
        })
    }

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn p95_is_the_nearest_rank() {
        let mut v = ms(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&mut v, 95.0), Duration::from_millis(95));
        let mut v = ms(&[5, 1, 3]);
        assert_eq!(percentile(&mut v, 95.0), Duration::from_millis(5));
        let mut v = ms(&(1..=20).rev().collect::<Vec<_>>());
        assert_eq!(percentile(&mut v, 95.0), Duration::from_millis(19));
        let mut v = ms(&[0; 40]);
        assert_eq!(percentile(&mut v, 95.0), Duration::ZERO);
        assert_eq!(percentile(&mut [], 95.0), Duration::ZERO);
    }

    #[test]
    fn recovery_counts_from_the_return_of_the_quota() {
        // 10 per second before, 4 during [100, 160), then 5, 8, 9, 10.
        let mut a = vec![10; 100];
        a.extend([4; 60]);
        a.extend([5, 8, 9, 10, 10]);
        assert_eq!(
            recovery(&a, drop(100, 160)),
            Recovery::After(3),
            "9 ≥ 9 at [162, 163)"
        );
    }

    #[test]
    fn no_loss_is_zero_seconds() {
        let a = vec![7; 200];
        assert_eq!(recovery(&a, drop(100, 160)), Recovery::After(0));
    }

    #[test]
    fn never_recovering_and_no_drop_are_told_apart() {
        let mut a = vec![10; 100];
        a.extend([1; 100]);
        assert_eq!(recovery(&a, drop(100, 160)), Recovery::Never);
        assert_eq!(recovery(&a, None), Recovery::NoDrop);
        assert_eq!(
            recovery(&a, drop(100, 400)),
            Recovery::NoDrop,
            "back after the end"
        );
        assert_eq!(Recovery::Never.seconds(), None);
        assert_eq!(Recovery::After(4).seconds(), Some(4));
    }

    #[test]
    fn a_drop_in_the_first_minute_uses_what_came_before() {
        let mut a = vec![6; 30];
        a.extend([0; 10]);
        a.extend([5, 6]);
        assert_eq!(recovery(&a, drop(30, 40)), Recovery::After(2));
    }

    #[test]
    fn accepted_per_minute_slides_over_60_seconds() {
        let mut s = Series::new(120);
        s.accepted.iter_mut().for_each(|a| *a = 2);
        s.accepted[0] = 100;
        let m = s.accepted_per_minute();
        assert_eq!(m[0], 100);
        assert_eq!(m[59], 100 + 59 * 2);
        assert_eq!(m[60], 120, "the first second has left");
        assert_eq!(m[119], 120);
    }
}

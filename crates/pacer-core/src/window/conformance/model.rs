//! The exact sliding log that a strict window is checked against, and random operation plans.
//!
//! A store decides on its own clock; every result returns that `now`. The checker keeps a log of
//! every event the store recorded, stamped with the `now` of the call that recorded it, and checks
//! each decision against exact sliding logs of span `N` and `N + 1` frames:
//!
//! * granted: the log of span `N` had room (never more than `limit` in any `N`-frame span);
//! * denied: the log of span `N + 1` had no room (at most one frame of extra delay);
//! * ETA: not before the exact span-`N` ETA (never early), not after the span-`N + 1` one;
//! * a retry at the ETA, with nothing recorded meanwhile, succeeds.
//!
//! Because the checks use the store's own `now`, they are exact on a real clock too: no
//! assertion depends on how long anything took.

use crate::ManualClock;
use crate::window::{WindowError, WindowGeometry, WindowStore, WindowTime};
use proptest::prelude::*;
use std::time::Duration;

/// Events recorded by a store, each with the store's time of the call that recorded it.
#[derive(Debug, Clone, Default)]
pub struct SlidingLog {
    events: Vec<(u64, u64)>,
}

impl SlidingLog {
    /// An empty log.
    #[must_use]
    pub fn new() -> Self {
        SlidingLog::default()
    }

    /// Records `count` events at `t` (µs).
    pub fn record(&mut self, t: u64, count: u64) {
        if count > 0 {
            self.events.push((t, count));
        }
    }

    /// Events with a time in `(t − span, t]`.
    #[must_use]
    pub fn count(&self, t: u64, span: u64) -> u64 {
        self.events
            .iter()
            .filter(|(at, _)| *at <= t && at + span > t)
            .map(|(_, c)| c)
            .sum()
    }

    /// The earliest time `≥ t` at which a log of span `span` has room for `count` under `limit`,
    /// if nothing else is recorded. Nothing (a count of 0) always fits.
    #[must_use]
    pub fn eta(&self, t: u64, span: u64, limit: u64, count: u64) -> u64 {
        if count == 0 || self.count(t, span) + count <= limit {
            return t;
        }
        let mut live: Vec<(u64, u64)> = self
            .events
            .iter()
            .copied()
            .filter(|(at, _)| *at <= t && at + span > t)
            .collect();
        live.sort_unstable();
        let mut left: u64 = live.iter().map(|(_, c)| c).sum();
        let mut i = 0;
        while i < live.len() {
            let at = live[i].0;
            while i < live.len() && live[i].0 == at {
                left -= live[i].1;
                i += 1;
            }
            if left + count <= limit {
                return at + span;
            }
        }
        unreachable!("count ≤ limit fits in an empty log")
    }
}

/// One step of a random plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Let time pass (µs).
    Advance(u64),
    /// `try_take`; when denied and `retry` is set, wait until the ETA and try again.
    Try {
        /// The limit of the call.
        limit: u64,
        /// Events asked for.
        count: u64,
        /// Retry at the ETA when denied.
        retry: bool,
    },
    /// `fill`.
    Fill {
        /// The limit of the call.
        limit: u64,
        /// Events asked for.
        count: u64,
    },
    /// `events`.
    Events {
        /// Events to record.
        count: u64,
    },
    /// `eta`.
    Eta {
        /// The limit of the call.
        limit: u64,
        /// Events asked about.
        count: u64,
    },
}

/// A geometry and the operations to run on one key.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The window.
    pub geometry: WindowGeometry,
    /// The steps.
    pub ops: Vec<Op>,
}

/// How time passes between operations.
#[derive(Debug, Clone, Copy)]
pub enum Time<'a> {
    /// Advance a manual clock that the store reads.
    Manual(&'a ManualClock),
    /// Sleep on the real clock (the store reads its own).
    Real,
}

impl Time<'_> {
    async fn pass(&self, d: Duration) {
        match self {
            Time::Manual(clock) => clock.advance(d),
            Time::Real => tokio::time::sleep(d).await,
        }
    }
}

/// Random plans: up to `max_frames` frames of a length drawn from `frame_lengths_us`, counter
/// widths of 2 to 6 bits, and up to `max_ops` operations with limits up to the capacity, counts
/// around the limit, pauses of up to a few frames and sometimes more than a window.
pub fn plans(
    max_frames: u32,
    frame_lengths_us: std::ops::RangeInclusive<u64>,
    max_ops: usize,
) -> impl Strategy<Value = Plan> {
    (1..=max_frames, frame_lengths_us, 2u8..=6)
        .prop_flat_map(move |(frames, len, width)| {
            let g = WindowGeometry::new(frames, Duration::from_micros(len), width)
                .expect("the strategy stays in range");
            let cap = g.capacity();
            let window = len * (u64::from(frames) + 1);
            let limit = 0..=cap;
            let op = prop_oneof![
                3 => prop_oneof![0..=len * 3, Just(len), 0..=window * 2].prop_map(Op::Advance),
                4 => (limit.clone(), 0..=cap, any::<bool>())
                    .prop_map(|(limit, count, retry)| Op::Try { limit, count: count.min(limit + 1), retry }),
                2 => (limit.clone(), 0..=cap).prop_map(|(limit, count)| Op::Fill { limit, count: count.min(limit) }),
                1 => (0..=cap / 2 + 1).prop_map(|count| Op::Events { count }),
                1 => (limit, 0..=cap + 1).prop_map(|(limit, count)| Op::Eta { limit, count }),
            ];
            (Just(g), proptest::collection::vec(op, 1..=max_ops))
        })
        .prop_map(|(geometry, ops)| Plan { geometry, ops })
}

/// Runs `plan` on `key` of `store` and checks every result against the exact sliding logs.
/// Panics with the failing step.
pub async fn check_plan(store: &dyn WindowStore, time: Time<'_>, key: &str, plan: &Plan) {
    let g = plan.geometry;
    let span_n = g.frame_length_us() * u64::from(g.frames());
    let span_n1 = span_n + g.frame_length_us();
    let mut log = SlidingLog::new();
    let mut last_now = 0u64;
    let mut see = |now: WindowTime, step: usize| {
        let now = now.as_micros();
        assert!(now >= last_now, "step {step}: the store's clock went back");
        last_now = now;
        now
    };
    for (step, op) in plan.ops.iter().enumerate() {
        match *op {
            Op::Advance(us) => time.pass(Duration::from_micros(us)).await,
            Op::Try {
                limit,
                count,
                retry,
            } => {
                let r = store.try_take(key, g, limit, count).await;
                if count > limit {
                    assert!(
                        matches!(r, Err(WindowError::Never { .. })),
                        "step {step}: {r:?}"
                    );
                    continue;
                }
                let r = r.unwrap_or_else(|e| panic!("step {step}: {op:?}: {e}"));
                let t = see(r.now, step);
                check_try(&log, t, span_n, span_n1, limit, count, r.taken, r.eta, step);
                log.record(t, r.taken);
                if r.taken == 0 && count > 0 && retry {
                    time.pass(r.wait()).await;
                    let again = store.try_take(key, g, limit, count).await.unwrap();
                    let t2 = see(again.now, step);
                    if t2 >= r.eta.as_micros() {
                        assert_eq!(again.taken, count, "step {step}: a retry at the ETA failed");
                    }
                    check_try(
                        &log,
                        t2,
                        span_n,
                        span_n1,
                        limit,
                        count,
                        again.taken,
                        again.eta,
                        step,
                    );
                    log.record(t2, again.taken);
                }
            }
            Op::Fill { limit, count } => {
                let r = store
                    .fill(key, g, limit, count)
                    .await
                    .unwrap_or_else(|e| panic!("step {step}: {op:?}: {e}"));
                let t = see(r.now, step);
                assert!(r.taken <= count, "step {step}");
                if r.taken > 0 {
                    assert!(
                        log.count(t, span_n) + r.taken <= limit,
                        "step {step}: fill took too much"
                    );
                }
                if r.taken < count {
                    assert!(
                        log.count(t, span_n1) + r.taken >= limit,
                        "step {step}: fill left room unused"
                    );
                }
                log.record(t, r.taken);
                check_eta(
                    &log,
                    t,
                    span_n,
                    span_n1,
                    limit,
                    count - r.taken,
                    r.eta,
                    step,
                );
            }
            Op::Events { count } => match store.events(key, g, count).await {
                Ok(r) => {
                    let t = see(r.now, step);
                    let (lo, hi) = (log.count(t, span_n), log.count(t, span_n1));
                    assert!(
                        (lo + count..=hi + count).contains(&r.total),
                        "step {step}: total {} outside {}..={}",
                        r.total,
                        lo + count,
                        hi + count
                    );
                    log.record(t, count);
                }
                Err(WindowError::Overflow {
                    total, capacity, ..
                }) => {
                    assert_eq!(capacity, g.capacity());
                    assert!(total + count > capacity, "step {step}: a false overflow");
                }
                Err(e) => panic!("step {step}: {op:?}: {e}"),
            },
            Op::Eta { limit, count } => {
                let r = store
                    .eta(key, g, limit, count)
                    .await
                    .unwrap_or_else(|e| panic!("step {step}: {op:?}: {e}"));
                let t = see(r.now, step);
                match r.eta {
                    None => assert!(count > limit, "step {step}: never, for {count} ≤ {limit}"),
                    Some(eta) => {
                        assert!(count <= limit, "step {step}");
                        check_eta(&log, t, span_n, span_n1, limit, count, eta, step);
                    }
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn check_try(
    log: &SlidingLog,
    t: u64,
    span_n: u64,
    span_n1: u64,
    limit: u64,
    count: u64,
    taken: u64,
    eta: WindowTime,
    step: usize,
) {
    if count == 0 {
        assert_eq!(
            (taken, eta.as_micros()),
            (0, t),
            "step {step}: a zero-count try"
        );
        return;
    }
    if taken > 0 {
        assert_eq!(taken, count, "step {step}: try is all or nothing");
        assert!(
            log.count(t, span_n) + count <= limit,
            "step {step}: granted {count} over {} in the last N frames, limit {limit}",
            log.count(t, span_n)
        );
        assert_eq!(
            eta.as_micros(),
            t,
            "step {step}: a granted try's ETA is now"
        );
    } else {
        assert!(
            log.count(t, span_n1) + count > limit,
            "step {step}: denied {count} though the last N+1 frames hold {}, limit {limit}",
            log.count(t, span_n1)
        );
        check_eta(log, t, span_n, span_n1, limit, count, eta, step);
    }
}

#[allow(clippy::too_many_arguments)]
fn check_eta(
    log: &SlidingLog,
    t: u64,
    span_n: u64,
    span_n1: u64,
    limit: u64,
    count: u64,
    eta: WindowTime,
    step: usize,
) {
    let eta = eta.as_micros();
    let (early, late) = (
        log.eta(t, span_n, limit, count),
        log.eta(t, span_n1, limit, count),
    );
    assert!(
        eta >= early,
        "step {step}: ETA {eta} before the exact {early}"
    );
    assert!(
        eta <= late,
        "step {step}: ETA {eta} after {late} (more than a frame late)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_counts_a_half_open_span() {
        let mut log = SlidingLog::new();
        log.record(100, 2);
        log.record(150, 3);
        log.record(150, 0);
        assert_eq!(log.count(150, 50), 3, "100 is not in (100, 150]");
        assert_eq!(log.count(150, 51), 5);
        assert_eq!(log.count(99, 1_000), 0, "future events are not counted");
    }

    #[test]
    fn the_log_eta_drops_the_oldest_first() {
        let mut log = SlidingLog::new();
        log.record(100, 2);
        log.record(150, 3);
        assert_eq!(log.eta(160, 100, 5, 0), 160);
        assert_eq!(
            log.eta(160, 100, 1, 0),
            160,
            "nothing fits even in a full window"
        );
        assert_eq!(log.eta(160, 100, 5, 1), 200, "once the pair at 100 left");
        assert_eq!(log.eta(160, 100, 5, 2), 200);
        assert_eq!(
            log.eta(160, 100, 5, 3),
            250,
            "3 + 3 > 5: the three at 150 must leave too"
        );
    }
}

use super::{LimiterKind, RECORD_CAPACITY, Record};
use crate::Timestamp;
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;

fn ms(ms: u64) -> Timestamp {
    Timestamp::from_nanos(ms * 1_000_000)
}

/// A server's limiter, exact to the nanosecond, that says when a refused request would fit.
enum Truth {
    Sliding(Vec<u64>),
    /// Boundaries at `boundary + k × window`; the units of the current window and its start.
    Fixed {
        boundary: u64,
        start: u64,
        used: u64,
    },
    /// The level in units and when it was last drained.
    Bucket {
        level: f64,
        at: u64,
    },
}

struct Server {
    truth: Truth,
    limit: u64,
    window: u64,
}

impl Server {
    fn new(kind: LimiterKind, limit: u64, window_secs: u64) -> Self {
        let window = window_secs * SECOND;
        let truth = match kind {
            LimiterKind::SlidingWindow => Truth::Sliding(Vec::new()),
            LimiterKind::FixedWindow => Truth::Fixed {
                boundary: window / 3,
                start: 0,
                used: 0,
            },
            LimiterKind::Bucket => Truth::Bucket { level: 0.0, at: 0 },
        };
        Server {
            truth,
            limit,
            window,
        }
    }

    /// `Ok` if a unit at `at` fits, else the wait until it would.
    fn offer(&mut self, at: u64) -> Result<(), u64> {
        let (limit, window) = (self.limit, self.window);
        match &mut self.truth {
            Truth::Sliding(log) => {
                log.retain(|&t| t + window > at);
                if (log.len() as u64) < limit {
                    log.push(at);
                    Ok(())
                } else {
                    Err(log[0] + window - at)
                }
            }
            Truth::Fixed {
                boundary,
                start,
                used,
            } => {
                let into = (at + window - *boundary % window) % window;
                if at.wrapping_sub(into) != *start {
                    *start = at.wrapping_sub(into);
                    *used = 0;
                }
                if *used < limit {
                    *used += 1;
                    Ok(())
                } else {
                    Err(window - into)
                }
            }
            Truth::Bucket { level, at: last } => {
                let pace = limit as f64 / window as f64;
                *level = (*level - (at - *last) as f64 * pace).max(0.0);
                *last = at;
                if *level + 1.0 <= limit as f64 {
                    *level += 1.0;
                    Ok(())
                } else {
                    Err(((*level + 1.0 - limit as f64) / pace) as u64)
                }
            }
        }
    }
}

/// `clients` clients sending a unit every `gap` ms (give or take a fifth, from a fixed LCG)
/// for `secs` seconds; each honours the `Retry-After` (the wait's whole seconds, rounded up)
/// of a refusal. Client 0's record.
fn run(server: &mut Server, clients: usize, gap_ms: u64, secs: u64) -> Record {
    let mut record = Record::new();
    let mut next: Vec<u64> = (0..clients as u64).map(|c| c * 7_000_000).collect();
    let mut seed = 42u64;
    loop {
        let (client, &at) = next
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| **t)
            .expect("clients");
        if at >= secs * SECOND {
            return record;
        }
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let jitter = (seed >> 33) % (gap_ms * 400_000 + 1);
        let gap = gap_ms * 800_000 + jitter;
        let sent = Timestamp::from_nanos(at);
        match server.offer(at) {
            Ok(()) => {
                if client == 0 {
                    record.accepted(sent, 1);
                }
                next[client] = at + gap;
            }
            Err(wait) => {
                let secs = wait.div_ceil(SECOND).max(1);
                if client == 0 {
                    record.refused(sent, 1, Some(Duration::from_secs(secs)));
                }
                next[client] = at + secs * SECOND;
            }
        }
    }
}

#[test]
fn a_record_without_a_refusal_says_nothing() {
    let mut record = Record::new();
    for i in 0..100 {
        record.accepted(ms(i * 100), 1);
    }
    assert_eq!(record.estimate(1), None);
}

#[test]
fn a_fixed_window_is_placed_by_its_retry_afters() {
    let mut server = Server::new(LimiterKind::FixedWindow, 30, 10);
    let record = run(&mut server, 1, 200, 120);
    let model = record.estimate(1).expect("refusals");
    assert_eq!(model.kind, LimiterKind::FixedWindow, "{model:?}");
    assert_eq!(model.window, Duration::from_secs(10));
    assert!((model.limit - 30.0).abs() <= 3.0, "{model:?}");
    let boundary = model.boundary.expect("a fixed window's boundary");
    assert!(boundary.as_secs_f64() - 10.0 / 3.0 < 1.0, "{model:?}");
    assert!(model.confidence > 0.9, "{model:?}");
    assert_eq!(model.penalty, None);
}

#[test]
fn a_bucket_is_told_by_its_short_retry_afters() {
    let mut server = Server::new(LimiterKind::Bucket, 30, 10);
    let record = run(&mut server, 1, 200, 120);
    let model = record.estimate(1).expect("refusals");
    assert_eq!(model.kind, LimiterKind::Bucket, "{model:?}");
    assert_eq!(model.window, Duration::from_secs(10));
    assert!((model.limit - 30.0).abs() <= 6.0, "{model:?}");
}

#[test]
fn a_sliding_window_is_told_after_a_burst() {
    let mut server = Server::new(LimiterKind::SlidingWindow, 30, 10);
    // A client faster than the limit: a burst of 30, then what comes back as it slides.
    let record = run(&mut server, 1, 50, 120);
    let model = record.estimate(1).expect("refusals");
    assert_eq!(model.kind, LimiterKind::SlidingWindow, "{model:?}");
    assert_eq!(model.window, Duration::from_secs(10));
    assert!((model.limit - 30.0).abs() <= 3.0, "{model:?}");
}

#[test]
fn two_processes_each_see_their_share_and_the_limit_is_the_whole() {
    let mut server = Server::new(LimiterKind::FixedWindow, 60, 10);
    let record = run(&mut server, 2, 200, 120);
    let model = record.estimate(2).expect("refusals");
    assert_eq!(model.kind, LimiterKind::FixedWindow, "{model:?}");
    assert!((model.limit - 60.0).abs() <= 6.0, "{model:?}");
}

#[test]
fn the_fields_name_the_limit_and_the_window() {
    let mut server = Server::new(LimiterKind::FixedWindow, 30, 10);
    let mut record = run(&mut server, 1, 200, 60);
    record.named(30, Duration::from_secs(10));
    let model = record.estimate(3).expect("refusals");
    assert!(model.from_fields);
    assert_eq!((model.limit, model.window), (30.0, Duration::from_secs(10)));
    assert_eq!(model.kind, LimiterKind::FixedWindow);
}

#[test]
fn a_retry_after_longer_than_the_window_is_a_penalty() {
    let mut server = Server::new(LimiterKind::FixedWindow, 30, 10);
    let mut record = run(&mut server, 1, 200, 120);
    record.refused(ms(120_500), 1, Some(Duration::from_secs(60)));
    let model = record.estimate(1).expect("refusals");
    assert_eq!(model.window, Duration::from_secs(10), "{model:?}");
    assert_eq!(model.penalty, Some(Duration::from_secs(60)));
}

#[test]
fn the_record_is_bounded_and_kept_in_send_order() {
    let mut record = Record::new();
    for i in 0..RECORD_CAPACITY as u64 + 10 {
        record.accepted(ms(i * 10), 1);
    }
    // A late answer to an earlier send.
    record.refused(ms(5), 1, None);
    assert_eq!(record.len(), RECORD_CAPACITY);
    record.accepted(ms(0), 0);
    assert_eq!(
        record.len(),
        RECORD_CAPACITY,
        "a send of no units is not kept"
    );
    assert_eq!(record.refusals(), 1);
}

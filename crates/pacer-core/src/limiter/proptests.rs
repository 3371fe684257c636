//! Invariants of the limiter under random sequences of requests and responses.

use super::*;
use crate::Timestamp;
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Debug, Clone)]
enum Event {
    Acquire(u64),
    Success,
    Throttled(Option<u64>),
    Neutral,
    Instances(u32),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => (1u64..20).prop_map(Event::Acquire),
        4 => Just(Event::Success),
        2 => proptest::option::of(0u64..120).prop_map(Event::Throttled),
        1 => Just(Event::Neutral),
        1 => (1u32..5).prop_map(Event::Instances),
    ]
}

fn options(controller: ControllerKind) -> LimiterOptions {
    LimiterOptions {
        controller,
        initial_units_per_minute: Some(600.0),
        min_units_per_minute: 60.0,
        max_units_per_minute: 3000.0,
        queue_limit: 50,
        max_wait: Duration::from_secs(20),
        decrease_cooldown: Duration::from_secs(1),
        ..LimiterOptions::default()
    }
}

/// Everything of a snapshot but the counters, which a refusal does move.
fn without_counters(mut s: LimiterSnapshot) -> LimiterSnapshot {
    s.stats = LimiterStats::default();
    s
}

type Grant = (usize, Timestamp, u64);

/// Grants waiting requests at their due times from `now` up to `limit`.
fn serve_until(
    c: &mut LimiterCore,
    mut now: Timestamp,
    limit: Timestamp,
    tickets: &HashMap<Ticket, (usize, u64)>,
    grants: &mut Vec<Grant>,
) {
    while let Some(at) = c.next_grant_at(now) {
        if at > limit {
            break;
        }
        now = at;
        let (t, _) = c.pop_ready(now).expect("due at its estimate");
        let (i, u) = tickets[&t];
        grants.push((i, now, u));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The rate never leaves this process's share of [Min, Max], whatever happens; and a
    /// refused request changes nothing but the refusal counters.
    #[test]
    fn the_rate_stays_within_bounds_and_a_refusal_changes_nothing(
        controller in proptest::sample::select(ControllerKind::ALL.to_vec()),
        steps in proptest::collection::vec((0u64..3_000, event()), 1..300),
    ) {
        let mut c = LimiterCore::new(options(controller), Timestamp::ZERO).unwrap();
        let mut now = Timestamp::ZERO;
        for (dt, e) in steps {
            now += Duration::from_millis(dt);
            while c.pop_ready(now).is_some() {}
            match e {
                Event::Acquire(units) => {
                    let before = without_counters(c.snapshot(now));
                    if c.acquire(units, now).is_err() {
                        prop_assert_eq!(without_counters(c.snapshot(now)), before);
                    }
                }
                Event::Success | Event::Neutral | Event::Throttled(_) => {
                    let signal = match e {
                        Event::Success => Signal::Success,
                        Event::Neutral => Signal::Neutral,
                        Event::Throttled(ra) => Signal::Throttled {
                            retry_after: ra.map(Duration::from_secs),
                        },
                        _ => unreachable!(),
                    };
                    let sent_at = now.saturating_sub(Duration::from_millis(dt / 2));
                    let _ = c.on_response(Feedback { units: 1, sent_at, signal }, now);
                }
                Event::Instances(n) => {
                    let _ = c.set_instance_count(n, now).unwrap();
                }
            }
            let s = c.snapshot(now);
            prop_assert!(s.rate >= s.min_rate - 1e-9 && s.rate <= s.max_rate + 1e-9,
                "rate {} outside [{}, {}]", s.rate, s.min_rate, s.max_rate);
            prop_assert!(s.queue_len <= 50);
        }
    }

    /// At a fixed rate, requests get their units in arrival order, and in any interval the units
    /// granted never exceed rate × interval + the bucket's capacity.
    #[test]
    fn grants_are_fifo_and_never_exceed_rate_times_interval_plus_burst(
        rate in 60.0f64..6000.0,
        burst_ms in 100u64..5_000,
        arrivals in proptest::collection::vec((0u64..400, 1u64..5), 1..400),
    ) {
        let o = LimiterOptions {
            initial_units_per_minute: Some(rate),
            min_units_per_minute: rate,
            max_units_per_minute: rate,
            burst: Duration::from_millis(burst_ms),
            queue_limit: usize::MAX,
            max_wait: Duration::MAX,
            ..LimiterOptions::default()
        };
        let mut c = LimiterCore::new(o, Timestamp::ZERO).unwrap();
        let capacity = rate / 60.0 * burst_ms as f64 / 1000.0;
        // Keep every cost within the bucket, so the bound is exact.
        let arrivals: Vec<_> = arrivals
            .into_iter()
            .map(|(dt, u)| (dt, u.min(capacity.floor().max(1.0) as u64)))
            .filter(|(_, u)| (*u as f64) <= capacity)
            .collect();
        let mut now = Timestamp::ZERO;
        let mut tickets = HashMap::new();
        let mut grants: Vec<Grant> = Vec::new();
        for (i, (dt, units)) in arrivals.iter().copied().enumerate() {
            let arrival = now + Duration::from_millis(dt);
            serve_until(&mut c, now, arrival, &tickets, &mut grants);
            now = arrival;
            match c.acquire(units, now).unwrap() {
                Acquired::Now => grants.push((i, now, units)),
                Acquired::Queued { ticket, .. } => {
                    tickets.insert(ticket, (i, units));
                }
            }
        }
        serve_until(&mut c, now, Timestamp::MAX, &tickets, &mut grants);
        prop_assert_eq!(grants.len(), arrivals.len());
        for (k, g) in grants.iter().enumerate() {
            prop_assert_eq!(g.0, k, "served out of order");
        }
        for a in 0..grants.len() {
            let mut units = 0.0;
            for (n, g) in grants[a..].iter().enumerate() {
                units += g.2 as f64;
                let span = (g.1 - grants[a].1).as_secs_f64();
                // The bucket grants a request that is short of its units by at most a millionth
                // of them (at least of one unit: its float rounding), so each grant of the span
                // may add that much.
                let slack = 1e-6 * (units + (n + 1) as f64);
                prop_assert!(units <= rate / 60.0 * span + capacity + slack,
                    "{units} units in {span} s at {rate}/min with a bucket of {capacity}");
            }
        }
    }
}

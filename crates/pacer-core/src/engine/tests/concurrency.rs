//! `MaxConcurrent` through the engine: the fast path and the wait take a slot, the response or
//! the failed send gives it back, a wait for one counts in `MaxWait`, and a wait dropped after
//! its grant gives it back.

use super::*;
use crate::{ManualClock, MaxConcurrent};
use std::num::NonZeroU32;

pub(crate) fn capped(key: &str, n: u32) -> (Engine, Arc<Endpoint>, ManualClock) {
    let manual = ManualClock::new();
    let engine = Engine::new(100, secs(3600));
    let options = LimiterOptions {
        max_concurrent: NonZeroU32::new(n),
        ..LimiterOptions::default()
    };
    let clock: Arc<dyn Clock> = Arc::new(manual.clone());
    let make = || Limiter::builder(options).clock(clock).build().unwrap();
    let endpoint = engine.endpoint(key, Timestamp::ZERO, make, |_| {});
    (engine, endpoint, manual)
}

pub(crate) fn in_flight(endpoint: &Endpoint) -> u32 {
    endpoint.limiter().snapshot().in_flight
}

#[test]
fn the_fast_path_takes_a_slot_and_the_answer_or_the_failure_gives_it_back() {
    let (engine, endpoint, _) = capped("a", 1);
    let rules = Rules::default();
    let attempt = Attempt::new(1, at(0), secs(30));
    let mut tokens = 0;
    assert_eq!(
        engine.go_now(&rules, &endpoint, &attempt, &mut tokens),
        Some(at(0))
    );
    assert_eq!(
        engine.go_now(&rules, &endpoint, &attempt, &mut tokens),
        None,
        "no slot"
    );
    let _ = engine.after(&endpoint, read(200, &[]), 1, at(0), at(0));
    assert_eq!(in_flight(&endpoint), 0);
    assert!(
        engine
            .go_now(&rules, &endpoint, &attempt, &mut tokens)
            .is_some()
    );
    let _ = engine.failed(&endpoint, 1, at(0));
    assert_eq!(in_flight(&endpoint), 0);
    // A request of no units was never granted: its answer gives back nothing.
    assert!(
        engine
            .go_now(&rules, &endpoint, &attempt, &mut tokens)
            .is_some()
    );
    let _ = engine.after(&endpoint, read(200, &[]), 0, at(0), at(0));
    let _ = engine.failed(&endpoint, 0, at(0));
    assert_eq!(in_flight(&endpoint), 1);
}

#[test]
fn a_request_s_own_cap_holds_it_on_the_fast_path() {
    let (engine, endpoint) = engine_and_endpoint("a");
    let rules = Rules::default();
    let plain = Attempt::new(1, at(0), secs(30));
    let own = plain.clone().max_concurrent(Some(MaxConcurrent(2).cap()));
    let mut tokens = 0;
    assert!(
        engine
            .go_now(&rules, &endpoint, &own, &mut tokens)
            .is_some()
    );
    assert!(
        engine
            .go_now(&rules, &endpoint, &plain, &mut tokens)
            .is_some()
    );
    assert_eq!(engine.go_now(&rules, &endpoint, &own, &mut tokens), None);
    assert!(
        engine
            .go_now(&rules, &endpoint, &plain, &mut tokens)
            .is_some()
    );
    assert_eq!(in_flight(&endpoint), 3);
}

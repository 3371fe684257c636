//! `MaxConcurrent` through the engine: the fast path and the wait take a slot, the response or
//! the failed send gives it back, a wait for one counts in `MaxWait`, and a wait dropped after
//! its grant gives it back.

use super::*;
use crate::{
    EtaOutcome, EventsOutcome, FillOutcome, ManualClock, MaxConcurrent, MemoryWindowStore,
    TryOutcome, WindowFuture, WindowGeometry, WindowStore, WindowTime,
};
use std::num::NonZeroU32;

fn capped(key: &str, n: u32) -> (Engine, Arc<Endpoint>, ManualClock) {
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

fn in_flight(endpoint: &Endpoint) -> u32 {
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

#[tokio::test]
async fn a_wait_for_a_slot_counts_in_max_wait_and_in_the_total_timeout() {
    let (engine, endpoint, manual) = capped("a", 1);
    let rules = Rules::default();
    let clock: Arc<dyn Clock> = Arc::new(manual.clone());
    let mut tokens = 0;
    let first = Attempt::new(1, at(0), secs(30));
    assert!(
        engine
            .go_now(&rules, &endpoint, &first, &mut tokens)
            .is_some()
    );
    let second = Attempt::new(1, at(0), secs(2));
    let refused = manual
        .drive(engine.wait(&rules, &clock, &endpoint, &second, &mut tokens))
        .await;
    assert_eq!(
        refused,
        Err(Refusal::Rejected(RejectReason::WaitTooLong {
            cause: WaitCause::Concurrency,
            needed: secs(2),
            max_wait: secs(2),
        }))
    );
    assert_eq!(manual.now(), at(2));
    let end = manual.now() + secs(1);
    let timed = Attempt::new(1, manual.now(), secs(30)).timeout(Some((end, secs(1))));
    let refused = manual
        .drive(engine.wait(&rules, &clock, &endpoint, &timed, &mut tokens))
        .await;
    assert_eq!(
        refused,
        Err(Refusal::Rejected(RejectReason::PastTimeout {
            cause: WaitCause::Concurrency,
            timeout: secs(1),
        }))
    );
    assert_eq!(in_flight(&endpoint), 1);
}

/// A store whose takes never answer: a wait that reaches them hangs after its grant.
#[derive(Debug)]
struct Stalled(MemoryWindowStore);

impl WindowStore for Stalled {
    fn try_take<'a>(
        &'a self,
        _: &'a str,
        _: WindowGeometry,
        _: u64,
        _: u64,
    ) -> WindowFuture<'a, TryOutcome> {
        Box::pin(std::future::pending())
    }
    fn fill<'a>(
        &'a self,
        _: &'a str,
        _: WindowGeometry,
        _: u64,
        _: u64,
    ) -> WindowFuture<'a, FillOutcome> {
        Box::pin(std::future::pending())
    }
    fn events<'a>(
        &'a self,
        key: &'a str,
        g: WindowGeometry,
        count: u64,
    ) -> WindowFuture<'a, EventsOutcome> {
        self.0.events(key, g, count)
    }
    fn eta<'a>(
        &'a self,
        key: &'a str,
        g: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, EtaOutcome> {
        self.0.eta(key, g, limit, count)
    }
    fn now(&self) -> WindowFuture<'_, WindowTime> {
        self.0.now()
    }
    fn clear<'a>(&'a self, key: &'a str) -> WindowFuture<'a, ()> {
        self.0.clear(key)
    }
}

#[tokio::test]
async fn a_wait_dropped_after_its_grant_gives_its_slot_back() {
    let (engine, endpoint, manual) = capped("a", 1);
    let rules = Rules::default();
    let clock: Arc<dyn Clock> = Arc::new(manual.clone());
    let store = Stalled(MemoryWindowStore::new(manual.clone()));
    let window = WindowLimit::new("w", 10, secs(10), store).unwrap();
    let windows = [(&window, "w:a".to_owned())];
    let attempt = Attempt::new(1, at(0), secs(30)).windows(&windows);
    let mut tokens = 0;
    {
        let mut wait = Box::pin(engine.wait(&rules, &clock, &endpoint, &attempt, &mut tokens));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        assert_eq!(
            in_flight(&endpoint),
            1,
            "granted, taking the window's units"
        );
    }
    assert_eq!(in_flight(&endpoint), 0, "dropped: the slot is back");
}

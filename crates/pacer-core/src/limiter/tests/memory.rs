//! What a limiter learnt, kept across a restart: `LimiterCore::memory` and `recall`.

use super::*;
use crate::{ControllerKind, ControllerMemory, LimiterMemory};

/// 100 units a second for `secs` seconds, each answered at once.
fn send(core: &mut LimiterCore, from_ms: u64, secs: u64) -> Timestamp {
    let mut now = ms(from_ms);
    for i in 0..secs * 100 {
        now = ms(from_ms + i * 10);
        let _ = core.acquire(1, now);
        let _ = core.on_response(success(now), now);
    }
    now
}

#[test]
fn a_restarted_limiter_starts_at_the_rate_and_estimate_the_last_one_learnt() {
    let options = LimiterOptions::default();
    let mut old = core(options.clone());
    assert_eq!(old.memory(), None, "an unlimited start has learnt nothing");
    // 100 units a second for 70 s, then a throttle: it limits, and the Pacer controller has
    // an estimate (a minute old, the throttle is not young).
    let now = send(&mut old, 0, 70);
    let _ = old.on_response(throttled(now, Some(Duration::from_secs(1))), now);
    let memory = old.memory().expect("it limits");
    assert_eq!(
        memory.rate,
        old.rate(),
        "one instance: the whole budget is its rate"
    );
    assert!(memory.controller.limit.is_some());

    let mut new = core(options.clone());
    let changes = new.recall(&memory, Timestamp::ZERO);
    assert!(changes.started_limiting);
    assert!(new.is_limiting());
    assert_eq!(new.rate(), memory.rate);
    assert_eq!(new.memory().unwrap().controller, memory.controller);
    // Once a response came, what it learns itself stands: a recall changes nothing.
    let _ = new.acquire(1, ms(10));
    let _ = new.on_response(success(ms(10)), ms(20));
    let other = LimiterMemory::new(10.0, ControllerMemory::default());
    assert!(new.recall(&other, ms(30)).is_empty());
    assert_eq!(new.rate(), memory.rate);
}

#[test]
fn a_memory_is_the_whole_budget_s_and_each_process_takes_its_share() {
    let memory = LimiterMemory::new(1200.0, ControllerMemory::new(Some(1300.0), true));
    for (instances, rate) in [(1, 1200.0), (2, 600.0), (4, 300.0)] {
        let mut c = core(LimiterOptions {
            instance_count: instances,
            controller: ControllerKind::Aimd,
            ..LimiterOptions::default()
        });
        let _ = c.recall(&memory, Timestamp::ZERO);
        assert_eq!(c.rate(), rate, "{instances} instances");
        assert_eq!(c.memory().unwrap().rate, 1200.0);
    }
}

#[test]
fn an_unsound_memory_changes_nothing() {
    for rate in [f64::NAN, f64::INFINITY, 0.0, -5.0] {
        let mut c = core(LimiterOptions::default());
        let memory = LimiterMemory::new(rate, ControllerMemory::default());
        assert!(c.recall(&memory, Timestamp::ZERO).is_empty(), "{rate}");
        assert!(!c.is_limiting());
    }
    let mut c = core(LimiterOptions::default());
    let bad_limit = LimiterMemory::new(100.0, ControllerMemory::new(Some(f64::NAN), false));
    assert!(c.recall(&bad_limit, Timestamp::ZERO).is_empty());
}

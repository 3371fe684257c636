//! The wait as a state machine, driven by hand: no runtime, no clock, no store called. Each
//! test is the driver, and hands the machine the time and the answers it chose.

use super::*;
use crate::{ManualClock, WaitStep, WindowAnswer, WindowLimit};

/// A strict window the machine names by its place: its store is never called here.
fn window(clock: &ManualClock) -> WindowLimit {
    WindowLimit::new(
        "w",
        10,
        secs(10),
        crate::MemoryWindowStore::new(clock.clone()),
    )
    .unwrap()
}

#[test]
fn a_stop_is_a_sleep_and_a_stop_past_max_wait_a_refusal_with_nothing_slept() {
    let clock = ManualClock::new();
    let (engine, endpoint) = paced_endpoint(&clock, &[(429, &[("retry-after", "5")])]);
    let rules = Rules::default();
    let mut tokens = 0;
    let attempt = Attempt::new(1, at(0), secs(30)).max_retry_after(MAX_RETRY_AFTER);
    let mut wait = engine.begin_wait(&rules, &endpoint, &attempt, &mut tokens);
    assert_eq!(wait.start(), WaitStep::Sleep(at(5)));
    assert_eq!(wait.slept(at(5)), WaitStep::Go(at(5)));
    drop(wait);

    let _ = engine.after(
        &endpoint,
        read(429, &[("retry-after", "50")]),
        1,
        at(5),
        at(5),
    );
    let attempt = Attempt::new(1, at(5), secs(30)).max_retry_after(MAX_RETRY_AFTER);
    let mut wait = engine.begin_wait(&rules, &endpoint, &attempt, &mut tokens);
    assert_eq!(
        wait.start(),
        WaitStep::Refused(Refusal::Rejected(RejectReason::WaitTooLong {
            cause: WaitCause::ServerStop,
            needed: secs(50),
            max_wait: secs(30),
        }))
    );
}

#[test]
fn a_window_is_asked_its_eta_then_its_units_are_taken_after_the_limiter_s() {
    let clock = ManualClock::new();
    let (engine, endpoint) = paced_endpoint(&clock, &[]);
    let rules = Rules::default();
    let w = window(&clock);
    let windows = [(&w, "k".to_owned())];
    let attempt = Attempt::new(2, at(0), secs(30)).windows(&windows);
    let mut tokens = 0;
    let before = units_left(&endpoint);
    let mut wait = engine.begin_wait(&rules, &endpoint, &attempt, &mut tokens);
    assert_eq!(
        wait.start(),
        WaitStep::AskWindow {
            index: 0,
            take: false
        }
    );
    // Room in 2 s: a sleep, then the limiter's units (there), then the take.
    assert_eq!(
        wait.window_answered(at(0), Ok(WindowAnswer::Wait(secs(2)))),
        WaitStep::Sleep(at(2))
    );
    assert_eq!(
        wait.slept(at(2)),
        WaitStep::AskWindow {
            index: 0,
            take: true
        }
    );
    // Another process took the room meanwhile: one more second, then the same take again.
    assert_eq!(
        wait.window_answered(at(2), Ok(WindowAnswer::Wait(secs(1)))),
        WaitStep::Sleep(at(3))
    );
    assert_eq!(
        wait.slept(at(3)),
        WaitStep::AskWindow {
            index: 0,
            take: true
        }
    );
    assert_eq!(
        wait.window_answered(at(3), Ok(WindowAnswer::Go)),
        WaitStep::Go(at(3))
    );
    drop(wait);
    assert!(
        (units_left(&endpoint) - (before - 2.0)).abs() < 1e-9,
        "the limiter's units taken"
    );
}

#[test]
fn a_refusal_after_the_limiter_s_grant_gives_its_units_back() {
    let clock = ManualClock::new();
    let (engine, endpoint) = paced_endpoint(&clock, &[]);
    let rules = Rules::default();
    let w = window(&clock);
    let windows = [(&w, "k".to_owned())];
    let attempt = Attempt::new(3, at(0), secs(30)).windows(&windows);
    let mut tokens = 0;
    let before = units_left(&endpoint);
    let mut wait = engine.begin_wait(&rules, &endpoint, &attempt, &mut tokens);
    assert_eq!(
        wait.start(),
        WaitStep::AskWindow {
            index: 0,
            take: false
        }
    );
    assert_eq!(
        wait.window_answered(at(0), Ok(WindowAnswer::Go)),
        WaitStep::AskWindow {
            index: 0,
            take: true
        }
    );
    let failed = Refusal::Store {
        message: "down".into(),
    };
    assert_eq!(
        wait.window_answered(at(0), Err(failed.clone())),
        WaitStep::Refused(failed)
    );
    drop(wait);
    assert!((units_left(&endpoint) - before).abs() < 1e-9, "refunded");
}

#[test]
fn the_queue_is_asked_with_what_is_left_of_the_budget_and_its_refusal_is_the_wait_s() {
    let clock = ManualClock::new();
    let (engine, endpoint) = paced_endpoint(&clock, &[]);
    let rules = Rules::default();
    let mut tokens = 0;
    // The bucket of 10 units emptied: the next unit is the queue's.
    let all = Attempt::new(10, at(0), secs(30));
    assert_eq!(
        engine
            .begin_wait(&rules, &endpoint, &all, &mut tokens)
            .start(),
        WaitStep::Go(at(0))
    );
    let next = Attempt::new(1, at(0), secs(30)).timeout(Some((at(4), secs(4))));
    let mut wait = engine.begin_wait(&rules, &endpoint, &next, &mut tokens);
    assert_eq!(
        wait.start(),
        WaitStep::Queue { within: secs(4) },
        "the timeout is shorter"
    );
    let queue_said = RejectReason::WaitTooLong {
        cause: WaitCause::Queue,
        needed: secs(5),
        max_wait: secs(4),
    };
    assert_eq!(
        wait.queued(Err(queue_said)),
        WaitStep::Refused(Refusal::Rejected(RejectReason::PastTimeout {
            cause: WaitCause::Queue,
            timeout: secs(4),
        })),
        "the timeout, not MaxWait, cut it short"
    );
}

#[test]
fn a_machine_dropped_after_the_grant_gives_the_slot_back() {
    let (engine, endpoint, clock) = capped("a", 1);
    let rules = Rules::default();
    let w = window(&clock);
    let windows = [(&w, "k".to_owned())];
    let attempt = Attempt::new(1, at(0), secs(30)).windows(&windows);
    let mut tokens = 0;
    let mut wait = engine.begin_wait(&rules, &endpoint, &attempt, &mut tokens);
    assert_eq!(
        wait.start(),
        WaitStep::AskWindow {
            index: 0,
            take: false
        }
    );
    assert_eq!(
        wait.window_answered(at(0), Ok(WindowAnswer::Go)),
        WaitStep::AskWindow {
            index: 0,
            take: true
        }
    );
    assert_eq!(in_flight(&endpoint), 1, "granted: the slot is held");
    drop(wait);
    assert_eq!(in_flight(&endpoint), 0, "given back");
}

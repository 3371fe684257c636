//! The async shell under `MaxConcurrent`, on the manual clock: a landing wakes the waiter, the
//! waiter sleeps until its deadline (no busy loop) and is refused then, and every way a permit
//! can be abandoned gives its slot back.

use super::tests::options;
use super::*;
use crate::{ManualClock, RejectReason, Timestamp, WaitCause};
use std::future::Future;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// 10 units a second, a bucket of 10, at most `n` in flight.
fn capped(n: u32, clock: &ManualClock) -> Limiter {
    Limiter::builder(LimiterOptions {
        max_concurrent: NonZeroU32::new(n),
        ..options()
    })
    .clock(Arc::new(clock.clone()))
    .build()
    .unwrap()
}

async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn at(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

#[tokio::test(flavor = "current_thread")]
async fn a_landing_wakes_the_waiter_which_slept_until_its_deadline() {
    let clock = ManualClock::new();
    let l = capped(1, &clock);
    assert!(l.try_acquire(1).is_ok());
    let task = tokio::spawn(l.acquire_owned(1));
    settle().await;
    assert!(!task.is_finished());
    // One timer, at its deadline: nothing polls it in between.
    assert_eq!(clock.sleepers(), 1);
    assert_eq!(clock.next_deadline(), Some(at(30_000)));
    clock.advance(Duration::from_millis(1_500));
    settle().await;
    assert!(!task.is_finished());
    l.landed();
    let permit = task.await.unwrap().unwrap();
    assert_eq!(permit.waited(), Duration::from_millis(1_500));
    assert_eq!(permit.granted_at(), at(1_500));
    assert_eq!((l.snapshot().in_flight, clock.sleepers()), (1, 0));
}

#[tokio::test(flavor = "current_thread")]
async fn a_waiter_without_a_slot_is_refused_at_its_deadline() {
    let clock = ManualClock::new();
    let l = capped(1, &clock);
    assert!(l.try_acquire(1).is_ok());
    let task = tokio::spawn(l.acquire_owned_within(1, Duration::from_secs(2)));
    settle().await;
    assert_eq!(clock.next_deadline(), Some(at(2_000)));
    clock.advance(Duration::from_millis(1_999));
    settle().await;
    assert!(!task.is_finished());
    clock.advance(Duration::from_millis(1));
    let refused = task.await.unwrap().unwrap_err();
    assert_eq!(
        refused,
        RejectReason::WaitTooLong {
            cause: WaitCause::Concurrency,
            needed: Duration::from_secs(2),
            max_wait: Duration::from_secs(2),
        }
    );
    assert_eq!(refused.kind(), "wait_too_long:concurrency");
    let s = l.snapshot();
    assert_eq!((s.queue_len, s.in_flight, l.waiting_slots()), (0, 1, 0));
    assert_eq!(clock.sleepers(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_later_waiter_s_deadline_is_the_first_one_s_timer() {
    let clock = ManualClock::new();
    let l = capped(1, &clock);
    assert!(l.try_acquire(1).is_ok());
    let first = tokio::spawn(l.acquire_owned(1));
    settle().await;
    let second = tokio::spawn(l.acquire_owned_within(1, Duration::from_secs(1)));
    settle().await;
    assert_eq!(clock.next_deadline(), Some(at(1_000)));
    clock.advance(Duration::from_secs(1));
    let refused = second.await.unwrap().unwrap_err();
    assert_eq!(refused.kind(), "wait_too_long:concurrency");
    settle().await;
    assert!(!first.is_finished(), "the first keeps its place");
    assert_eq!(clock.next_deadline(), Some(at(30_000)));
    l.landed();
    assert_eq!(first.await.unwrap().unwrap().granted_at(), at(1_000));
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_s_own_cap_waits_for_the_requests_in_flight() {
    let clock = ManualClock::new();
    let l = Limiter::builder(options())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    assert!(l.try_acquire(1).is_ok());
    assert!(l.try_acquire(1).is_ok());
    let two = NonZeroU32::new(2).unwrap();
    let task = tokio::spawn(l.acquire_owned(1).max_concurrent(two));
    settle().await;
    assert!(!task.is_finished());
    l.landed();
    assert!(task.await.unwrap().is_ok());
    assert_eq!(l.snapshot().in_flight, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn every_abandoned_grant_gives_its_slot_back() {
    let clock = ManualClock::new();
    let l = capped(1, &clock);
    // A refund is a request never sent: its units and its slot.
    assert!(l.try_acquire(1).is_ok());
    l.refund(1);
    assert_eq!(l.snapshot().in_flight, 0);

    // Granted by a landing while its future was not looking, then dropped: the slot comes back.
    assert!(l.try_acquire(1).is_ok());
    let mut waiting = Box::pin(l.acquire(1));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    l.landed();
    assert_eq!(l.snapshot().in_flight, 1, "granted to the waiter");
    drop(waiting);
    let s = l.snapshot();
    assert_eq!((s.in_flight, s.queue_len, l.waiting_slots()), (0, 0, 0));
    assert_eq!(s.stats.refunded_units, 2.0);
    assert!(l.try_acquire(1).is_ok(), "the slot is free");
}

#[tokio::test(flavor = "current_thread")]
async fn a_raised_cap_wakes_the_waiter() {
    let clock = ManualClock::new();
    let l = capped(1, &clock);
    assert!(l.try_acquire(1).is_ok());
    let task = tokio::spawn(l.acquire_owned(1));
    settle().await;
    let _ = l
        .update_options(LimiterOptions {
            max_concurrent: NonZeroU32::new(2),
            ..options()
        })
        .unwrap();
    assert_eq!(task.await.unwrap().unwrap().granted_at(), at(0));
    assert_eq!(l.snapshot().in_flight, 2);
}

//! The async shell on the manual clock: waits, wake-ups, cancellation.

use super::tests::options;
use super::*;
use crate::controller::{PureController, RateController, RateControllerState};
use crate::{Clock, ManualClock, RejectReason, Timestamp, WaitCause};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn limiter(o: LimiterOptions, clock: &ManualClock) -> Limiter {
    Limiter::builder(o)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap()
}

/// Lets every ready task run.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn drain(l: &Limiter) {
    while l.try_acquire(1).is_ok() {}
}

#[tokio::test(flavor = "current_thread")]
async fn a_waiter_gets_its_units_when_the_bucket_has_them() {
    let clock = ManualClock::new();
    let l = limiter(options(), &clock);
    drain(&l);
    let task = tokio::spawn(l.acquire_owned(2));
    settle().await;
    assert!(!task.is_finished());
    assert_eq!(l.snapshot().queue_len, 1);
    clock.advance(Duration::from_millis(199));
    settle().await;
    assert!(!task.is_finished());
    clock.advance(Duration::from_millis(1));
    let permit = task.await.unwrap().unwrap();
    assert_eq!(permit.waited(), Duration::from_millis(200));
    assert_eq!(
        permit.granted_at(),
        Timestamp::ZERO + Duration::from_millis(200)
    );
    assert_eq!(clock.sleepers(), 0);
}

#[derive(Debug)]
struct RaiseTo(f64);

impl RateController for RaiseTo {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        state.rate / 2.0
    }
    fn on_success(&mut self, _: &RateControllerState) -> Option<f64> {
        Some(self.0)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_raised_rate_wakes_the_first_waiter_earlier() {
    let clock = ManualClock::new();
    let l = Limiter::builder(options())
        .clock(Arc::new(clock.clone()))
        .controller(Box::new(PureController::new(RaiseTo(1200.0))))
        .build()
        .unwrap();
    drain(&l);
    let task = tokio::spawn(l.acquire_owned(10)); // a full bucket at 10/s: 1 s
    settle().await;
    assert_eq!(
        clock.next_deadline(),
        Some(Timestamp::ZERO + Duration::from_secs(1))
    );
    let changes = l.on_response(Feedback {
        units: 1,
        sent_at: clock.now(),
        signal: Signal::Success,
    });
    assert_eq!(changes.rate.map(|c| c.rate), Some(1200.0));
    settle().await;
    // 20 units/s, and the bucket now holds 20: the 10 units come at 0.5 s.
    assert_eq!(
        clock.next_deadline(),
        Some(Timestamp::ZERO + Duration::from_millis(500))
    );
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        task.await.unwrap().unwrap().waited(),
        Duration::from_millis(500)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_pause_holds_the_waiter_past_its_timer() {
    let clock = ManualClock::new();
    let l = limiter(options(), &clock);
    drain(&l);
    let task = tokio::spawn(l.acquire_owned(1));
    settle().await;
    let _ = l.on_response(Feedback {
        units: 1,
        sent_at: clock.now(),
        signal: Signal::Throttled {
            retry_after: Some(Duration::from_secs(3)),
        },
    });
    clock.advance(Duration::from_millis(500));
    settle().await;
    assert!(!task.is_finished(), "paused");
    clock.advance(Duration::from_millis(2500));
    settle().await;
    assert!(
        !task.is_finished(),
        "nothing flowed into the bucket during the pause"
    );
    // The cut rate is 7 units/s: the unit flows in 1/7 s after the pause.
    clock.advance(Duration::from_millis(143));
    let waited = task.await.unwrap().unwrap().waited();
    assert_eq!(waited, Duration::from_millis(3143));
}

#[tokio::test(flavor = "current_thread")]
async fn waiters_that_a_cut_makes_late_are_refused_at_once() {
    let clock = ManualClock::new();
    let l = limiter(
        LimiterOptions {
            max_wait: Duration::from_millis(950),
            ..options()
        },
        &clock,
    );
    drain(&l);
    // 0.9 s at 10 units/s; after the cut to 7 units/s it needs a full bucket of 7: 1 s.
    let task = tokio::spawn(l.acquire_owned(9));
    settle().await;
    let _ = l.on_response(Feedback {
        units: 1,
        sent_at: clock.now(),
        signal: Signal::Throttled { retry_after: None },
    });
    settle().await;
    assert!(
        task.is_finished(),
        "refused at the cut, not at the deadline"
    );
    let rejected = task.await.unwrap().unwrap_err();
    assert_eq!(rejected.kind(), "wait_too_long:queue");
    assert_eq!(l.snapshot().queue_len, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_refused_request_resolves_at_once_and_takes_nothing() {
    let clock = ManualClock::new();
    let l = limiter(
        LimiterOptions {
            max_wait: Duration::from_millis(50),
            ..options()
        },
        &clock,
    );
    drain(&l);
    let before = l.snapshot();
    let r = l.acquire(1).await;
    assert_eq!(
        r,
        Err(RejectReason::WaitTooLong {
            cause: WaitCause::Queue,
            needed: Duration::from_millis(100),
            max_wait: Duration::from_millis(50)
        })
    );
    assert_eq!(l.snapshot().queue_len, before.queue_len);
    assert_eq!(l.snapshot().available_units, before.available_units);
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_a_waiter_frees_its_place_and_a_granted_but_uncollected_permit_is_refunded() {
    let clock = ManualClock::new();
    let l = limiter(options(), &clock);
    drain(&l);
    let first = tokio::spawn(l.acquire_owned(5));
    settle().await;
    let second = tokio::spawn(l.acquire_owned(1));
    settle().await;
    first.abort();
    settle().await;
    assert_eq!(l.snapshot().queue_len, 1);
    clock.advance(Duration::from_millis(100));
    assert_eq!(
        second.await.unwrap().unwrap().waited(),
        Duration::from_millis(100)
    );

    // Granted by another waiter's poll, then dropped before it looked: the units come back.
    drain(&l);
    let mut a = Box::pin(l.acquire(1));
    let mut b = Box::pin(l.acquire(1));
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(a.as_mut().poll(&mut cx).is_pending());
    assert!(b.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_millis(200));
    assert!(a.as_mut().poll(&mut cx).is_ready()); // grants a, then b
    drop(b);
    assert!(l.snapshot().available_units > 0.99, "b's unit is back");
    assert_eq!(l.snapshot().stats.refunded_units, 1.0);
    assert_eq!(l.waiting_slots(), 0);
}

/// 10,000 waiters, half of them cancelled at random (before and while the queue moves): the rest
/// are served one by one in arrival order, and nothing is left behind.
#[tokio::test(flavor = "current_thread")]
async fn ten_thousand_waiters_half_cancelled_the_rest_served_in_order_nothing_leaks() {
    const N: usize = 10_000;
    let clock = ManualClock::new();
    let l = limiter(
        LimiterOptions {
            queue_limit: N,
            max_wait: Duration::from_secs(10_000),
            ..options()
        },
        &clock,
    );
    drain(&l);
    let served: Arc<Mutex<Vec<(usize, Timestamp)>>> = Arc::default();
    let mut tasks = Vec::with_capacity(N);
    for i in 0..N {
        let acquire = l.acquire_owned(1);
        let served = Arc::clone(&served);
        tasks.push(Some(tokio::spawn(async move {
            let permit = acquire.await.expect("no waiter is refused");
            served.lock().unwrap().push((i, permit.granted_at()));
        })));
    }
    for _ in 0..N {
        if l.snapshot().queue_len == N {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(l.snapshot().queue_len, N);

    // A small deterministic generator (xorshift) picks whom to cancel.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut cancelled = 0;
    while cancelled < N / 4 {
        let i = (next() % N as u64) as usize;
        if let Some(t) = tasks[i].take() {
            t.abort();
            cancelled += 1;
        }
    }
    settle().await;
    let mut steps = 0;
    while served.lock().unwrap().len() + cancelled < N {
        // Cancel another waiter at each step while the queue moves, until half are cancelled.
        for _ in 0..16 {
            if cancelled >= N / 2 {
                break;
            }
            let i = (next() % N as u64) as usize;
            let served_now = served.lock().unwrap().iter().any(|(s, _)| *s == i);
            if !served_now && let Some(t) = tasks[i].take() {
                t.abort();
                cancelled += 1;
                settle().await;
                break;
            }
        }
        clock.advance(Duration::from_millis(100)); // one unit
        settle().await;
        steps += 1;
        assert!(steps <= N, "the queue stalled");
    }
    let served = served.lock().unwrap();
    assert_eq!(served.len(), N - cancelled);
    assert_eq!(cancelled, N / 2);
    for w in served.windows(2) {
        assert!(w[0].0 < w[1].0, "served out of order: {w:?}");
        assert!(w[0].1 < w[1].1, "two served in one step: {w:?}");
    }
    assert_eq!(l.snapshot().queue_len, 0);
    assert_eq!(l.snapshot().queued_units, 0.0);
    assert_eq!(l.waiting_slots(), 0);
    assert_eq!(clock.sleepers(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn the_server_s_numbers_set_the_rate_and_wake_a_waiter_sooner() {
    let clock = ManualClock::new();
    let l = limiter(options(), &clock);
    drain(&l);
    // 10 units at 10 units/s: 1 s.
    let task = tokio::spawn(l.acquire_owned(10));
    settle().await;
    // The server has 600 units left for 10 s: far above the maximum of 1,200 a minute (20/s).
    let changes = l.follow_server(ServerQuota::new(600, Duration::from_secs(10)));
    assert_eq!(changes.rate.map(|c| c.rate), Some(1200.0));
    assert!(l.is_following_server());
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        task.await.unwrap().unwrap().waited(),
        Duration::from_millis(500),
        "at 20 units/s"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_interactive_waiter_is_served_before_a_batch_waiter_queued_earlier() {
    let clock = ManualClock::new();
    let l = limiter(options(), &clock);
    drain(&l);
    let batch = tokio::spawn(l.acquire_owned(1).priority(Priority::Batch));
    settle().await;
    let interactive = tokio::spawn(l.acquire_owned(1));
    settle().await;
    assert_eq!(l.queue_len(), 2);
    clock.advance(Duration::from_millis(100));
    settle().await;
    assert!(interactive.is_finished());
    assert!(!batch.is_finished());
    clock.advance(Duration::from_millis(100));
    let permit = batch.await.unwrap().unwrap();
    assert_eq!(permit.waited(), Duration::from_millis(200));
    assert_eq!(l.waiting_slots(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_batch_waiter_pushed_past_its_time_is_refused_when_the_interactive_request_arrives() {
    let clock = ManualClock::new();
    let l = limiter(options(), &clock);
    drain(&l);
    let batch = tokio::spawn(
        l.acquire_owned_within(1, Duration::from_millis(250))
            .priority(Priority::Batch),
    );
    settle().await;
    let first = tokio::spawn(l.acquire_owned(1));
    settle().await;
    assert!(!batch.is_finished(), "granted at 200 ms, within its 250 ms");
    let _second = tokio::spawn(l.acquire_owned(1));
    settle().await;
    assert!(batch.is_finished());
    assert!(matches!(
        batch.await.unwrap(),
        Err(RejectReason::WaitTooLong { .. })
    ));
    clock.advance(Duration::from_millis(100));
    assert!(first.await.unwrap().is_ok());
}

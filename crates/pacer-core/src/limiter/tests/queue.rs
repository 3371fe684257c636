//! The bucket and the queue: who goes, who waits, who is refused.

use super::*;

#[test]
fn a_request_of_zero_units_goes_at_once_and_changes_nothing() {
    let mut c = core(options());
    let before = c.snapshot(ms(0));
    assert_eq!(c.acquire(0, ms(0)), Ok(Acquired::Now));
    assert_eq!(c.snapshot(ms(0)), before);
}

#[test]
fn the_bucket_holds_rate_times_burst_and_then_requests_queue_at_the_rate() {
    let mut c = core(options());
    for _ in 0..10 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    let (t1, at1) = queued(c.acquire(1, ms(0)));
    let (t2, at2) = queued(c.acquire(2, ms(0)));
    assert_eq!(at1, ms(100));
    assert_eq!(at2, ms(300), "behind the first, at 10 units/s");
    assert!(c.snapshot(ms(0)).waited);
    assert_eq!(c.next_grant_at(ms(0)), Some(ms(100)));
    assert_eq!(c.pop_ready(ms(99)), None);
    assert_eq!(c.next_grant_at(ms(99)), Some(ms(100)));
    assert_eq!(c.pop_ready(ms(100)), Some((t1, Duration::from_millis(100))));
    assert_eq!(c.pop_ready(ms(100)), None);
    assert_eq!(c.pop_ready(ms(300)), Some((t2, Duration::from_millis(300))));
    assert_eq!(c.queue_len(), 0);
}

#[test]
fn a_cancelled_request_frees_its_place() {
    let mut c = core(options());
    for _ in 0..10 {
        c.acquire(1, ms(0)).unwrap();
    }
    let (t1, _) = queued(c.acquire(5, ms(0)));
    let (t2, at2) = queued(c.acquire(1, ms(0)));
    assert_eq!(at2, ms(600));
    assert!(c.cancel(t1));
    assert!(!c.cancel(t1), "only once");
    assert_eq!(c.next_grant_at(ms(0)), Some(ms(100)));
    assert_eq!(c.pop_ready(ms(100)).map(|g| g.0), Some(t2));
}

#[test]
fn a_full_queue_refuses_and_the_refused_request_takes_nothing() {
    let mut c = core(LimiterOptions {
        queue_limit: 2,
        ..options()
    });
    for _ in 0..10 {
        c.acquire(1, ms(0)).unwrap();
    }
    queued(c.acquire(1, ms(0)));
    queued(c.acquire(1, ms(0)));
    let before = c.snapshot(ms(0));
    assert_eq!(
        c.acquire(1, ms(0)),
        Err(RejectReason::QueueFull { limit: 2 })
    );
    let mut after = c.snapshot(ms(0));
    assert_eq!(after.stats.rejected_queue_full, 1);
    after.stats.rejected_queue_full = 0;
    assert_eq!(after, before);
}

#[test]
fn a_request_that_would_wait_longer_than_max_wait_is_refused_with_the_wait_it_needed() {
    let mut c = core(LimiterOptions {
        max_wait: Duration::from_secs(2),
        ..options()
    });
    for _ in 0..10 {
        c.acquire(1, ms(0)).unwrap();
    }
    queued(c.acquire(20, ms(0))); // 10 units needed (a full bucket): at 1 s
    let before = c.snapshot(ms(0));
    // Behind 20 units it would need 20 + 15 units... no: 20 ahead + 10 (its need) = 3 s.
    let r = c.acquire(15, ms(0));
    assert_eq!(
        r,
        Err(RejectReason::WaitTooLong {
            cause: WaitCause::Queue,
            needed: Duration::from_secs(3),
            max_wait: Duration::from_secs(2),
        })
    );
    assert_eq!(r.unwrap_err().needed_wait(), Some(Duration::from_secs(3)));
    let mut after = c.snapshot(ms(0));
    after.stats.rejected_wait = 0;
    assert_eq!(after, before);
    // A caller with its own, larger budget may wait.
    queued(c.acquire_within(15, Duration::from_secs(3), ms(0)));
}

#[test]
fn a_request_larger_than_the_bucket_waits_for_a_full_bucket_and_the_debt_holds_the_rate() {
    let mut c = core(options());
    for _ in 0..10 {
        c.acquire(1, ms(0)).unwrap();
    }
    let (big, at) = queued(c.acquire(30, ms(0)));
    assert_eq!(at, secs(1));
    assert_eq!(c.pop_ready(secs(1)).map(|g| g.0), Some(big));
    let (_, next) = queued(c.acquire(1, secs(1)));
    assert_eq!(next, ms(3100), "20 units of debt, then 1 unit, at 10/s");
}

#[test]
fn disabled_never_holds_back_but_still_tracks_the_rate() {
    let mut c = core(LimiterOptions {
        enabled: false,
        ..options()
    });
    for _ in 0..1000 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    let changes = c.on_response(throttled(ms(0), Some(Duration::from_secs(5))), ms(10));
    assert_eq!(changes.rate.map(|r| r.rate), Some(420.0));
    assert_eq!(
        c.acquire(1, ms(20)),
        Ok(Acquired::Now),
        "even during the pause"
    );
    assert_eq!(c.snapshot(ms(20)).stats.granted_units, 1001.0);
}

#[test]
fn refunded_units_go_back_into_the_bucket() {
    let mut c = core(options());
    for _ in 0..10 {
        c.acquire(1, ms(0)).unwrap();
    }
    c.refund(3, ms(0));
    for _ in 0..3 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    assert!(c.acquire(1, ms(0)).is_ok_and(|a| a != Acquired::Now));
    assert_eq!(c.stats().refunded_units, 3.0);
}

#[test]
fn try_take_never_queues() {
    let mut c = core(options());
    for _ in 0..10 {
        assert_eq!(c.try_take(1, ms(0)), Ok(()));
    }
    assert_eq!(c.try_take(2, ms(0)), Err(Duration::from_millis(200)));
    assert_eq!(c.queue_len(), 0);
}

/// Regression: the bucket used to refill during a Retry-After pause, so every instance released
/// a full burst the moment the pause ended, into a server window that had just drained enough
/// for one request (the simulator's AIMD took a second cut at 5:25 of the noisy-neighbour run).
#[test]
fn no_burst_at_the_end_of_a_pause() {
    let mut c = core(options()); // 10 units/s, a full bucket of 10
    let _ = c.on_response(throttled(ms(0), Some(Duration::from_secs(5))), ms(0));
    assert_eq!(c.rate(), 420.0, "cut to 7 units/s");
    assert_eq!(
        c.snapshot(secs(5)).available_units,
        0.0,
        "the pause emptied the bucket and nothing flowed in"
    );
    assert!(c.try_take(1, secs(5)).is_err(), "no burst when it ends");
    // Then the units flow at the rate: the k-th unit 1/7 s after the one before.
    let tickets: Vec<_> = (0..3).map(|_| queued(c.acquire(1, secs(5))).0).collect();
    let mut granted = Vec::new();
    let mut now = secs(5);
    while granted.len() < tickets.len() {
        now = c.next_grant_at(now).unwrap();
        while let Some((t, _)) = c.pop_ready(now) {
            granted.push((t, now));
        }
    }
    let expected: Vec<_> = tickets
        .iter()
        .enumerate()
        .map(|(k, &t)| (t, secs(5).saturating_add_secs_f64((k + 1) as f64 / 7.0)))
        .collect();
    for ((t, at), (te, ate)) in granted.iter().zip(&expected) {
        assert_eq!(t, te);
        assert!(
            at.as_nanos().abs_diff(ate.as_nanos()) <= 2,
            "{at:?} against {ate:?}"
        );
    }
}

#[test]
fn a_debt_survives_a_pause() {
    let mut c = core(options());
    c.acquire(30, ms(0)).unwrap(); // takes the full bucket of 10 and leaves a debt of 20
    let _ = c.on_response(throttled(ms(0), Some(Duration::from_secs(2))), ms(0));
    // 20 units of debt plus 1 unit at 7 units/s after the pause at 2 s: 3 s later.
    let (_, at) = queued(c.acquire(1, ms(0)));
    assert_eq!(at, secs(5));
}

//! `MaxConcurrent`: a grant needs its units and a slot; a landing gives the slot back; a request
//! waiting only for a slot keeps its place and is refused when the time it may wait ends.

use super::*;
use Priority::Interactive;
use std::num::NonZeroU32;

const MAX_WAIT: Duration = Duration::from_secs(30);

fn cap(n: u32) -> Option<NonZeroU32> {
    NonZeroU32::new(n)
}

/// 10 units a second, a bucket of 10, at most `n` in flight.
fn capped(n: u32) -> LimiterCore {
    core(LimiterOptions {
        max_concurrent: cap(n),
        ..options()
    })
}

/// A request of one unit with its own cap, waiting at most `max_wait`.
fn ask(
    c: &mut LimiterCore,
    own: Option<NonZeroU32>,
    max_wait: Duration,
    now: Timestamp,
) -> Result<Acquired, RejectReason> {
    c.acquire_capped(1, max_wait, Interactive, own, now)
}

#[test]
fn a_grant_takes_a_slot_and_a_landing_gives_it_back() {
    let mut c = capped(2);
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    assert_eq!(c.in_flight(), 2);
    // Its units are there, its slot is not: it waits, told the wait for its units (none).
    let (third, at) = queued(c.acquire(1, ms(0)));
    assert_eq!(at, ms(0));
    assert_eq!(c.pop_ready(ms(50)), None);
    assert_eq!(c.snapshot(ms(50)).in_flight, 2);
    assert!(c.landed(), "the first waiter may go now");
    assert_eq!(c.in_flight(), 1);
    assert_eq!(
        c.pop_ready(ms(50)),
        Some((third, Duration::from_millis(50)))
    );
    assert_eq!(c.in_flight(), 2);
    assert!(!c.landed(), "nobody waits");
    assert!(!c.landed());
    assert!(!c.landed(), "nothing is in flight: nothing changes");
    assert_eq!(c.in_flight(), 0);
}

#[test]
fn a_grant_needs_its_units_and_a_slot() {
    let mut c = capped(1);
    assert_eq!(c.try_take(10, ms(0)), Ok(()), "the whole bucket");
    let (next, at) = queued(c.acquire(1, ms(0)));
    assert_eq!(at, ms(100), "its units come at 10 a second");
    // Without its slot it is not granted when its units come; its timer is its deadline.
    assert_eq!(c.next_grant_at(ms(0)), Some(ms(30_000)));
    assert_eq!(c.pop_ready(ms(100)), None);
    assert!(c.landed());
    assert_eq!(c.next_grant_at(ms(100)), Some(ms(100)));
    assert_eq!(
        c.pop_ready(ms(100)),
        Some((next, Duration::from_millis(100)))
    );
    // A slot free but no units: the units' time.
    assert!(!c.landed());
    let (last, _) = queued(c.acquire(1, ms(100)));
    assert_eq!(c.next_grant_at(ms(100)), Some(ms(200)));
    assert_eq!(c.pop_ready(ms(200)).map(|g| g.0), Some(last));
}

#[test]
fn without_a_cap_requests_are_counted_and_nothing_else_changes() {
    let mut c = core(options());
    for _ in 0..10 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    assert_eq!(c.in_flight(), 10);
    let (_, at) = queued(c.acquire(1, ms(0)));
    assert_eq!(at, ms(100));
    assert_eq!(
        c.next_grant_at(ms(0)),
        Some(ms(100)),
        "the units' time, not a deadline"
    );
    assert!(!c.landed(), "a landing wakes nobody without a cap");
    assert!(
        c.refuse_expired(ms(60_000)).is_empty(),
        "the estimates hold"
    );
    assert_eq!(
        c.pop_ready(ms(100)).map(|g| g.1),
        Some(Duration::from_millis(100))
    );
    assert_eq!(c.in_flight(), 10);
}

#[test]
fn a_request_of_zero_units_takes_no_slot() {
    let mut c = capped(1);
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    assert_eq!(c.acquire(0, ms(0)), Ok(Acquired::Now));
    assert_eq!(c.in_flight(), 1);
}

#[test]
fn a_request_s_own_cap_counts_every_request_in_flight() {
    let mut c = core(options());
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    // Two in flight, neither with a cap: one that asks for at most two waits.
    let (own, _) = queued(ask(&mut c, cap(2), MAX_WAIT, ms(0)));
    assert_eq!(c.pop_ready(ms(10)), None);
    assert_eq!(c.next_grant_at(ms(10)), Some(ms(30_000)), "its deadline");
    assert!(c.landed());
    assert_eq!(c.pop_ready(ms(10)).map(|g| g.0), Some(own));
    // Its cap was its own: the next request without one goes at once.
    assert_eq!(c.acquire(1, ms(10)), Ok(Acquired::Now));
    assert_eq!(c.in_flight(), 3);
}

#[test]
fn the_lower_of_the_two_caps_holds() {
    let mut c = capped(3);
    assert_eq!(ask(&mut c, cap(5), MAX_WAIT, ms(0)), Ok(Acquired::Now));
    assert_eq!(ask(&mut c, None, MAX_WAIT, ms(0)), Ok(Acquired::Now));
    assert_eq!(ask(&mut c, cap(1), MAX_WAIT, ms(0)).map(|_| ()), Ok(()));
    assert_eq!(
        c.queue_len(),
        1,
        "two in flight: one is too many for a cap of 1"
    );
    assert!(!c.landed(), "one in flight is still one too many");
    assert!(c.landed());
    assert!(c.pop_ready(ms(0)).is_some());
    // The limiter's 3 holds for a request that asks for 5.
    assert_eq!(ask(&mut c, cap(5), MAX_WAIT, ms(0)), Ok(Acquired::Now));
    assert_eq!(ask(&mut c, cap(5), MAX_WAIT, ms(0)), Ok(Acquired::Now));
    assert!(matches!(
        ask(&mut c, cap(5), MAX_WAIT, ms(0)),
        Ok(Acquired::Queued { .. })
    ));
}

#[test]
fn a_request_waiting_for_a_slot_is_refused_when_its_time_ends() {
    let mut c = capped(1);
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    let (t, _) = queued(ask(&mut c, None, Duration::from_secs(2), ms(500)));
    assert_eq!(
        c.next_grant_at(ms(500)),
        Some(ms(2_500)),
        "no busy loop: its deadline"
    );
    assert!(c.refuse_expired(ms(2_499)).is_empty());
    let changes = c.refuse_expired(ms(2_500));
    assert_eq!(
        changes.rejected,
        [(
            t,
            RejectReason::WaitTooLong {
                cause: WaitCause::Concurrency,
                needed: Duration::from_secs(2),
                max_wait: Duration::from_secs(2),
            }
        )]
    );
    assert_eq!((c.queue_len(), c.next_grant_at(ms(2_500))), (0, None));
    assert_eq!(c.stats().rejected_wait, 1);
    // A request that may not wait at all is refused at once by the same rule.
    let (t, at) = queued(ask(&mut c, None, Duration::ZERO, ms(3_000)));
    assert_eq!(
        (at, c.next_grant_at(ms(3_000))),
        (ms(3_000), Some(ms(3_000)))
    );
    assert_eq!(c.refuse_expired(ms(3_000)).rejected[0].0, t);
}

#[test]
fn a_waiter_blocked_on_slots_keeps_its_place() {
    let mut c = capped(1);
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    let (a, _) = queued(c.acquire(1, ms(0)));
    let (b, _) = queued(ask(&mut c, None, Duration::from_secs(1), ms(10)));
    let (d, _) = queued(c.acquire(1, ms(20)));
    // Nobody passes the first, however long it waits: a newcomer queues behind.
    assert_eq!(c.try_take(1, ms(900)), Err(Duration::ZERO));
    // The second's deadline comes first: it is refused then; the first keeps its place.
    assert_eq!(c.next_grant_at(ms(900)), Some(ms(1_010)));
    let refused: Vec<Ticket> = (c.refuse_expired(ms(1_010)).rejected)
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(refused, [b]);
    assert_eq!(c.first_waiting(), Some(a));
    assert!(c.landed());
    assert_eq!(c.pop_ready(ms(2_000)).map(|g| g.0), Some(a));
    assert_eq!(c.pop_ready(ms(2_000)), None, "one in flight again");
    assert!(c.landed());
    assert_eq!(c.pop_ready(ms(2_000)).map(|g| g.0), Some(d));
}

#[test]
fn a_raised_cap_lets_the_first_waiter_go() {
    let mut c = capped(1);
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    let (t, _) = queued(c.acquire(1, ms(0)));
    let _ = c
        .update_options(
            LimiterOptions {
                max_concurrent: cap(2),
                ..options()
            },
            ms(10),
        )
        .unwrap();
    assert_eq!(c.pop_ready(ms(10)).map(|g| g.0), Some(t));
    // Without a cap, none is held back.
    let _ = c.update_options(options(), ms(10)).unwrap();
    assert_eq!(c.acquire(1, ms(10)), Ok(Acquired::Now));
    assert_eq!(c.in_flight(), 3);
}

#[test]
fn a_disabled_limiter_holds_nothing_back_but_counts() {
    let mut c = core(LimiterOptions {
        enabled: false,
        max_concurrent: cap(1),
        ..options()
    });
    for _ in 0..3 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    assert_eq!(c.snapshot(ms(0)).in_flight, 3);
}

#[test]
fn a_refund_leaves_the_slot_to_landed() {
    let mut c = capped(1);
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    c.refund(1, ms(0));
    assert_eq!(c.in_flight(), 1, "the core's calls are explicit");
    assert!(!c.landed());
    assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
}

#[test]
fn the_options_say_the_cap_in_their_summary() {
    let o = LimiterOptions {
        max_concurrent: cap(4),
        ..options()
    };
    assert!(
        o.to_string()
            .ends_with(", 1 instance(s), at most 4 in flight"),
        "{o}"
    );
    assert!(options().to_string().ends_with("1 instance(s)"));
}

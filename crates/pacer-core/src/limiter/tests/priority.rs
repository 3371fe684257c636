//! The queue's two lanes: interactive requests before batch work, batch work never starved, and
//! a batch request refused once interactive requests push it past the time it may wait.

use super::*;
use Priority::{Batch, Interactive};

const MAX_WAIT: Duration = Duration::from_secs(30);

/// 10 units a second, a bucket of 10.
fn emptied() -> LimiterCore {
    let mut c = core(LimiterOptions {
        burst: Duration::from_secs(1),
        max_wait: MAX_WAIT,
        queue_limit: 1000,
        ..options()
    });
    for _ in 0..10 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    c
}

#[test]
fn an_interactive_request_is_granted_before_batch_work_queued_earlier() {
    let mut c = emptied();
    let (batch, at) = queued(c.acquire_with_priority(1, MAX_WAIT, Batch, ms(0)));
    assert_eq!(at, ms(100));
    let (interactive, at) = queued(c.acquire_with_priority(1, MAX_WAIT, Interactive, ms(10)));
    assert_eq!(at, ms(100), "ahead of the batch request");
    assert!(c.has_batch_waiting());
    assert_eq!(c.first_waiting(), Some(interactive));
    assert_eq!(
        c.pop_ready(ms(100)),
        Some((interactive, Duration::from_millis(90)))
    );
    assert_eq!(c.pop_ready(ms(199)), None);
    assert_eq!(
        c.pop_ready(ms(200)),
        Some((batch, Duration::from_millis(200)))
    );
    assert!(!c.has_batch_waiting());
}

#[test]
fn batch_work_gets_a_grant_after_every_four_interactive_ones() {
    let mut c = emptied();
    let (batch, _) = queued(c.acquire_with_priority(1, MAX_WAIT, Batch, ms(0)));
    let interactive: Vec<Ticket> = (0..8).map(|_| queued(c.acquire(1, ms(0))).0).collect();
    let mut order = Vec::new();
    for t in (1..=9).map(|i| ms(100 * i)) {
        let (ticket, _) = c.pop_ready(t).expect("one grant every 100 ms");
        order.push(ticket);
    }
    let mut expected = interactive[..4].to_vec();
    expected.push(batch);
    expected.extend(&interactive[4..]);
    assert_eq!(order, expected);
}

#[test]
fn a_batch_request_is_estimated_behind_the_interactive_requests_it_waits_for() {
    let mut c = emptied();
    for _ in 0..3 {
        c.acquire(1, ms(0)).unwrap();
    }
    let (_, at) = queued(c.acquire_with_priority(1, MAX_WAIT, Batch, ms(0)));
    assert_eq!(at, ms(400));
    // An interactive request now goes ahead of it, behind the three before it.
    let (_, at) = queued(c.acquire(1, ms(0)));
    assert_eq!(at, ms(400));
}

#[test]
fn a_batch_request_pushed_past_its_time_by_interactive_requests_is_refused() {
    let mut c = emptied();
    let (batch, at) = queued(c.acquire_with_priority(1, Duration::from_millis(250), Batch, ms(0)));
    assert_eq!(at, ms(100));
    queued(c.acquire(1, ms(0)));
    assert!(c.refuse_unreachable(ms(0)).rejected.is_empty(), "at 200 ms");
    let (_, at) = queued(c.acquire(1, ms(0)));
    assert_eq!(at, ms(200), "both interactive requests go first");
    let changes = c.refuse_unreachable(ms(0));
    assert_eq!(
        changes.rejected,
        [(
            batch,
            RejectReason::WaitTooLong {
                cause: WaitCause::Queue,
                needed: Duration::from_millis(300),
                max_wait: Duration::from_millis(250),
            }
        )]
    );
    assert!(!c.is_waiting(batch));
    assert_eq!(c.queue_len(), 2);
}

#[test]
fn a_batch_request_that_could_not_wait_behind_the_interactive_ones_is_refused_at_once() {
    let mut c = emptied();
    for _ in 0..4 {
        c.acquire(1, ms(0)).unwrap();
    }
    assert_eq!(
        c.acquire_with_priority(1, Duration::from_millis(450), Batch, ms(0)),
        Err(RejectReason::WaitTooLong {
            cause: WaitCause::Queue,
            needed: Duration::from_millis(500),
            max_wait: Duration::from_millis(450),
        })
    );
}

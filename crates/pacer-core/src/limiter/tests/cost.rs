//! The cost bound: no request leaves a debt the limiter cannot repay within `MaxWait`.

use super::*;

#[test]
fn the_most_one_request_may_cost_is_the_maximum_rate_times_burst_plus_max_wait() {
    // (max units/min, instances, burst s, MaxWait s, enabled, max_cost)
    let table: [(f64, u32, u64, u64, bool, u64); 6] = [
        (1200.0, 1, 1, 30, true, 620),    // 20/s × 31 s
        (1200.0, 2, 1, 30, true, 310),    // this process's share
        (1200.0, 1, 1, 0, true, 20),      // no wait: one full bucket
        (6000.0, 3, 1, 30, true, 1033),   // 33.3/s × 31 s, rounded down
        (90000.0, 1, 1, 60, true, 91500), // tokens: 1,500/s × 61 s
        (1200.0, 1, 1, 30, false, u64::MAX),
    ];
    for (max, instances, burst, max_wait, enabled, expected) in table {
        let o = LimiterOptions {
            min_units_per_minute: 60.0,
            initial_units_per_minute: Some(600.0),
            max_units_per_minute: max,
            instance_count: instances,
            burst: Duration::from_secs(burst),
            max_wait: Duration::from_secs(max_wait),
            enabled,
            ..LimiterOptions::default()
        };
        assert_eq!(
            core(o).max_cost(),
            expected,
            "max {max}, {instances} instances"
        );
    }
}

#[test]
fn a_cost_above_the_limit_is_refused_having_taken_nothing() {
    // 600/min now, 1,200/min at most, 1 s burst, 30 s MaxWait: at most 620 units.
    for cost in [621, 1_000_000, u64::MAX] {
        let mut c = core(options());
        let before = c.snapshot(ms(0)).available_units;
        assert_eq!(
            c.acquire(cost, ms(0)),
            Err(RejectReason::CostAboveLimit { cost, max: 620 })
        );
        let after = c.snapshot(ms(0));
        assert_eq!(after.available_units, before, "cost {cost}");
        assert_eq!((after.stats.rejected_cost, after.queue_len), (1, 0));
        assert_eq!(
            c.acquire(1, ms(0)),
            Ok(Acquired::Now),
            "the next request goes at once"
        );
    }
}

#[test]
fn at_every_rate_an_accepted_cost_leaves_a_debt_repaid_within_max_wait() {
    // (rate units/min, the dearest request that goes now, what one unit more gets)
    // MaxWait 30 s, burst 1 s: a request goes if cost ≤ rate/60 × 31.
    let table: [(f64, u64, &str); 4] = [
        (60.0, 31, "wait_too_long:queue"),
        (600.0, 310, "wait_too_long:queue"),
        (900.0, 465, "wait_too_long:queue"),
        (1200.0, 620, "cost_above_limit"), // the maximum rate: the bound is max_cost
    ];
    for (rate, dearest, refusal) in table {
        let o = LimiterOptions {
            initial_units_per_minute: Some(rate),
            ..options()
        };
        let mut c = core(o.clone());
        let refused = c.acquire(dearest + 1, ms(0)).unwrap_err();
        assert_eq!(refused.kind(), refusal, "rate {rate}");
        if let Some(needed) = refused.needed_wait() {
            assert!(needed > o.max_wait, "rate {rate}: {needed:?}");
        }
        assert_eq!(c.acquire(dearest, ms(0)), Ok(Acquired::Now), "rate {rate}");
        // The debt is repaid within MaxWait: the bucket is back at zero by then.
        let per_sec = rate / 60.0;
        let debt = -c.snapshot(ms(0)).available_units;
        assert!(debt / per_sec <= 30.0 + 1e-9, "rate {rate}: debt {debt}");
        assert!(c.snapshot(secs(30)).available_units >= -1e-6, "rate {rate}");
    }
}

#[test]
fn try_take_answers_a_wait_longer_than_max_wait_for_a_debt_that_outlasts_it() {
    let mut c = core(options()); // 10/s, bucket 10
    // 620 units: a full bucket now, then 61 s of debt at 10/s.
    assert_eq!(c.try_take(620, ms(0)), Err(Duration::from_secs(61)));
    assert_eq!(c.snapshot(ms(0)).available_units, 10.0, "nothing taken");
    assert_eq!(
        c.acquire(620, ms(0)),
        Err(RejectReason::WaitTooLong {
            cause: WaitCause::Queue,
            needed: Duration::from_secs(61),
            max_wait: Duration::from_secs(30),
        })
    );
    // A caller's own longer budget does not let it wait past MaxWait.
    let refused = c.acquire_within(620, Duration::from_secs(3600), ms(0));
    assert!(
        matches!(refused, Err(RejectReason::WaitTooLong { max_wait, .. }) if max_wait == Duration::from_secs(30))
    );
    assert_eq!(c.queue_len(), 0);
}

#[test]
fn a_cut_refuses_a_waiting_request_whose_debt_would_then_outlast_max_wait() {
    let mut c = core(options()); // 10/s, bucket 10: up to 310 units
    c.acquire(10, ms(0)).unwrap();
    let (big, _) = queued(c.acquire(250, ms(0)));
    let (small, _) = queued(c.acquire(1, ms(0)));
    // A throttle cuts to 420/min (7/s): 250 units would leave 243 / 7 = 35 s of debt.
    let changes = c.on_response(throttled(ms(0), None), ms(0));
    assert_eq!(changes.rate.map(|r| r.rate), Some(420.0));
    let refused: Vec<_> = changes
        .rejected
        .iter()
        .map(|(t, r)| (*t, r.kind()))
        .collect();
    assert_eq!(refused, vec![(big, "wait_too_long:queue")]);
    assert!(c.is_waiting(small), "the request behind it moves up");
}

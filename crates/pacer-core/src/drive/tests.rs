//! The wait run by its async driver ([`wait`]): the limiter's queue awaited, the strict
//! windows' stores asked, the clock slept on, a wait dropped after its grant.

use super::*;
use crate::engine::tests::{
    MAX_RETRY_AFTER, Responses, at, capped, engine_and_endpoint, in_flight, paced_endpoint, read,
    secs, units_left,
};
use crate::{
    EtaOutcome, EventsOutcome, FillOutcome, MemoryWindowStore, RejectReason, TryOutcome, WaitCause,
    WindowFuture, WindowGeometry, WindowStore, WindowTime,
};

#[tokio::test]
async fn wait_holds_for_the_stop_then_refuses_what_would_outlast_max_wait() {
    use crate::ManualClock;
    let (engine, endpoint) = engine_and_endpoint("a");
    let rules = Rules::default();
    let _ = engine.after(
        &endpoint,
        read(429, &[("retry-after", "5")]),
        1,
        at(0),
        at(0),
    );
    let manual = ManualClock::new();
    let clock: Arc<dyn Clock> = Arc::new(manual.clone());
    let attempt = Attempt::new(1, at(0), secs(30)).max_retry_after(MAX_RETRY_AFTER);
    let mut tokens = 0;
    let went = manual
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &attempt,
            &mut tokens,
        ))
        .await;
    assert!(went.unwrap() >= at(5), "held for the Retry-After");
    let _ = engine.after(
        &endpoint,
        read(429, &[("retry-after", "50")]),
        1,
        at(5),
        at(5),
    );
    let short = Attempt::new(1, manual.now(), secs(30)).max_retry_after(MAX_RETRY_AFTER);
    let refused = manual
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &short,
            &mut tokens,
        ))
        .await;
    match refused {
        Err(Refusal::Rejected(RejectReason::WaitTooLong { cause, needed, .. })) => {
            assert_eq!(cause, WaitCause::ServerStop);
            assert_eq!(needed, secs(50));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn wait_takes_a_window_s_units_and_waits_for_its_room() {
    use crate::{ManualClock, MemoryWindowStore};
    let (engine, endpoint) = engine_and_endpoint("a");
    let manual = ManualClock::new();
    let clock: Arc<dyn Clock> = Arc::new(manual.clone());
    let window =
        WindowLimit::new("w", 2, secs(10), MemoryWindowStore::new(manual.clone())).unwrap();
    let windows = [(&window, "w:a".to_owned())];
    let rules = Rules::default();
    let mut tokens = 0;
    let mut sent = Vec::new();
    for _ in 0..3 {
        let attempt = Attempt::new(1, manual.now(), secs(30)).windows(&windows);
        let at = manual
            .drive(crate::drive::wait(
                &engine,
                &rules,
                &clock,
                &endpoint,
                &attempt,
                &mut tokens,
            ))
            .await
            .unwrap();
        sent.push(at);
    }
    assert_eq!(sent[0], sent[1], "two fit at once");
    assert!(
        sent[2] - sent[0] >= secs(9),
        "the third waits for the window: {sent:?}"
    );
    let above = Attempt::new(3, manual.now(), secs(30)).windows(&windows);
    let refused = manual
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &above,
            &mut tokens,
        ))
        .await;
    assert!(
        matches!(
            refused,
            Err(Refusal::Rejected(RejectReason::AboveWindowLimit { .. }))
        ),
        "{refused:?}"
    );
}

/// Where the fast path goes, the wait comes to the same time and takes the same: the two from
/// the same state, each in its own engine.
#[tokio::test]
async fn where_the_fast_path_goes_the_wait_goes_at_the_same_time() {
    let plenty: &[(&'static str, &str)] = &[
        ("ratelimit-policy", "\"d\";q=100;w=60"),
        ("ratelimit", "\"d\";r=90;t=30"),
    ];
    let tokens: &[(&'static str, &str)] = &[
        ("x-ratelimit-limit-tokens", "1000"),
        ("x-ratelimit-remaining-tokens", "100"),
        ("x-ratelimit-reset-tokens", "60s"),
    ];
    let stopped: &[(&'static str, &str)] = &[("retry-after", "1")];
    let cases: [(&str, Responses<'_>, Option<u64>); 4] = [
        ("no fields", &[], None),
        ("draft-11 fields", &[(200, plenty)], None),
        ("a budget in tokens", &[(200, tokens)], Some(30)),
        ("a stop that is over", &[(429, stopped)], None),
    ];
    let rules = Rules::default();
    for (name, responses, cost) in cases {
        let clock = crate::ManualClock::new();
        clock.advance(secs(2));
        let now = clock.now();
        let (fast, fast_endpoint) = paced_endpoint(&clock, responses);
        let (slow, slow_endpoint) = paced_endpoint(&clock, responses);
        let attempt = Attempt::new(3, now, secs(30)).tokens(cost);
        let (mut fast_tokens, mut slow_tokens) = (0, 0);
        let went = fast.go_now(&rules, &fast_endpoint, &attempt, &mut fast_tokens);
        let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
        let waited = crate::drive::wait(
            &slow,
            &rules,
            &dyn_clock,
            &slow_endpoint,
            &attempt,
            &mut slow_tokens,
        )
        .await;
        assert_eq!(went, Some(now), "{name}");
        assert_eq!(waited, Ok(now), "{name}");
        assert!(
            (units_left(&fast_endpoint) - units_left(&slow_endpoint)).abs() < 1e-9,
            "{name}"
        );
        assert_eq!(fast_tokens != 0, slow_tokens != 0, "{name}");
        assert_eq!(
            fast_endpoint.snapshot(now).map(|s| s.since_last_request()),
            slow_endpoint.snapshot(now).map(|s| s.since_last_request()),
            "{name}"
        );
        assert_eq!(
            fast.tokens_wait(&fast_endpoint, Some(80.into()), now),
            slow.tokens_wait(&slow_endpoint, Some(80.into()), now),
            "{name}"
        );
    }
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
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &second,
            &mut tokens,
        ))
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
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &timed,
            &mut tokens,
        ))
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
        let mut wait = Box::pin(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &attempt,
            &mut tokens,
        ));
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

/// In a fleet too large for shares (2,000 members at 3,000 units a minute: an even share
/// delivers under a unit within `MaxWait`), a request's units come from the fleet's pool: the
/// fast path steps aside, the wait draws from the store, goes when the store says, and a draw
/// beyond a tenth of the window is refused, having taken nothing.
#[tokio::test]
async fn a_large_fleet_s_requests_draw_from_its_pool() {
    use crate::{
        FleetCall, FleetHandle, FleetLink, FleetMember, FleetOptions, Gauges, Limiter,
        LimiterOptions, ManualClock, MemoryFleetStore, SyncRequest,
    };
    use std::time::Duration;
    let manual = ManualClock::new();
    manual.advance(secs(10));
    let clock: Arc<dyn Clock> = Arc::new(manual.clone());
    let store = Arc::new(MemoryFleetStore::new(manual.clone()));
    let key = "orders:a";
    let t0 = manual.now();
    for i in 0..1_999 {
        let mut other = SyncRequest::new(format!("other-{i}"), secs(3_600), 0);
        other.claim = Duration::from_millis(1);
        let _ = store.sync_at(key, &other, t0);
    }
    // The member syncs a little later: 2,000 members, the tick is its own; its commit writes
    // the fleet's first state, which draws from the pool.
    manual.advance(secs(1));
    let whole = LimiterOptions {
        initial_units_per_minute: Some(3_000.0),
        ..LimiterOptions::default()
    };
    let mut member = FleetMember::new(key, "me", FleetOptions::default(), whole, t0);
    let now = manual.now();
    let mut call = member.poll(Gauges::default(), now);
    while let Some(c) = call {
        call = match c {
            FleetCall::Sync(r) => member.on_sync(store.sync_at(key, &r, now), now, now),
            FleetCall::Commit(r) => member.on_commit(store.commit_at(key, &r, now), now),
        };
    }
    assert_eq!(member.members(), 2_000);
    let draw = member
        .pool(1, secs(30), now)
        .expect("the fleet draws from its pool");
    assert_eq!(draw.max_wait, secs(6), "a tenth of the 60 s window");
    assert_eq!(
        member.share(now),
        Some(3_000.0),
        "its limiter at the whole rate"
    );

    // The endpoint's own limiter is far above the pool: what paces is the pool.
    let engine = Engine::new(100, Duration::from_secs(3_600));
    let endpoint = engine.endpoint(
        "a",
        now,
        || {
            let own = LimiterOptions {
                initial_units_per_minute: Some(600_000.0),
                ..LimiterOptions::default()
            };
            Limiter::builder(own)
                .clock(Arc::clone(&clock))
                .build()
                .unwrap()
        },
        |_| {},
    );
    let handle = FleetHandle::new(member, FleetLink::new());
    assert!(endpoint.join_fleet(Arc::clone(&handle)));
    // The task is not run here; building it hands the handle its store.
    let _task = FleetHandle::run(
        &handle,
        Arc::clone(&store) as Arc<dyn crate::FleetStore>,
        endpoint.limiter().clone(),
        Arc::clone(&clock),
    );
    let rules = Rules::default();
    let one = Attempt::new(1, now, secs(30));
    let mut tokens = 0;
    assert_eq!(
        engine.go_now(&rules, &endpoint, &one, &mut tokens),
        None,
        "no fast path"
    );
    // The pool's slack is a second of the rate, 50 units ahead: 51 go at once, the next a
    // unit's time (20 ms) later.
    let mut sent = Vec::new();
    for _ in 0..52 {
        let attempt = Attempt::new(1, manual.now(), secs(30));
        let went = manual
            .drive(crate::drive::wait(
                &engine,
                &rules,
                &clock,
                &endpoint,
                &attempt,
                &mut tokens,
            ))
            .await;
        sent.push(went.expect("sent"));
    }
    assert!(
        sent[..51].iter().all(|&t| t == now),
        "the burst: {:?}",
        &sent[..3]
    );
    assert_eq!(
        sent[51],
        now + Duration::from_millis(20),
        "then the fleet's rate"
    );
    // 400 units go a unit's time later, and take 8 s of the pool: the next request would wait
    // 8 s, beyond a tenth of the window. With a `MaxWait` of 7 s it is refused, having taken
    // nothing.
    let big = Attempt::new(400, manual.now(), secs(30));
    let went = manual
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &big,
            &mut tokens,
        ))
        .await;
    assert_eq!(went, Ok(now + Duration::from_millis(40)));
    let short = Attempt::new(1, manual.now(), secs(7));
    let refused = manual
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &short,
            &mut tokens,
        ))
        .await;
    match refused {
        Err(Refusal::Rejected(RejectReason::WaitTooLong {
            cause,
            needed,
            max_wait,
        })) => {
            assert_eq!(cause, WaitCause::Queue);
            assert_eq!((needed, max_wait), (secs(8), secs(7)), "its own MaxWait");
        }
        other => panic!("{other:?}"),
    }
    let draw = handle.pool(1, secs(30), manual.now()).expect("a draw");
    assert_eq!(
        store.draw_at(key, &draw, manual.now()).earliest,
        manual.now() + secs(8),
        "the refusal took nothing"
    );
    // With a `MaxWait` of 30 s it waits until its units are within the horizon (2 s), draws
    // again and goes when they are due: a pool's horizon does not cut a longer `MaxWait`.
    let t = manual.now();
    let patient = Attempt::new(1, t, secs(30));
    let went = manual
        .drive(crate::drive::wait(
            &engine,
            &rules,
            &clock,
            &endpoint,
            &patient,
            &mut tokens,
        ))
        .await;
    assert_eq!(went, Ok(t + secs(8)));
}

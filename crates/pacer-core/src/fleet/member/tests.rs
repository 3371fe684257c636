//! The member against a store in memory: demand and shares, one cut per throttle, leases, ticks,
//! and a store that stops answering or loses the state.

use super::*;
use crate::{FleetError, MemoryFleetStore};

const KEY: &str = "api:https://api.example.com";

fn at(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

fn options() -> LimiterOptions {
    LimiterOptions {
        initial_units_per_minute: Some(3_000.0),
        max_units_per_minute: 10_000.0,
        ..LimiterOptions::default()
    }
}

fn member(id: &str) -> FleetMember {
    FleetMember::new(KEY, id, FleetOptions::default(), options(), at(0))
}

/// Every call `member` wants at `now`, each answered by `store` at once.
fn exchange(member: &mut FleetMember, store: &MemoryFleetStore, now: Timestamp) {
    let gauges = Gauges {
        measured: 1_000.0,
        ..Gauges::default()
    };
    let mut call = member.poll(gauges, now);
    while let Some(c) = call {
        call = match c {
            FleetCall::Sync(r) => member.on_sync(store.sync_at(KEY, &r, now), now, now),
            FleetCall::Commit(r) => member.on_commit(store.commit_at(KEY, &r, now), now),
        };
    }
}

fn throttled(sent_at: Timestamp) -> Feedback {
    Feedback {
        units: 1,
        sent_at,
        signal: Signal::Throttled { retry_after: None },
    }
}

#[test]
fn one_request_just_before_a_sync_is_not_read_as_a_heavy_demand() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let (mut a, mut b) = (member("a"), member("b"));
    // One request each, a millisecond before the first sync: over a millisecond that is
    // 60,000 units a minute; counted over a period at least, a light demand.
    a.on_asked(1, at(0));
    b.on_asked(1, at(0));
    let period = FleetOptions::default().period.as_millis() as u64;
    for t in [1, period, 2 * period, 3 * period] {
        exchange(&mut a, &store, at(t));
        exchange(&mut b, &store, at(t));
    }
    let (sa, sb) = (
        a.share(at(3 * period)).unwrap(),
        b.share(at(3 * period)).unwrap(),
    );
    // Both light: each takes an even half of the fleet's rate (3,000), to within what the
    // demands moved since the tick that split it.
    let rate = a.fleet_rate().unwrap();
    assert!((sa - sb).abs() < 1.0, "{sa} {sb}");
    assert!(
        (sa + sb) / rate > 0.99 && sa + sb <= rate,
        "{sa} + {sb} of {rate}"
    );
}

#[test]
fn members_share_one_rate_by_demand_and_one_throttle_cuts_it_for_all() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let (mut a, mut b) = (member("a"), member("b"));
    // Demand: a asks 6,000 units a minute, b 600 (less than an even share of 3,000).
    for t in 0..=12 {
        if t % 5 == 0 {
            exchange(&mut a, &store, at(t * 100));
            exchange(&mut b, &store, at(t * 100));
        }
        a.on_asked(10, at(t * 100));
        b.on_asked(1, at(t * 100));
    }
    assert_eq!((a.members(), b.members()), (2, 2));
    let (sa, sb) = (a.share(at(1_200)).unwrap(), b.share(at(1_200)).unwrap());
    // Demands are measured over the periods, and the split is the last tick's.
    assert!((sa + sb - 3_000.0).abs() < 150.0, "{sa} + {sb}");
    assert!(
        (sb - 750.0).abs() < 100.0,
        "b takes its demand and a quarter more: {sb}"
    );
    assert!(sa > 2.0 * sb, "{sa} against {sb}");
    // b is throttled: the fleet's one cut reaches a at its next sync.
    b.on_response(&throttled(at(1_200)), at(1_300));
    assert_eq!(
        b.next_poll_at(),
        Timestamp::ZERO,
        "a throttle is reported at once"
    );
    exchange(&mut b, &store, at(1_300));
    let cut = b.fleet_rate().unwrap();
    assert!(cut < 3_000.0, "{cut}");
    exchange(&mut a, &store, at(1_500));
    assert_eq!(a.fleet_rate(), Some(cut));
    assert_eq!(a.decreases(), 1);
    // a meets the same full window: a request sent before the cut cuts nothing more.
    a.on_response(&throttled(at(1_250)), at(1_550));
    exchange(&mut a, &store, at(1_550));
    assert_eq!((a.fleet_rate(), a.decreases()), (Some(cut), 1));
}

#[test]
fn a_member_that_stops_leaves_the_count_when_its_lease_ends() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let (mut a, mut b) = (member("a"), member("b"));
    exchange(&mut a, &store, at(0));
    exchange(&mut b, &store, at(0));
    exchange(&mut a, &store, at(250));
    assert_eq!(a.members(), 2);
    // b stops; its lease is 3 s.
    exchange(&mut a, &store, at(2_900));
    assert_eq!(a.members(), 2);
    exchange(&mut a, &store, at(3_200));
    assert_eq!(a.members(), 1);
}

#[test]
fn one_member_ticks_each_period() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let mut members: Vec<FleetMember> = ["a", "b", "c"].iter().map(|id| member(id)).collect();
    let mut ticks = 0;
    for period in 0..8u64 {
        for m in &mut members {
            let now = at(period * 250);
            let mut call = m.poll(Gauges::default(), now);
            while let Some(c) = call {
                call = match c {
                    FleetCall::Sync(r) => {
                        let reply = store.sync_at(KEY, &r, now);
                        ticks += usize::from(reply.tick.is_some());
                        m.on_sync(reply, now, now)
                    }
                    FleetCall::Commit(r) => m.on_commit(store.commit_at(KEY, &r, now), now),
                };
            }
        }
    }
    assert_eq!(ticks, 8, "one tick a period, whoever runs it");
}

#[test]
fn a_store_that_stops_answering_leaves_the_last_share_then_the_member_s_own_control() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let mut a = member("a");
    exchange(&mut a, &store, at(0));
    a.on_response(&throttled(at(0)), at(100));
    exchange(&mut a, &store, at(100));
    let share = a.share(at(100)).expect("in force");
    // The store goes quiet: the sync in flight times out.
    let call = a.poll(Gauges::default(), at(400));
    assert!(matches!(call, Some(FleetCall::Sync(_))));
    assert_eq!(a.poll(Gauges::default(), at(450)), None, "in flight");
    assert_eq!(a.share(at(1_000)), Some(share), "the last share holds");
    assert_eq!(
        a.share(at(2_200)),
        None,
        "after FallbackAfter: its own control"
    );
    assert!(!a.is_in_force(at(2_200)));
    // The store answers again: the fleet's rate is back in force.
    exchange(&mut a, &store, at(3_000));
    assert_eq!(a.share(at(3_000)), Some(share));
}

#[test]
fn a_store_that_lost_the_state_gets_the_member_s_back() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let mut a = member("a");
    exchange(&mut a, &store, at(0));
    a.on_response(&throttled(at(0)), at(100));
    exchange(&mut a, &store, at(100));
    let cut = a.fleet_rate().unwrap();
    store.clear(); // a flush
    exchange(&mut a, &store, at(400));
    let mut b = member("b");
    exchange(&mut b, &store, at(450));
    assert_eq!(
        b.fleet_rate(),
        Some(cut),
        "relearnt nothing: the member kept it"
    );
    assert_eq!(b.decreases(), 1);
}

#[test]
fn a_member_syncs_ten_times_in_a_short_window_and_at_period_in_a_long_one() {
    let with_window = |ms: u64| {
        let limiter = LimiterOptions {
            quota_window: Duration::from_millis(ms),
            ..options()
        };
        FleetMember::new(KEY, "a", FleetOptions::default(), limiter, at(0))
    };
    // Before the fleet's state is read, the limiter's own `QuotaWindow` says.
    assert_eq!(with_window(60_000).period(), Duration::from_millis(250));
    assert_eq!(with_window(2_500).period(), Duration::from_millis(250));
    assert_eq!(with_window(1_000).period(), Duration::from_millis(100));
    assert_eq!(
        with_window(200).period(),
        Duration::from_millis(50),
        "at least 50 ms"
    );
    // Syncs come a period apart, and the store hands out the tick as often.
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let mut a = with_window(1_000);
    exchange(&mut a, &store, at(0));
    assert_eq!(a.next_poll_at(), at(100));
    assert!(a.poll(Gauges::default(), at(99)).is_none());
    exchange(&mut a, &store, at(100));
    assert_eq!(a.next_poll_at(), at(200));
    // A `Period` shorter than a tenth of the window stays.
    let short = FleetOptions {
        period: Duration::from_millis(20),
        ..FleetOptions::default()
    };
    let b = FleetMember::new(KEY, "b", short, options(), at(0));
    assert_eq!(b.period(), Duration::from_millis(20));
}

/// A fleet of 2,000 members syncs 1,000 times a second together: each member every 2 s (give
/// or take a fifth, apart from the others), on a lease long enough that none drops out between
/// its syncs; the fleet's ticks keep their period.
#[test]
fn a_large_fleet_spreads_its_syncs_and_keeps_its_ticks() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let mut fleet: Vec<FleetMember> = (0..2_000).map(|i| member(&format!("m{i}"))).collect();
    // Each joins at 0 (seeing the members before it), then syncs again at its next poll.
    for m in &mut fleet {
        exchange(m, &store, at(0));
    }
    assert_eq!(
        fleet[0].sync_period(),
        Duration::from_millis(250),
        "alone then"
    );
    // Each learns the count at a sync and spaces the syncs after it: two rounds.
    let mut ticks = 0;
    let mut due: Vec<Timestamp> = Vec::new();
    for round in 0..2 {
        for m in &mut fleet {
            let now = m.next_poll_at();
            assert!(now <= at(5_000), "{now:?}");
            let Some(FleetCall::Sync(request)) = m.poll(Gauges::default(), now) else {
                panic!("a sync is due");
            };
            let reply = store.sync_at(KEY, &request, now);
            ticks += usize::from(reply.tick.is_some());
            if let Some(FleetCall::Commit(c)) = m.on_sync(reply, now, now) {
                m.on_commit(store.commit_at(KEY, &c, now), now);
            }
            if round == 1 {
                assert_eq!(m.sync_period(), Duration::from_secs(2));
                assert!(
                    request.lease >= Duration::from_secs(6),
                    "{:?}",
                    request.lease
                );
                let gap = m.next_poll_at() - now;
                assert!(
                    gap >= Duration::from_millis(1_600) && gap <= Duration::from_millis(2_400),
                    "{gap:?}"
                );
                due.push(m.next_poll_at());
            }
        }
    }
    let last = fleet.last().expect("a member");
    assert_eq!(last.members(), 2_000, "no lease ran out");
    assert!(last.lease() >= Duration::from_secs(6), "three sync periods");
    due.sort();
    due.dedup();
    assert!(
        due.len() > 1_900,
        "the members' next syncs are spread: {}",
        due.len()
    );
    assert!(ticks >= 1, "the tick was handed out");
    // Two members are one small fleet: they sync on the beat, on their `Lease`.
    let small = MemoryFleetStore::new(crate::RealClock::new());
    let mut pair = vec![member("a"), member("b")];
    for round in 0..2 {
        for m in &mut pair {
            exchange(m, &small, at(round * 250));
        }
    }
    assert_eq!(pair[0].members(), 2);
    assert_eq!(pair[0].lease(), Duration::from_secs(3));
    assert_eq!(pair[0].next_poll_at(), at(500), "on the beat");
}

/// The window the fleet's controller learnt reaches each member's own limiter through its link
/// while the fleet's rate is in force: a bare throttle there pauses for a quarter of it, not for
/// `PauseWithoutRetryAfter`'s second, as the fleet's own stop does.
#[test]
fn the_window_the_fleet_learnt_caps_a_member_s_pause_after_a_bare_throttle() {
    use crate::{Controller, FleetFollower, FleetLink, LimiterCore};
    use std::sync::Arc;
    let store = MemoryFleetStore::new(crate::RealClock::new());
    // `QuotaWindow` a minute, as configured by nobody.
    let own = options();
    let link = FleetLink::new();
    let follower = || Box::new(FleetFollower::new(&own, Arc::clone(&link)));
    let mut core = LimiterCore::with_controller(own.clone(), follower(), at(0)).unwrap();
    let mut a = member("a");
    exchange(&mut a, &store, at(0));
    assert_eq!(a.server_window(), None);
    for t in (100..=1_000).step_by(100) {
        let ok = Feedback {
            units: 1,
            sent_at: at(t),
            signal: Signal::Success,
        };
        a.on_response(&ok, at(t));
    }
    // A throttle 1 s after the start asking for 1 s: the server counts over 2 s at most.
    let short = Feedback {
        units: 1,
        sent_at: at(1_000),
        signal: Signal::Throttled {
            retry_after: Some(Duration::from_secs(1)),
        },
    };
    a.on_response(&short, at(1_000));
    exchange(&mut a, &store, at(1_000));
    assert_eq!(a.server_window(), Some(Duration::from_secs(2)));
    assert_eq!(
        Controller::server_window(&*follower()),
        None,
        "not following yet: the member's own controller learnt nothing"
    );
    let mut counted = 0;
    let _ = a.steer(&link, &mut counted, &mut core, at(1_050));
    assert!(link.is_following());
    assert_eq!(
        Controller::server_window(&*follower()),
        Some(Duration::from_secs(2))
    );
    // The fleet's stop ended at 2 s; a bare throttle at 3 s pauses the member for 500 ms.
    let changes = core.on_response(throttled(at(3_000)), at(3_000));
    assert_eq!(changes.paused_until, Some(at(3_500)));
}

/// A fleet of 2,000 at 3,000 a minute draws from its pool (an even share delivers under a unit
/// within `MaxWait`); a store without a pool, or one that did not answer a draw, leaves the
/// member on its even share (not the whole rate the pool paced) until its next good sync.
#[test]
fn a_fleet_too_large_for_shares_draws_from_its_pool() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    for i in 0..1_999 {
        let mut other = SyncRequest::new(format!("o{i}"), Duration::from_secs(3_600), 0);
        other.claim = Duration::from_millis(1);
        let _ = store.sync_at(KEY, &other, at(0));
    }
    let mut me = member("me");
    exchange(&mut me, &store, at(10));
    assert_eq!(me.members(), 2_000);
    assert!(me.draws(at(10)));
    let draw = me.pool(2, Duration::from_secs(30), at(10)).expect("a draw");
    assert_eq!((draw.units, draw.rate, draw.burst), (2.0, 3_000.0, 50.0));
    assert_eq!(me.share(at(10)), Some(3_000.0));
    // A draw the store did not answer: the even share until the next good sync.
    let down = FleetError::unavailable("down");
    assert_eq!(me.on_draw(Err(&down)), Drawn::Unanswered);
    assert!(me.pool(1, Duration::from_secs(30), at(10)).is_none());
    assert_eq!(me.share(at(10)), Some(1.5));
    exchange(&mut me, &store, at(260));
    assert!(
        me.pool(1, Duration::from_secs(30), at(260)).is_some(),
        "back after a sync"
    );
    // A store with no pool: never asked again.
    assert_eq!(me.on_draw(Err(&FleetError::NoPool)), Drawn::Unanswered);
    exchange(&mut me, &store, at(510));
    assert!(me.pool(1, Duration::from_secs(30), at(510)).is_none());
    assert!(!me.draws(at(510)));
    assert_eq!(me.share(at(510)), Some(1.5));
    // Two members of 3,000 a minute share it: no pool.
    let small = MemoryFleetStore::new(crate::RealClock::new());
    let (mut a, mut b) = (member("a"), member("b"));
    for t in [0, 250, 500] {
        exchange(&mut a, &small, at(t));
        exchange(&mut b, &small, at(t));
    }
    assert!(a.pool(1, Duration::from_secs(30), at(500)).is_none());
}

#[test]
fn the_count_is_settled_by_the_second_sync_or_by_a_store_that_never_answered() {
    let store = MemoryFleetStore::new(crate::RealClock::new());
    let (mut a, mut b) = (member("a"), member("b"));
    assert!(!a.count_settled(at(0)), "nothing heard yet");
    // a syncs first and counts itself alone; b joins a moment later.
    exchange(&mut a, &store, at(0));
    exchange(&mut b, &store, at(1));
    assert_eq!(a.members(), 1);
    assert!(!a.count_settled(at(100)), "b is not counted yet");
    exchange(&mut a, &store, at(250));
    assert_eq!(a.members(), 2);
    assert!(a.count_settled(at(250)));

    // A member whose store never answers acts alone on its own count after `fallback_after`.
    let lonely = member("c");
    let fallback = FleetOptions::default()
        .fallback_after
        .max(lonely.sync_period() * 2);
    assert!(!lonely.count_settled(Timestamp::ZERO + (fallback - Duration::from_millis(1))));
    assert!(lonely.count_settled(Timestamp::ZERO + fallback));
}

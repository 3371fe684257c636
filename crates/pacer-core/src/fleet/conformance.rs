//! The conformance suite every [`FleetStore`] must pass (feature `test-util`): the memory store's
//! unit tests and `pacer-redis`'s integration tests both expand
//! [`fleet_conformance_tests!`](crate::fleet_conformance_tests) with their own [`FleetFixture`].
//! The scenarios run on a [`ManualClock`] shared by the test and the store (the Redis store
//! reads it through a test build of its Lua library), so every time is exact.

use crate::window::conformance::BoxFuture;
use crate::{
    CommitRequest, DrawRequest, FleetStore, Gauges, ManualClock, SyncReply, SyncRequest, Timestamp,
};
use std::time::Duration;

/// A store under test, with the manual clock it reads.
///
/// ```
/// use pacer_core::fleet_conformance::FleetFixture;
/// use pacer_core::{FleetStore, ManualClock, MemoryFleetStore};
///
/// struct Memory {
///     clock: ManualClock,
///     store: MemoryFleetStore,
/// }
///
/// impl FleetFixture for Memory {
///     fn store(&self) -> &dyn FleetStore {
///         &self.store
///     }
///     fn clock(&self) -> &ManualClock {
///         &self.clock
///     }
/// }
///
/// async fn memory() -> Memory {
///     let clock = ManualClock::new();
///     Memory { store: MemoryFleetStore::new(clock.clone()), clock }
/// }
///
/// pacer_core::fleet_conformance_tests!(memory());
/// ```
pub trait FleetFixture: Send + Sync {
    /// The store under test.
    fn store(&self) -> &dyn FleetStore;

    /// The manual clock the store reads.
    fn clock(&self) -> &ManualClock;

    /// Removes what the test left behind (after a passing scenario).
    fn cleanup(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Expands to one `#[tokio::test]` per fleet conformance scenario. `$fixture` is an expression
/// whose value is a future of a [`FleetFixture`], evaluated afresh for each test.
#[macro_export]
macro_rules! fleet_conformance_tests {
    ($fixture:expr) => {
        $crate::fleet_conformance_tests!(@each $fixture;
            members_are_counted_by_their_lease,
            the_state_comes_only_when_its_version_differs,
            a_commit_over_another_version_is_refused_with_the_state,
            one_member_holds_the_tick_until_it_commits_or_its_claim_ends,
            accepted_units_are_summed_until_a_commit_counts_them,
            a_tick_sees_every_live_member_s_gauges,
            leave_drops_a_member_at_once,
            an_urgent_commit_is_news_to_the_others,
            the_store_s_clock_is_the_fleet_s_timeline,
            fleets_are_independent,
            the_pool_hands_out_units_at_its_rate,
        );
    };
    (@each $fixture:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let fixture = $fixture.await;
                $crate::fleet_conformance::$name(&fixture).await;
                $crate::fleet_conformance::FleetFixture::cleanup(&fixture).await;
            }
        )*
    };
}

const LEASE: Duration = Duration::from_secs(3);
const CLAIM: Duration = Duration::from_millis(250);

fn request(member: &str, known: u64) -> SyncRequest {
    let mut r = SyncRequest::new(member, LEASE, known);
    r.claim = CLAIM;
    r
}

async fn sync(f: &dyn FleetFixture, key: &str, r: &SyncRequest) -> SyncReply {
    f.store().sync(key, r).await.expect("sync")
}

async fn commit(
    f: &dyn FleetFixture,
    key: &str,
    member: &str,
    version: u64,
    state: &[u8],
) -> crate::CommitReply {
    let c = CommitRequest::new(member, version, state.to_vec());
    f.store().commit(key, &c).await.expect("commit")
}

/// A member is counted until its lease ends.
pub async fn members_are_counted_by_their_lease(f: &dyn FleetFixture) {
    let key = "conf:lease";
    assert_eq!(sync(f, key, &request("a", 0)).await.members, 1);
    f.clock().advance(Duration::from_millis(100));
    assert_eq!(sync(f, key, &request("b", 0)).await.members, 2);
    f.clock().advance(Duration::from_millis(2_950)); // a's lease ends at 3 s, b's at 3.1 s
    assert_eq!(
        sync(f, key, &request("b", 0)).await.members,
        1,
        "a's lease ran out"
    );
    assert_eq!(sync(f, key, &request("a", 0)).await.members, 2, "a is back");
}

/// The state is sent only to a member that holds another version.
pub async fn the_state_comes_only_when_its_version_differs(f: &dyn FleetFixture) {
    let key = "conf:version";
    let r = sync(f, key, &request("a", 0)).await;
    assert_eq!((r.version, r.state), (0, None), "no state yet");
    let c = commit(f, key, "a", 0, b"first").await;
    assert!(c.committed);
    assert_eq!(c.version, 1);
    let r = sync(f, key, &request("b", 0)).await;
    assert_eq!((r.version, r.state.as_deref()), (1, Some(&b"first"[..])));
    let r = sync(f, key, &request("b", 1)).await;
    assert_eq!((r.version, r.state), (1, None), "b holds it already");
}

/// A commit made from an old version is refused, with the state that won.
pub async fn a_commit_over_another_version_is_refused_with_the_state(f: &dyn FleetFixture) {
    let key = "conf:cas";
    assert!(commit(f, key, "a", 0, b"a's").await.committed);
    let lost = commit(f, key, "b", 0, b"b's").await;
    assert!(!lost.committed);
    assert_eq!(
        (lost.version, lost.state.as_deref()),
        (1, Some(&b"a's"[..]))
    );
    assert!(commit(f, key, "b", 1, b"b's").await.committed);
    let r = sync(f, key, &request("c", 0)).await;
    assert_eq!((r.version, r.state.as_deref()), (2, Some(&b"b's"[..])));
}

/// A due tick goes to one member at a time: until it commits (which sets the next one's time)
/// or its claim ends.
pub async fn one_member_holds_the_tick_until_it_commits_or_its_claim_ends(f: &dyn FleetFixture) {
    let key = "conf:tick";
    let a = sync(f, key, &request("a", 0)).await;
    assert!(a.tick.is_some(), "a fleet that never ticked is due");
    assert!(
        sync(f, key, &request("b", 0)).await.tick.is_none(),
        "a holds it"
    );
    assert!(
        sync(f, key, &request("a", 0)).await.tick.is_some(),
        "a still does"
    );
    let mut done = CommitRequest::new("a", 0, b"ticked".to_vec());
    done.next_tick = Some(a.now.saturating_add(Duration::from_millis(500)));
    assert!(f.store().commit(key, &done).await.unwrap().committed);
    assert!(
        sync(f, key, &request("b", 1)).await.tick.is_none(),
        "not due yet"
    );
    f.clock().advance(Duration::from_millis(500));
    assert!(
        sync(f, key, &request("b", 1)).await.tick.is_some(),
        "due: b's"
    );
    assert!(
        sync(f, key, &request("a", 1)).await.tick.is_none(),
        "b holds it"
    );
    f.clock().advance(CLAIM);
    assert!(
        sync(f, key, &request("a", 1)).await.tick.is_some(),
        "b's claim ended without a commit"
    );
}

/// Accepted units add up until a commit counts them; what came after stays.
pub async fn accepted_units_are_summed_until_a_commit_counts_them(f: &dyn FleetFixture) {
    let key = "conf:accepted";
    let mut a = request("a", 0);
    a.accepted = 10.0;
    assert_eq!(sync(f, key, &a).await.accepted, 10.0);
    let mut b = request("b", 0);
    b.accepted = 5.5;
    assert_eq!(sync(f, key, &b).await.accepted, 15.5);
    let mut counted = CommitRequest::new("a", 0, b"counted 10".to_vec());
    counted.accepted = 10.0;
    assert!(f.store().commit(key, &counted).await.unwrap().committed);
    assert_eq!(sync(f, key, &request("a", 1)).await.accepted, 5.5);
    // A lost commit counts nothing.
    let mut lost = CommitRequest::new("b", 0, b"stale".to_vec());
    lost.accepted = 5.5;
    assert!(!f.store().commit(key, &lost).await.unwrap().committed);
    assert_eq!(sync(f, key, &request("a", 1)).await.accepted, 5.5);
}

/// The member holding a tick is given every live member's last gauges.
pub async fn a_tick_sees_every_live_member_s_gauges(f: &dyn FleetFixture) {
    let key = "conf:gauges";
    let mut a = request("a", 0);
    a.gauges = Gauges {
        demand: 100.0,
        ..Gauges::new(90.0, 4.0, true)
    };
    let first = sync(f, key, &a).await;
    let mut done = CommitRequest::new("a", 0, b"x".to_vec());
    done.next_tick = Some(first.now.saturating_add(Duration::from_millis(10)));
    assert!(f.store().commit(key, &done).await.unwrap().committed);
    f.clock().advance(Duration::from_millis(100));
    let mut b = request("b", 1);
    b.gauges = Gauges {
        demand: 50.5,
        ..Gauges::new(40.25, 0.0, false)
    };
    let tick = sync(f, key, &b).await.tick.expect("due: b's");
    let mut got = tick.gauges.clone();
    got.sort_by(|x, y| x.demand.total_cmp(&y.demand));
    assert_eq!(got, vec![b.gauges, a.gauges]);
    // a's lease ends: a tick then sees b alone.
    let mut again = CommitRequest::new("b", 1, b"y".to_vec());
    again.next_tick = Some(first.now);
    assert!(f.store().commit(key, &again).await.unwrap().committed);
    f.clock().advance(LEASE);
    let tick = sync(f, key, &request("b", 2)).await.tick.expect("due");
    assert_eq!(tick.gauges.len(), 1);
}

/// `leave` drops a member at once.
pub async fn leave_drops_a_member_at_once(f: &dyn FleetFixture) {
    let key = "conf:leave";
    sync(f, key, &request("a", 0)).await;
    assert_eq!(sync(f, key, &request("b", 0)).await.members, 2);
    f.store().leave(key, "a").await.expect("leave");
    assert_eq!(sync(f, key, &request("b", 0)).await.members, 1);
}

/// A member waiting for news hears of an urgent commit; an ordinary one is no news.
pub async fn an_urgent_commit_is_news_to_the_others(f: &dyn FleetFixture) {
    let key = "conf:news";
    sync(f, key, &request("a", 0)).await;
    let store = f.store();
    // An ordinary commit: the wait goes on.
    let plain = CommitRequest::new("b", 0, b"tick".to_vec());
    let news = store.news(key);
    let committed = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        store.commit(key, &plain).await.expect("commit")
    };
    let (c, waited) = tokio::join!(committed, async {
        tokio::time::timeout(Duration::from_millis(600), news).await
    });
    assert!(c.committed);
    assert!(waited.is_err(), "no news of an ordinary commit");
    // An urgent one: the waiting member hears of it.
    let mut cut = CommitRequest::new("b", 1, b"cut".to_vec());
    cut.urgent = true;
    let news = store.news(key);
    let committed = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        store.commit(key, &cut).await.expect("commit")
    };
    let (c, waited) = tokio::join!(committed, async {
        tokio::time::timeout(Duration::from_secs(5), news).await
    });
    assert!(c.committed);
    assert!(waited.is_ok(), "the news came");
}

/// Each answer carries the store's clock, which the manual clock moves.
pub async fn the_store_s_clock_is_the_fleet_s_timeline(f: &dyn FleetFixture) {
    let key = "conf:clock";
    let t0 = sync(f, key, &request("a", 0)).await.now;
    f.clock().advance(Duration::from_millis(1_250));
    let t1 = sync(f, key, &request("a", 0)).await.now;
    assert_eq!(
        t1.saturating_duration_since(t0),
        Duration::from_millis(1_250)
    );
    assert!(t0 > Timestamp::ZERO || t1 > t0);
}

/// Two keys are two fleets.
pub async fn fleets_are_independent(f: &dyn FleetFixture) {
    sync(f, "conf:one", &request("a", 0)).await;
    assert!(commit(f, "conf:one", "a", 0, b"one").await.committed);
    let r = sync(f, "conf:two", &request("a", 0)).await;
    assert_eq!((r.members, r.version, r.state), (1, 0, None));
}

/// The pool hands out units at the rate it is given, with its burst; a draw that would wait
/// longer than it may takes nothing; a cut restates the backlog at the new rate; a stop's end
/// finds the bucket empty.
pub async fn the_pool_hands_out_units_at_its_rate(f: &dyn FleetFixture) {
    let key = "conf:pool";
    let s = |n: u64| Duration::from_secs(n);
    // 60 units a minute (a unit a second), a burst of 2 units, waits of 5 s at most.
    let draw = |units: f64, rate: f64, burst: f64, max_wait: Duration| {
        let request = DrawRequest::new(units, rate, burst, max_wait);
        async move { f.store().draw(key, &request).await.expect("draw") }
    };
    let first = draw(1.0, 60.0, 2.0, s(5)).await;
    let t0 = first.now;
    assert_eq!(first.at, Some(t0), "a full pool: at once");
    assert_eq!(draw(1.0, 60.0, 2.0, s(5)).await.at, Some(t0));
    assert_eq!(draw(1.0, 60.0, 2.0, s(5)).await.at, Some(t0), "the burst");
    assert_eq!(
        draw(1.0, 60.0, 2.0, s(5)).await.at,
        Some(t0 + s(1)),
        "then at the rate"
    );
    assert_eq!(draw(5.0, 60.0, 2.0, s(5)).await.at, Some(t0 + s(2)));
    let refused = draw(1.0, 60.0, 2.0, s(5)).await;
    assert_eq!(
        (refused.at, refused.earliest),
        (None, t0 + s(7)),
        "7 s > 5 s"
    );
    assert_eq!(
        draw(1.0, 60.0, 2.0, s(7)).await.at,
        Some(t0 + s(7)),
        "the refusal took nothing"
    );
    // Half the rate: the 10 s of units handed out ahead take 20 s.
    let cut = draw(1.0, 30.0, 1.0, s(60)).await;
    assert_eq!(
        cut.at,
        Some(t0 + s(18)),
        "20 s of backlog, less a burst of 2 s"
    );
    // A stop that ends 10 s from now, long after the backlog: the first draw goes at its
    // end, the next a unit's time later, not together.
    f.clock().advance(s(30));
    let stop = DrawRequest {
        not_before: t0 + s(40),
        ..DrawRequest::new(1.0, 60.0, 2.0, s(20))
    };
    assert_eq!(
        f.store().draw(key, &stop).await.expect("draw").at,
        Some(t0 + s(40))
    );
    assert_eq!(
        f.store().draw(key, &stop).await.expect("draw").at,
        Some(t0 + s(41))
    );
    // Two keys, two pools.
    let other = DrawRequest::new(1.0, 60.0, 2.0, s(5));
    let fresh = f.store().draw("conf:pool-2", &other).await.expect("draw");
    assert_eq!(fresh.at, Some(fresh.now));
}

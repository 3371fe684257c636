//! Property tests: random operation plans against the exact sliding-log model, on the manual
//! clock (exact, many cases) and on the real Redis clock (few cases, short frames), and a
//! differential test: the Lua and the Rust ring give the same answers and the same bytes.

use crate::conformance::redis_fixture;
use crate::harness;
use crate::harness::SteppingClock;
use pacer_core::conformance::ReferenceWindow;
use pacer_core::conformance::model::{Op, Plan, Time, check_plan, plans};
use pacer_core::{ManualClock, MemoryWindowStore, WindowStore, WindowTime};
use pacer_redis::RedisWindowStore;
use proptest::test_runner::{Config, TestRunner};
use std::sync::Arc;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn run(cases: u32, strategy: impl proptest::strategy::Strategy<Value = Plan>, f: impl Fn(Plan)) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    if let Err(e) = runner.run(&strategy, |plan| {
        f(plan);
        Ok(())
    }) {
        panic!("{e}");
    }
}

/// On the manual clock the model's bounds are exact; 64 plans of up to 40 operations.
#[test]
fn random_plans_on_a_manual_clock_keep_the_sliding_log_bounds() {
    let rt = runtime();
    let fixture = rt.block_on(redis_fixture());
    let next = std::sync::atomic::AtomicU64::new(0);
    run(64, plans(12, 1..=5_000, 40), |plan| {
        let key = format!(
            "plan{}",
            next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        rt.block_on(check_plan(
            &fixture.store,
            Time::Manual(&fixture.clock),
            &key,
            &plan,
        ));
    });
    rt.block_on(pacer_core::conformance::Fixture::cleanup(&fixture));
}

/// On the real Redis clock: the checks use the `now` each call returns, so they stay exact
/// however long the calls and sleeps take. Short frames (0.5 to 3 ms) keep it quick.
#[test]
fn random_plans_on_the_redis_clock_keep_the_sliding_log_bounds() {
    let rt = runtime();
    let (store, prefix) = rt.block_on(harness::real_store());
    let next = std::sync::atomic::AtomicU64::new(0);
    run(12, plans(6, 500..=3_000, 16), |plan| {
        let key = format!(
            "plan{}",
            next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        rt.block_on(check_plan(&store, Time::Real, &key, &plan));
    });
    rt.block_on(async {
        let mut conn = store.connection();
        harness::delete_prefix(&mut conn, &prefix).await;
    });
}

/// The memory store (the Rust ring) and the Redis store (the Lua) on one manual clock: every
/// answer equal, and the key's bytes equal while the key is live.
#[test]
fn the_lua_and_the_rust_ring_agree_byte_for_byte() {
    let rt = runtime();
    let fixture = rt.block_on(redis_fixture());
    let next = std::sync::atomic::AtomicU64::new(0);
    run(64, plans(8, 1..=3_000, 40), |plan| {
        let key = format!(
            "diff{}",
            next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        rt.block_on(differential(&fixture.clock, &fixture.store, &key, &plan));
    });
    rt.block_on(pacer_core::conformance::Fixture::cleanup(&fixture));
}

async fn differential(
    clock: &ManualClock,
    redis: &pacer_redis::RedisWindowStore,
    key: &str,
    plan: &Plan,
) {
    let memory = MemoryWindowStore::new(clock.clone());
    let g = plan.geometry;
    let mut conn = redis.connection();
    // The frame of the last write: the memory store drops a key a window after it, Redis (on
    // the test clock) keeps it longer, so `expired` may differ only past that point.
    let mut last_write: Option<u64> = None;
    for (step, op) in plan.ops.iter().enumerate() {
        let now = memory.now().await.unwrap();
        let live = last_write.is_some_and(|f| g.frame_of(now) < f + g.ring_slots());
        let (m, r, wrote) = match *op {
            Op::Advance(us) => {
                clock.advance(std::time::Duration::from_micros(us));
                continue;
            }
            Op::Try { limit, count, .. } => {
                let m = memory.try_take(key, g, limit, count).await;
                let r = redis.try_take(key, g, limit, count).await;
                let wrote = m.as_ref().is_ok_and(|o| o.taken > 0);
                (format!("{m:?}"), format!("{r:?}"), wrote)
            }
            Op::Fill { limit, count } => {
                let m = memory.fill(key, g, limit, count).await;
                let r = redis.fill(key, g, limit, count).await;
                let wrote = m.as_ref().is_ok_and(|o| o.taken > 0);
                (format!("{m:?}"), format!("{r:?}"), wrote)
            }
            Op::Events { count } => {
                let m = memory.events(key, g, count).await;
                let mut r = redis.events(key, g, count).await;
                if let (false, Ok(m), Ok(r)) = (live, &m, &mut r) {
                    assert_eq!(m.expired, 0, "step {step}");
                    r.expired = 0;
                }
                let wrote = count > 0 && m.is_ok();
                (format!("{m:?}"), format!("{r:?}"), wrote)
            }
            Op::Eta { limit, count } => {
                let m = memory.eta(key, g, limit, count).await;
                let r = redis.eta(key, g, limit, count).await;
                (format!("{m:?}"), format!("{r:?}"), false)
            }
        };
        assert_eq!(m, r, "step {step}: {op:?}");
        if wrote {
            last_write = Some(g.frame_of(now));
            let bytes: Vec<u8> = redis::cmd("GET")
                .arg(redis.redis_key(key))
                .query_async(&mut conn)
                .await
                .expect("get");
            assert_eq!(
                memory.raw(key).as_deref(),
                Some(&bytes[..]),
                "step {step}: {op:?}"
            );
        }
    }
}

/// The Lua against the Rust reference on explicit times, with one pause in three turned into a
/// step back of the clock (half of them by whole rings): every answer and every byte equal.
#[test]
fn the_lua_matches_the_reference_on_a_clock_that_steps_back() {
    let rt = runtime();
    let clock = Arc::new(SteppingClock::default());
    let prefix = harness::unique_prefix();
    let store = rt.block_on(async {
        RedisWindowStore::builder()
            .key_prefix(&prefix)
            .test_clock(clock.clone())
            .connect(harness::url())
            .await
            .expect("connect")
    });
    let next = std::sync::atomic::AtomicU64::new(0);
    run(64, plans(8, 1..=3_000, 40), |plan| {
        let key = format!(
            "back{}",
            next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        rt.block_on(against_reference(&clock, &store, &key, &plan));
    });
    rt.block_on(async {
        let mut conn = store.connection();
        harness::delete_prefix(&mut conn, &prefix).await;
    });
}

async fn against_reference(
    clock: &SteppingClock,
    redis: &RedisWindowStore,
    key: &str,
    plan: &Plan,
) {
    let g = plan.geometry;
    let mut reference = ReferenceWindow::new(g);
    let mut conn = redis.connection();
    let mut t: u64 = 1_767_225_600_000_000;
    clock.set(WindowTime::from_micros(t));
    for (step, op) in plan.ops.iter().enumerate() {
        let now = WindowTime::from_micros(t);
        let (m, r) = match *op {
            Op::Advance(us) => {
                let ring = g.ring_slots() * g.frame_length_us();
                t = match (step % 3, us % 2) {
                    // Back by whole rings: no rotation is needed, the new frame must still stick.
                    (0, 0) => t - (us % 3 + 1) * ring,
                    (0, _) => t - us,
                    _ => t + us,
                };
                clock.set(WindowTime::from_micros(t));
                continue;
            }
            Op::Try { limit, count, .. } => (
                format!("{:?}", reference.try_take(now, limit, count)),
                format!("{:?}", redis.try_take(key, g, limit, count).await),
            ),
            Op::Fill { limit, count } => (
                format!("{:?}", reference.fill(now, limit, count)),
                format!("{:?}", redis.fill(key, g, limit, count).await),
            ),
            Op::Events { count } => (
                format!("{:?}", reference.events(now, count)),
                format!("{:?}", redis.events(key, g, count).await),
            ),
            Op::Eta { limit, count } => (
                format!("{:?}", reference.eta(now, limit, count)),
                format!("{:?}", redis.eta(key, g, limit, count).await),
            ),
        };
        assert_eq!(m, r, "step {step}: {op:?}");
        let bytes: Option<Vec<u8>> = redis::cmd("GET")
            .arg(redis.redis_key(key))
            .query_async(&mut conn)
            .await
            .expect("get");
        assert_eq!(
            bytes.unwrap_or_default(),
            reference.bytes(),
            "step {step}: {op:?}"
        );
    }
}

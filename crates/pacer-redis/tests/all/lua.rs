//! The Lua library called directly: argument checks, key layout, read-only flags, a clock that
//! steps back, and the number of Redis calls a long jump costs (a weak spot of the discrete-window
//! Redis library).

use crate::harness;
use crate::harness::SteppingClock;
use pacer_core::{WindowGeometry, WindowStore};
use pacer_redis::RedisConnection;
use pacer_redis::{LIBRARY_NAME, RedisWindowStore};
use redis::{RedisError, Value};
use std::sync::Arc;
use std::time::Duration;

async fn fcall(
    conn: &mut RedisConnection,
    command: &str,
    function: &str,
    keys: &[&str],
    args: &[&str],
) -> Result<Value, RedisError> {
    redis::cmd(command)
        .arg(format!("{LIBRARY_NAME}_{function}"))
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query_async(conn)
        .await
}

async fn loaded() -> (RedisWindowStore, RedisConnection, String) {
    let (store, prefix) = harness::real_store().await;
    store.load_library().await.expect("load");
    let conn = store.connection();
    (store, conn, prefix)
}

#[tokio::test]
async fn every_bad_argument_is_refused_by_name() {
    let (_store, mut conn, prefix) = loaded().await;
    let key = format!("{prefix}args");
    let k = key.as_str();
    let cases: &[(&str, &[&str], &[&str], &str)] = &[
        (
            "try",
            &[k],
            &["0", "1000", "8", "10", "1"],
            "frames must be an integer in 1..100000, got 0",
        ),
        (
            "try",
            &[k],
            &["abc", "1000", "8", "10", "1"],
            "frames must be an integer in 1..100000, got \"abc\"",
        ),
        (
            "try",
            &[k],
            &["1e3", "1000", "8", "10", "1"],
            "frames must be an integer",
        ),
        (
            "try",
            &[k],
            &["10", "0", "8", "10", "1"],
            "frame_length_us must be an integer in 1..",
        ),
        (
            "try",
            &[k],
            &["10", "1000", "49", "10", "1"],
            "counter_width_bits must be an integer in 1..48, got 49",
        ),
        (
            "try",
            &[k],
            &["10", "1000", "4", "16", "1"],
            "limit 16 is above the capacity 15 of 4-bit counters",
        ),
        (
            "try",
            &[k],
            &["10", "1000", "4", "10", "-1"],
            "count must be an integer",
        ),
        (
            "try",
            &[k],
            &["10", "1000", "4", "10", "99999999999999999"],
            "count must be an integer",
        ),
        (
            "fill",
            &[k],
            &["10", "1000", "4", "10"],
            "takes 5 arguments, got 4",
        ),
        (
            "events",
            &[k],
            &["10", "1000", "4", "1", "1"],
            "takes 4 arguments, got 5",
        ),
        (
            "events",
            &[],
            &["10", "1000", "4", "1"],
            "takes 1 key(s), got 0",
        ),
        ("now", &[k], &[], "takes 0 key(s), got 1"),
        (
            "try",
            &[k],
            &["3", "1125899906842625", "8", "10", "1"],
            "(frames + 1) * frame_length_us must be at most 2^52",
        ),
    ];
    for (function, keys, args, message) in cases {
        let command = if *function == "now" {
            "FCALL_RO"
        } else {
            "FCALL"
        };
        let e = fcall(&mut conn, command, function, keys, args)
            .await
            .expect_err(message);
        assert_eq!(e.code(), Some("PACER_ARG"), "{e}");
        assert!(
            e.to_string().contains(message),
            "{e} does not say {message}"
        );
    }
    let e = fcall(
        &mut conn,
        "FCALL_RO",
        "eta",
        &[k],
        &["10", "1000", "4", "10"],
    )
    .await;
    assert!(e.is_err());
    let exists: i64 = redis::cmd("EXISTS")
        .arg(k)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 0, "no failed call wrote");
}

#[tokio::test]
async fn the_key_holds_a_header_and_n_plus_one_counters() {
    let (store, mut conn, prefix) = loaded().await;
    let g = WindowGeometry::new(1_000, Duration::from_millis(2), 16).unwrap();
    let r = store.events("layout", g, 3).await.unwrap();
    let key = store.redis_key("layout");
    assert!(key.starts_with(&prefix) && key.ends_with("{layout}"));
    let bytes: Vec<u8> = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(bytes.len(), 16 + 2 * 1_001);
    assert_eq!(bytes.len() as u64 * 8, g.bits_per_key());
    let be = |b: &[u8]| b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x));
    let frame = be(&bytes[0..7]);
    assert_eq!(frame, g.frame_of(r.now));
    assert_eq!(be(&bytes[7..13]), 0, "a new key's base");
    assert_eq!(be(&bytes[13..16]), u64::from(g.fingerprint()));
    let slot = 16 + (frame % 1_001) as usize * 2;
    assert_eq!(be(&bytes[slot..slot + 2]), 3);
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        ttl > 0 && ttl <= 2_002,
        "the key lives until its events leave: {ttl} ms"
    );
    harness::delete_prefix(&mut conn, &prefix).await;
}

#[tokio::test]
async fn reads_are_flagged_read_only_and_writes_are_not() {
    let (_store, mut conn, prefix) = loaded().await;
    let key = format!("{prefix}ro");
    let args = ["10", "1000", "4", "10", "1"];
    let eta = fcall(&mut conn, "FCALL_RO", "eta", &[&key], &args)
        .await
        .unwrap();
    assert!(matches!(eta, Value::Array(ref v) if v.len() == 2));
    assert!(fcall(&mut conn, "FCALL_RO", "now", &[], &[]).await.is_ok());
    let e = fcall(&mut conn, "FCALL_RO", "try", &[&key], &args)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("write flag"), "{e}");
}

#[tokio::test]
async fn a_key_of_another_type_is_an_error_not_a_panic() {
    let (store, mut conn, prefix) = loaded().await;
    let g = WindowGeometry::new(10, Duration::from_millis(1), 8).unwrap();
    let _: i64 = redis::cmd("LPUSH")
        .arg(store.redis_key("list"))
        .arg("x")
        .query_async(&mut conn)
        .await
        .unwrap();
    let e = store.try_take("list", g, 10, 1).await.unwrap_err();
    assert!(matches!(e, pacer_core::WindowError::Backend { .. }), "{e}");
    let e = store.events("list", g, 1).await.unwrap_err();
    assert!(e.to_string().contains("WRONGTYPE"), "{e}");
    harness::delete_prefix(&mut conn, &prefix).await;
}

/// The regression test for the discrete-window Redis library's weak spot 1: a clock that steps back used to record into
/// a slot the header did not describe. Now it is "no time passed": nothing leaves early, and the
/// ring is re-anchored at the new time.
#[tokio::test]
async fn a_clock_that_steps_back_corrupts_nothing() {
    let clock = Arc::new(SteppingClock::default());
    let prefix = harness::unique_prefix();
    let store = RedisWindowStore::builder()
        .key_prefix(&prefix)
        .test_clock(clock.clone())
        .connect(harness::url())
        .await
        .unwrap();
    let g = WindowGeometry::new(3, Duration::from_millis(1), 8).unwrap();
    let at = |frame: u64| g.frame_start(frame);
    let base = 1_767_225_600_000; // a frame number in 2026
    clock.set(at(base + 100));
    store.events("back", g, 2).await.unwrap();
    clock.set(at(base + 101));
    store.events("back", g, 1).await.unwrap();
    // Six frames back, more than a window.
    clock.set(at(base + 95));
    let r = store.events("back", g, 0).await.unwrap();
    assert_eq!((r.total, r.expired), (3, 0), "nothing left the window");
    let full = store.try_take("back", g, 7, 5).await.unwrap();
    assert_eq!(full.taken, 0);
    assert_eq!(
        full.eta,
        at(base + 98),
        "the pair, now one frame old, leaves in 3 frames"
    );
    assert_eq!(store.try_take("back", g, 7, 4).await.unwrap().taken, 4);
    let mut conn = store.connection();
    let bytes: Vec<u8> = redis::cmd("GET")
        .arg(store.redis_key("back"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let frame = bytes[0..7]
        .iter()
        .fold(0u64, |v, &x| (v << 8) | u64::from(x));
    assert_eq!(frame, base + 95, "the ring was re-anchored");
    for (f, total) in [(97, 7), (98, 5), (99, 0)] {
        clock.set(at(base + f));
        assert_eq!(
            store.events("back", g, 0).await.unwrap().total,
            total,
            "frame +{f}"
        );
    }
    // A step of exactly two rings (8 frames): no rotation, but the new frame is kept all the
    // same, so that time flows again from there.
    clock.set(at(base + 200));
    store.events("ring", g, 2).await.unwrap();
    clock.set(at(base + 192));
    assert_eq!(store.events("ring", g, 1).await.unwrap().total, 3);
    let bytes: Vec<u8> = redis::cmd("GET")
        .arg(store.redis_key("ring"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let frame = bytes[0..7]
        .iter()
        .fold(0u64, |v, &x| (v << 8) | u64::from(x));
    assert_eq!(frame, base + 192);
    clock.set(at(base + 195));
    assert_eq!(store.events("ring", g, 0).await.unwrap().total, 3);
    clock.set(at(base + 196));
    assert_eq!(
        store.events("ring", g, 0).await.unwrap().total,
        0,
        "both left after N + 1 frames"
    );
    harness::delete_prefix(&mut conn, &prefix).await;
}

/// The regression test for the discrete-window Redis library's weak spot 5: moving 1,000 frames forward cleared them
/// with one call each. Now a jump costs at most two SETRANGEs of the ring, one of the header and
/// a PEXPIRE, whatever its length; a whole-window jump is one SET.
#[tokio::test]
async fn a_long_jump_costs_a_few_calls_not_one_per_frame() {
    let mut server = harness::Server::start();
    let clock = Arc::new(SteppingClock::default());
    let store = RedisWindowStore::builder()
        .test_clock(clock.clone())
        .connect(&server.url())
        .await
        .unwrap();
    let g = WindowGeometry::new(1_000, Duration::from_millis(2), 16).unwrap();
    let base = 900_000_000_000;
    clock.set(g.frame_start(base + 10));
    store.events("jump", g, 1).await.unwrap();
    let mut conn = store.connection();
    let stats = |info: &str, command: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
            .and_then(|rest| rest.split(',').next()?.parse().ok())
            .unwrap_or(0)
    };
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
    // 995 frames forward: the range wraps around the ring's end.
    clock.set(g.frame_start(base + 1_005));
    assert_eq!(store.events("jump", g, 1).await.unwrap().total, 2);
    // A whole window forward: one SET.
    clock.set(g.frame_start(base + 5_000));
    assert_eq!(store.try_take("jump", g, 10, 1).await.unwrap().taken, 1);
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        stats(&info, "setrange"),
        3,
        "two pieces of the ring and the header\n{info}"
    );
    assert_eq!(stats(&info, "set"), 1, "{info}");
    assert_eq!(stats(&info, "bitfield"), 0, "{info}");
    assert_eq!(stats(&info, "get"), 2, "{info}");
    drop(store);
    server.stop();
}

/// A test clock at the Unix epoch: the ETA search must not look at frames before 0.
#[tokio::test]
async fn a_window_at_the_epoch_is_searched_from_frame_zero() {
    let clock = Arc::new(SteppingClock::default());
    let prefix = harness::unique_prefix();
    let store = RedisWindowStore::builder()
        .key_prefix(&prefix)
        .test_clock(clock.clone())
        .connect(harness::url())
        .await
        .unwrap();
    let g = WindowGeometry::new(10, Duration::from_millis(1), 8).unwrap();
    assert_eq!(store.try_take("epoch", g, 4, 3).await.unwrap().taken, 3);
    clock.set(g.frame_start(2));
    assert_eq!(store.try_take("epoch", g, 4, 1).await.unwrap().taken, 1);
    let r = store.try_take("epoch", g, 4, 1).await.unwrap();
    assert_eq!(r.eta, g.frame_start(11));
    let r = store.try_take("epoch", g, 4, 4).await.unwrap();
    assert_eq!(r.eta, g.frame_start(13));
    let mut conn = store.connection();
    harness::delete_prefix(&mut conn, &prefix).await;
}

//! The scenarios of the conformance suite, each an async function taking a [`Fixture`]. They
//! run on the fixture's manual clock, so every expected count and time is exact.

use super::Fixture;
use crate::Clock;
use crate::window::{WindowError, WindowGeometry, WindowTime};
use std::time::Duration;

/// 10 frames of 10 ms, 4-bit counters (capacity 15); the scenarios use a limit of 10.
fn geometry() -> WindowGeometry {
    WindowGeometry::new(10, Duration::from_millis(10), 4).expect("valid")
}

const LIMIT: u64 = 10;

async fn now(f: &dyn Fixture) -> WindowTime {
    f.store().now().await.expect("now")
}

/// Moves the clock to the start of absolute frame `frame` (which must not be in the past).
async fn to_frame(f: &dyn Fixture, g: WindowGeometry, frame: u64) {
    let t = now(f).await;
    let target = g.frame_start(frame);
    assert!(target >= t, "frame {frame} is in the past");
    f.clock().advance(target.saturating_duration_since(t));
}

/// Moves the clock to the start of the next frame and returns its number.
async fn align(f: &dyn Fixture, g: WindowGeometry) -> u64 {
    let next = g.frame_of(now(f).await) + 1;
    to_frame(f, g, next).await;
    next
}

async fn total(f: &dyn Fixture, key: &str, g: WindowGeometry) -> u64 {
    f.store().events(key, g, 0).await.expect("events").total
}

/// The discrete-window Redis library's first scenario: events are counted for N + 1 frames, then leave in frame order.
pub async fn recording_and_expiration(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let f0 = align(f, g).await;
    let r = s.events("rec", g, 1).await.unwrap();
    assert_eq!((r.total, r.expired), (1, 0));
    to_frame(f, g, f0 + 1).await;
    assert_eq!(s.events("rec", g, 2).await.unwrap().total, 3);
    to_frame(f, g, f0 + 2).await;
    assert_eq!(s.events("rec", g, 3).await.unwrap().total, 6);
    to_frame(f, g, f0 + 10).await;
    assert_eq!(
        total(f, "rec", g).await,
        6,
        "frame f0 still counts in f0 + N"
    );
    to_frame(f, g, f0 + 11).await;
    let r = s.events("rec", g, 0).await.unwrap();
    assert_eq!((r.total, r.expired), (5, 1), "frame f0 left");
    to_frame(f, g, f0 + 12).await;
    let r = s.events("rec", g, 0).await.unwrap();
    assert_eq!(
        (r.total, r.expired),
        (3, 3),
        "expired counts since the last write"
    );
    let r = s.events("rec", g, 1).await.unwrap();
    assert_eq!((r.total, r.expired), (4, 3));
    to_frame(f, g, f0 + 13).await;
    let r = s.events("rec", g, 0).await.unwrap();
    assert_eq!((r.total, r.expired), (1, 3), "frame f0 + 2 left");
    to_frame(f, g, f0 + 30).await;
    let r = s.events("rec", g, 0).await.unwrap();
    assert_eq!(r.total, 0);
    // After a whole window the key may already be gone (its TTL): `expired` is 4 or 0.
    assert!(r.expired == 4 || r.expired == 0, "expired {}", r.expired);
}

/// The discrete-window Redis library's second scenario: a full window denies, releases exactly at the ETA, and a count
/// that needs the whole window waits for the newest frame to leave.
pub async fn overflow_and_release(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let f0 = align(f, g).await;
    assert_eq!(s.try_take("ovf", g, LIMIT, 5).await.unwrap().taken, 5);
    to_frame(f, g, f0 + 1).await;
    assert_eq!(s.try_take("ovf", g, LIMIT, 5).await.unwrap().taken, 5);
    let denied = s.try_take("ovf", g, LIMIT, 5).await.unwrap();
    assert_eq!(denied.taken, 0);
    assert_eq!(
        denied.eta,
        g.frame_start(f0 + 11),
        "when the first five leave"
    );
    assert_eq!(denied.wait(), g.frame_length() * 10);
    let eta = s.eta("ovf", g, LIMIT, 5).await.unwrap();
    assert_eq!(eta.eta, Some(denied.eta), "eta agrees with try");
    f.clock().advance(denied.wait() - Duration::from_micros(1));
    let early = s.try_take("ovf", g, LIMIT, 5).await.unwrap();
    assert_eq!(
        (early.taken, early.eta),
        (0, denied.eta),
        "one µs early is too early"
    );
    f.clock().advance(Duration::from_micros(1));
    let r = s.try_take("ovf", g, LIMIT, 5).await.unwrap();
    assert_eq!((r.taken, r.eta, r.now), (5, denied.eta, denied.eta));
    // Now frames f0 + 1 and f0 + 11 hold 5 each: 6 more need both to leave.
    let six = s.try_take("ovf", g, LIMIT, 6).await.unwrap();
    assert_eq!(six.taken, 0);
    assert_eq!(six.eta, g.frame_start(f0 + 22));
    let one = s.try_take("ovf", g, LIMIT, 1).await.unwrap();
    assert_eq!(
        one.eta,
        g.frame_start(f0 + 12),
        "one needs only frame f0 + 1 to leave"
    );
}

/// The discrete-window Redis library's third scenario: fill takes what fits and gives the ETA of the rest.
pub async fn partial_filling(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let f0 = align(f, g).await;
    let r = s.fill("fill", g, LIMIT, 4).await.unwrap();
    assert_eq!((r.taken, r.eta), (4, r.now));
    to_frame(f, g, f0 + 1).await;
    assert_eq!(s.fill("fill", g, LIMIT, 4).await.unwrap().taken, 4);
    let r = s.fill("fill", g, LIMIT, 4).await.unwrap();
    assert_eq!(r.taken, 2);
    assert_eq!(
        r.eta,
        g.frame_start(f0 + 11),
        "the rest fits when frame f0 leaves"
    );
    let r = s.fill("fill", g, LIMIT, 3).await.unwrap();
    assert_eq!((r.taken, r.eta), (0, g.frame_start(f0 + 11)));
    let r = s.fill("fill", g, LIMIT, 5).await.unwrap();
    assert_eq!((r.taken, r.eta), (0, g.frame_start(f0 + 12)));
    assert_eq!(total(f, "fill", g).await, 10);
    to_frame(f, g, f0 + 11).await;
    let r = s.fill("fill", g, LIMIT, 5).await.unwrap();
    assert_eq!((r.taken, r.eta), (4, g.frame_start(f0 + 12)));
}

/// The discrete-window Redis library's fourth scenario: `eta` answers without writing.
pub async fn read_only_eta(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let f0 = align(f, g).await;
    let r = s.eta("ro", g, LIMIT, 3).await.unwrap();
    assert_eq!(r.eta, Some(r.now), "an empty window fits now");
    assert!(!f.exists("ro").await, "eta created no key");
    s.events("ro", g, 8).await.unwrap();
    to_frame(f, g, f0 + 3).await;
    let a = s.eta("ro", g, LIMIT, 3).await.unwrap();
    let b = s.eta("ro", g, LIMIT, 3).await.unwrap();
    assert_eq!(a, b);
    assert_eq!(a.eta, Some(g.frame_start(f0 + 11)));
    assert_eq!(a.wait(), Some(g.frame_length() * 8));
    assert_eq!(s.eta("ro", g, LIMIT, 2).await.unwrap().eta, Some(a.now));
    assert_eq!(s.eta("ro", g, LIMIT, 0).await.unwrap().eta, Some(a.now));
    assert_eq!(s.eta("ro", g, LIMIT, 11).await.unwrap().eta, None, "never");
    let t = s.try_take("ro", g, LIMIT, 3).await.unwrap();
    assert_eq!((t.taken, Some(t.eta)), (0, a.eta));
    assert_eq!(total(f, "ro", g).await, 8);
}

/// A call with count 0 never writes: no key appears.
pub async fn zero_count_never_creates_a_key(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let t = s.try_take("zero", g, LIMIT, 0).await.unwrap();
    assert_eq!((t.taken, t.eta), (0, t.now));
    let r = s.fill("zero", g, LIMIT, 0).await.unwrap();
    assert_eq!((r.taken, r.eta), (0, r.now));
    let e = s.events("zero", g, 0).await.unwrap();
    assert_eq!((e.total, e.expired), (0, 0));
    assert_eq!(s.eta("zero", g, LIMIT, 0).await.unwrap().eta, Some(e.now));
    let t = s.try_take("zero", g, 0, 0).await.unwrap();
    assert_eq!(t.taken, 0);
    assert!(!f.exists("zero").await, "a zero-count call created the key");
}

/// `count > limit` can never fit: an error from try and fill, `None` from eta, no key.
pub async fn count_above_limit_is_never(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let e = s.try_take("never", g, LIMIT, 11).await.unwrap_err();
    assert!(
        matches!(
            e,
            WindowError::Never {
                count: 11,
                limit: 10
            }
        ),
        "{e}"
    );
    let e = s.fill("never", g, LIMIT, 11).await.unwrap_err();
    assert!(e.is_never(), "{e}");
    assert_eq!(s.eta("never", g, LIMIT, 11).await.unwrap().eta, None);
    assert_eq!(s.eta("never", g, LIMIT, u64::MAX).await.unwrap().eta, None);
    let e = s.try_take("never", g, 0, 1).await.unwrap_err();
    assert!(e.is_never(), "limit 0 admits nothing");
    assert!(!f.exists("never").await);
}

/// A limit above the counters' capacity is a configuration error.
pub async fn limit_above_capacity_is_refused(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    for e in [
        s.try_take("cap", g, 16, 1).await.unwrap_err(),
        s.fill("cap", g, 16, 1).await.unwrap_err(),
        s.eta("cap", g, 16, 1).await.unwrap_err(),
    ] {
        assert!(
            matches!(
                e,
                WindowError::LimitAboveCapacity {
                    limit: 16,
                    capacity: 15
                }
            ),
            "{e}"
        );
    }
    assert_eq!(s.try_take("cap", g, 15, 15).await.unwrap().taken, 15);
}

/// A call with another geometry on an existing key is refused, and writes nothing.
pub async fn geometry_change_is_detected(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    s.events("geo", g, 3).await.unwrap();
    let longer = WindowGeometry::new(10, Duration::from_millis(11), 4).unwrap();
    let more = WindowGeometry::new(11, Duration::from_millis(10), 4).unwrap();
    let wider = WindowGeometry::new(10, Duration::from_millis(10), 5).unwrap();
    let bytes = WindowGeometry::new(10, Duration::from_millis(10), 9).unwrap();
    for other in [longer, more, wider, bytes] {
        let e = s.try_take("geo", other, 10, 1).await.unwrap_err();
        assert!(
            matches!(e, WindowError::GeometryMismatch { requested } if requested == other),
            "{e}"
        );
        assert!(e.is_configuration());
        assert!(s.events("geo", other, 1).await.is_err());
        assert!(s.fill("geo", other, 10, 1).await.is_err());
        assert!(s.eta("geo", other, 10, 1).await.is_err());
    }
    assert_eq!(total(f, "geo", g).await, 3, "nothing was written");
    s.clear("geo").await.unwrap();
    assert_eq!(s.try_take("geo", longer, 10, 2).await.unwrap().taken, 2);
}

/// The limit is not stored: each call brings its own.
pub async fn limit_varies_per_call(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    align(f, g).await;
    assert_eq!(s.try_take("var", g, 10, 5).await.unwrap().taken, 5);
    assert_eq!(s.try_take("var", g, 8, 5).await.unwrap().taken, 0);
    assert_eq!(s.try_take("var", g, 8, 3).await.unwrap().taken, 3);
    assert_eq!(s.try_take("var", g, 15, 7).await.unwrap().taken, 7);
    assert_eq!(s.try_take("var", g, 10, 1).await.unwrap().taken, 0);
    let r = s.fill("var", g, 3, 2).await.unwrap();
    assert_eq!(r.taken, 0, "a window above a lowered limit takes nothing");
    assert!(r.eta > r.now);
    assert_eq!(s.eta("var", g, 15, 0).await.unwrap().eta, Some(r.now));
}

/// `events` refuses a total above the capacity and keeps the total it had.
pub async fn events_refuse_overflow_and_keep_the_total(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let f0 = align(f, g).await;
    assert_eq!(s.events("over", g, 12).await.unwrap().total, 12);
    to_frame(f, g, f0 + 1).await;
    let e = s.events("over", g, 4).await.unwrap_err();
    assert!(
        matches!(
            e,
            WindowError::Overflow {
                total: 12,
                count: 4,
                capacity: 15
            }
        ),
        "{e}"
    );
    assert_eq!(s.events("over", g, 3).await.unwrap().total, 15);
    assert!(s.events("over", g, 1).await.is_err());
    let e = s.events("fresh", g, 16).await.unwrap_err();
    assert!(
        matches!(
            e,
            WindowError::Overflow {
                total: 0,
                count: 16,
                ..
            }
        ),
        "{e}"
    );
    let e = s.events("fresh", g, u64::MAX).await.unwrap_err();
    assert!(
        matches!(
            e,
            WindowError::Overflow {
                total: 0,
                count: u64::MAX,
                ..
            }
        ),
        "{e}"
    );
    assert!(!f.exists("fresh").await);
    to_frame(f, g, f0 + 11).await;
    let r = s.events("over", g, 1).await.unwrap();
    assert_eq!(
        (r.total, r.expired),
        (4, 12),
        "frame f0 left; nothing was lost"
    );
}

/// An event lives from N frames (recorded at a frame's end) to N + 1 (at its start).
pub async fn an_event_lives_n_to_n_plus_one_frames(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let f0 = align(f, g).await;
    f.clock()
        .advance(g.frame_length() - Duration::from_micros(1));
    let late = s.try_take("life", g, 1, 1).await.unwrap();
    assert_eq!(late.taken, 1);
    let d = s.try_take("life", g, 1, 1).await.unwrap();
    assert_eq!(d.eta, g.frame_start(f0 + 11));
    assert_eq!(
        d.wait(),
        g.window() + Duration::from_micros(1),
        "N frames and 1 µs"
    );
    to_frame(f, g, f0 + 11).await;
    let early = s.try_take("life", g, 1, 1).await.unwrap();
    assert_eq!(early.taken, 1);
    let d = s.try_take("life", g, 1, 1).await.unwrap();
    assert_eq!(d.wait(), g.window() + g.frame_length(), "N + 1 frames");
}

/// `now` is the store's clock, and every result carries it.
pub async fn now_is_the_store_clock(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let a = now(f).await;
    assert_eq!(a, WindowTime::from_system_time(f.clock().system_now()));
    f.clock().advance(Duration::from_micros(1_234));
    let b = now(f).await;
    assert_eq!(b.as_micros() - a.as_micros(), 1_234);
    assert_eq!(s.try_take("now", g, LIMIT, 1).await.unwrap().now, b);
    assert_eq!(s.fill("now", g, LIMIT, 1).await.unwrap().now, b);
    assert_eq!(s.events("now", g, 1).await.unwrap().now, b);
    assert_eq!(s.eta("now", g, LIMIT, 1).await.unwrap().now, b);
}

/// Keys do not share windows.
pub async fn keys_are_independent(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    assert_eq!(s.try_take("a", g, LIMIT, 10).await.unwrap().taken, 10);
    assert_eq!(s.try_take("b", g, LIMIT, 10).await.unwrap().taken, 10);
    assert_eq!(s.try_take("a", g, LIMIT, 1).await.unwrap().taken, 0);
    assert_eq!(total(f, "b", g).await, 10);
}

/// `clear` forgets a key; clearing a missing key is fine.
pub async fn clear_forgets_a_key(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    s.events("gone", g, 7).await.unwrap();
    assert!(f.exists("gone").await);
    s.clear("gone").await.unwrap();
    assert!(!f.exists("gone").await);
    assert_eq!(total(f, "gone", g).await, 0);
    s.clear("gone").await.unwrap();
}

/// After a whole window without events the window is empty, whatever it held.
pub async fn a_whole_window_later_everything_has_left(f: &dyn Fixture) {
    let (g, s) = (geometry(), f.store());
    let f0 = align(f, g).await;
    for i in 0..10 {
        to_frame(f, g, f0 + i).await;
        assert_eq!(s.try_take("whole", g, LIMIT, 1).await.unwrap().taken, 1);
    }
    assert_eq!(s.try_take("whole", g, LIMIT, 1).await.unwrap().taken, 0);
    to_frame(f, g, f0 + 9 + 11).await;
    assert_eq!(total(f, "whole", g).await, 0);
    assert_eq!(s.try_take("whole", g, LIMIT, 10).await.unwrap().taken, 10);
}

/// Many windows' worth of events through narrow counters: the running counts wrap, the totals
/// stay exact.
pub async fn counters_wrap_over_many_windows(f: &dyn Fixture) {
    let g = WindowGeometry::new(3, Duration::from_millis(10), 3).unwrap(); // capacity 7
    let s = f.store();
    let f0 = align(f, g).await;
    let mut per_frame = std::collections::VecDeque::new();
    for i in 0..40u64 {
        to_frame(f, g, f0 + i).await;
        // The window at frame i holds frames i - 3 ..= i.
        while per_frame.len() > 3 {
            per_frame.pop_front();
        }
        let count = i % 3;
        let room = 7 - per_frame.iter().sum::<u64>();
        let r = s.fill("wrap", g, 7, count).await.unwrap();
        assert_eq!(r.taken, count.min(room), "frame {i}");
        per_frame.push_back(r.taken);
        let want: u64 = per_frame.iter().sum();
        assert_eq!(total(f, "wrap", g).await, want, "frame {i}");
    }
}

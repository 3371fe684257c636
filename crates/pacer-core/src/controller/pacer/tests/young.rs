//! The first-window rules: a young throttle's pace, and a minute's window filled alone.

use super::busy;
use crate::controller::{PacerController, RateController};
use std::time::Duration;

/// A first throttle at `age` with a `Retry-After` of `ra`, after the server accepted `units`
/// since the start, sending at `sent` a minute.
fn young_throttle(age: f64, ra: f64, units: f64, sent: f64) -> Option<f64> {
    let mut c = PacerController::default();
    let mut s = busy(sent);
    s.rate = 1e9;
    s.since_last_decrease = Duration::from_secs_f64(age);
    s.retry_after = Some(Duration::from_secs_f64(ra));
    s.accepted_per_minute = units; // a minute's window: units per minute = units
    let _ = c.on_throttled(&s);
    c.limit_estimate(1)
}

#[test]
fn a_young_throttle_with_a_short_retry_after_measures_the_server_s_pace() {
    // A per-second quota of 25 units: the first 25 went at once, then "wait 1 s" at 0.5 s. The
    // estimate is 25 units over 1.5 s, 1,000 a minute, not 25 a minute.
    assert_eq!(young_throttle(0.5, 1.0, 25.0, 2000.0), Some(1000.0));
    // At most what we sent.
    assert_eq!(young_throttle(0.5, 1.0, 25.0, 600.0), Some(600.0));
    // Ten seconds of a 10 s window: 7.5 s of sending, then 2.5 s to wait: 250 over 10 s.
    assert_eq!(young_throttle(7.5, 2.5, 250.0, 2000.0), Some(1500.0));
    // A fixed window of 10 s whose first boundary came 10 s after the start: the first window
    // held 300 units, the next 450 by 14 s, then "wait 6 s" to its boundary at 20 s. The span,
    // 20 s, is within two fifths of the minute: 750 over 20 s, not 750 a minute.
    assert_eq!(young_throttle(14.0, 6.0, 750.0, 4000.0), Some(2250.0));
}

#[test]
fn a_minute_s_window_filled_alone_keeps_its_count() {
    // Filled at 0:45 by our own units, the server asks us to wait until the first leave, at
    // 1:00: the span is the window, and the count is the quota.
    assert_eq!(young_throttle(45.0, 16.0, 3000.0, 4000.0), Some(3000.0));
    // Past two fifths of the window the span says nothing of a shorter one.
    assert_eq!(young_throttle(20.0, 6.0, 500.0, 4000.0), Some(500.0));
    // A window old, a throttle's count is a window's.
    assert_eq!(young_throttle(60.0, 1.0, 2900.0, 4000.0), Some(2900.0));
    // Without a Retry-After the young-throttle rule applies instead (the count, then the pace
    // once the server accepts again before a window has passed).
    let mut c = PacerController::default();
    let mut s = busy(2000.0);
    s.since_last_decrease = Duration::from_secs_f64(0.5);
    s.accepted_per_minute = 25.0;
    let _ = c.on_throttled(&s);
    assert_eq!(c.limit_estimate(1), Some(25.0));
}

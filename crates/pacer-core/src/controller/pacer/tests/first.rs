//! The first estimate corrected by the next throttle, and a deep cut from the rate really sent.

use super::{SEC, busy, throttle};
use crate::controller::{PacerController, RateController};
use std::time::Duration;

#[test]
fn a_deep_cut_is_from_the_rate_really_sent() {
    // The rate climbed to 2,000 while the demand sent 1,200: 0.7 × 1,200 = 840, under the
    // estimate less its margin (950). From the rate the demand left unused it would be 950.
    let mut c = PacerController::default();
    let mut s = busy(2000.0);
    s.measured_send_rate = Some(1200.0);
    s.accepted_per_minute = 1000.0;
    s.retry_after = Some(SEC);
    s.since_last_decrease = Duration::from_secs(120);
    let cut = c.on_throttled(&s);
    assert!((cut - 840.0).abs() < 1e-9, "{cut}");
}

#[test]
fn the_first_estimate_is_corrected_by_the_next_throttle_not_remembered_as_a_limit_that_fell() {
    // A bucket that starts full: the first throttle's window held a window's quota on top of the
    // pace (1,000); the next finds the pace (600). Nothing to probe back toward.
    let mut c = PacerController::default();
    throttle(&mut c, 1050.0, 1000.0, 1);
    throttle(&mut c, 985.0, 600.0, 1);
    assert_eq!(c.limit_estimate(1), Some(600.0));
    assert!(c.ceiling.is_none());
    // Nor is what the server accepted over a window before it (a bucket's first window), when
    // the first throttle met us below our rate: 1,200, the first estimate 1,000 (no fall from
    // it), the next 600.
    let mut c = PacerController::default();
    let mut s = busy(2500.0);
    s.accepted_per_minute = 1200.0;
    s.since_last_decrease = Duration::from_secs(300);
    let _ = c.on_success(&s);
    let mut s = busy(1200.0);
    s.queued_units = 0.0;
    s.measured_send_rate = Some(1000.0);
    s.accepted_per_minute = 1000.0;
    s.retry_after = Some(SEC);
    s.since_last_decrease = Duration::from_secs(120);
    let _ = c.on_throttled(&s);
    assert!(!c.firm);
    throttle(&mut c, 985.0, 600.0, 1);
    assert!(c.ceiling.is_none(), "{:?}", c.ceiling);
    // A long Retry-After with either: the limit moved, and the first estimate is remembered.
    for (first, second) in [(1, 20), (20, 1)] {
        let mut c = PacerController::default();
        throttle(&mut c, 1050.0, 1000.0, first);
        throttle(&mut c, 985.0, 600.0, second);
        assert_eq!(
            c.ceiling.map(|c| c.limit),
            Some(1000.0),
            "{first} s, {second} s"
        );
    }
    // A first throttle before the limiter is a window old measured less than a window: the
    // young rules read it, and it stands as a reference.
    let mut c = PacerController::default();
    let mut s = busy(1050.0);
    s.accepted_per_minute = 1000.0;
    s.retry_after = Some(SEC);
    s.since_last_decrease = Duration::from_secs(50);
    let _ = c.on_throttled(&s);
    throttle(&mut c, 985.0, 600.0, 1);
    assert!(c.ceiling.is_some(), "young");
    // Confirmed by a second throttle, the estimate is one a fall is measured from.
    let mut c = PacerController::default();
    throttle(&mut c, 1050.0, 1000.0, 1);
    throttle(&mut c, 1000.0, 980.0, 1);
    assert!(c.ceiling.is_none());
    throttle(&mut c, 985.0, 600.0, 1);
    assert_eq!(c.ceiling.map(|c| c.limit), Some(980.0));
}

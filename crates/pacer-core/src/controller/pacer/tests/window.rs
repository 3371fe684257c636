//! A server's window shorter than `QuotaWindow`, learnt from a young throttle's `Retry-After`,
//! or from the first success after a young throttle without one.

use crate::controller::PacerController;
use crate::{Controller, ControllerContext, Feedback, LimiterOptions, Signal, Timestamp};
use std::time::Duration;

fn at(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

/// The server accepts `per_tenth` units every 0.1 s from `from` to `to` (ms).
fn accept(c: &mut PacerController, per_tenth: u64, from: u64, to: u64) {
    for t in (from..to).step_by(100) {
        let feedback = Feedback {
            units: per_tenth,
            sent_at: at(t),
            signal: Signal::Success,
        };
        Controller::on_response(c, &feedback, at(t));
    }
}

/// A throttle at `now` (ms), the last cut at `cut` (ms; none yet if 0), with the rate at `rate`,
/// the demand waiting, and a `Retry-After` of `ra` seconds.
fn throttle(c: &mut PacerController, now: u64, cut: u64, rate: f64, ra: u64) -> f64 {
    throttle_after(c, now, cut, rate, Some(Duration::from_secs(ra)))
}

/// [`throttle`] with any `Retry-After`, or none.
fn throttle_after(
    c: &mut PacerController,
    now: u64,
    cut: u64,
    rate: f64,
    retry_after: Option<Duration>,
) -> f64 {
    let mut cx = ControllerContext::new(at(now), rate, 60.0, 1e9);
    cx.since_last_decrease = at(now) - at(cut);
    cx.decreases = u64::from(cut > 0);
    cx.measured_send_rate = Some(6000.0);
    cx.queued_units = 10.0;
    cx.retry_after = retry_after;
    Controller::on_throttled(c, &cx)
}

/// A success at `now` (ms), the last cut at `cut` (ms), the rate at `rate` and the demand waiting.
fn succeed(c: &mut PacerController, now: u64, cut: u64, rate: f64) -> Option<f64> {
    let mut cx = ControllerContext::new(at(now), rate, 60.0, 1e9);
    cx.since_last_decrease = at(now) - at(cut);
    cx.since_last_increase = Duration::from_secs(2);
    cx.decreases = 1;
    cx.queued_units = 10.0;
    cx.waited = true;
    cx.measured_send_rate = Some(rate);
    Controller::on_success(c, &cx)
}

/// A per-second quota of 50 units met by a client that configured nothing (a `QuotaWindow` of a
/// minute): 50 units accepted in the first half second, then "wait 1 s".
fn per_second_start() -> PacerController {
    let mut c = PacerController::default();
    Controller::on_options(&mut c, &LimiterOptions::default(), Timestamp::ZERO);
    accept(&mut c, 10, 0, 500);
    let cut = throttle(&mut c, 500, 0, 1e9, 1);
    // The young pace: 50 units over the 1.5 s to the end of the Retry-After, 2,000 a minute,
    // less the cut's margin.
    assert!((cut - 1900.0).abs() < 1e-6, "{cut}");
    c
}

#[test]
fn a_young_throttle_with_a_short_retry_after_teaches_the_window_and_keeps_no_estimate() {
    let mut c = per_second_start();
    assert_eq!(
        c.limit_estimate(1),
        None,
        "a part of a window is no estimate"
    );
    // Accepted at 50 a second after the pause: the rate grows as before any throttle, by a
    // quarter, at most `Lead` (1.25) times what the learnt window of 1.5 s held.
    accept(&mut c, 5, 1_500, 3_000);
    let mut cx = ControllerContext::new(at(3_000), 1900.0, 60.0, 1e9);
    cx.since_last_decrease = at(3_000) - at(500);
    cx.since_last_increase = Duration::from_secs(2);
    cx.decreases = 1;
    cx.queued_units = 10.0;
    cx.waited = true;
    cx.measured_send_rate = Some(1900.0);
    assert_eq!(Controller::on_success(&mut c, &cx), Some(1900.0 * 1.25));
    // The next throttle measures the learnt window: about 75 units over 1.5 s, 3,000 a minute
    // (the meter's slots of a sixtieth of it cut a little off; over the configured minute the
    // count would be 125).
    accept(&mut c, 5, 3_000, 4_000);
    let _ = throttle(&mut c, 4_000, 500, 3400.0, 1);
    let estimate = c.limit_estimate(1).expect("a window's count");
    assert!((2700.0..=3000.0).contains(&estimate), "{estimate}");
}

#[test]
fn a_retry_after_longer_than_the_learnt_window_counts_over_quota_window_again() {
    let mut c = per_second_start();
    accept(&mut c, 5, 1_500, 10_000);
    // Fifteen seconds to wait: the server's window is longer than 1.5 s after all. The count is
    // the configured minute's again, which holds every unit since the start: 50 + 85 × 5 (kept
    // as the window's learnt, the wait would be a stop longer than it, keeping no estimate; a
    // span of 25 s is past two fifths of the minute, and measures no pace).
    let _ = throttle(&mut c, 10_000, 500, 3400.0, 15);
    assert_eq!(c.limit_estimate(1), Some(475.0));
    // A window is learnt once: a young throttle with a short span after that keeps its count.
    accept(&mut c, 5, 10_000, 12_000);
    let _ = throttle(&mut c, 12_000, 10_000, 400.0, 1);
    assert!(c.limit_estimate(1).is_some());
}

#[test]
fn a_young_throttle_whose_span_is_two_fifths_of_the_window_or_more_teaches_nothing() {
    let mut c = PacerController::default();
    Controller::on_options(&mut c, &LimiterOptions::default(), Timestamp::ZERO);
    accept(&mut c, 10, 0, 10_000);
    // At 10 s, "wait 15 s": a span of 25 s, over two fifths of the minute.
    let _ = throttle(&mut c, 10_000, 0, 1e9, 15);
    assert_eq!(c.limit_estimate(1), Some(1000.0), "the young count, kept");
}

/// A sliding window of 10 s met without `Retry-After` by a client that configured nothing: 50
/// units a second for 4 s fill it, and it refuses everything until our first units leave it, 10 s
/// after the start. That first success says the window is at most 10 s: from then on a throttle
/// counts over those 10 s, not over a minute that holds the refusals.
/// 50 units a second for 4 s, then a throttle without `Retry-After` (young: the limiter is not
/// a minute old); the controller and the rate it cut to.
fn young_bare_throttle() -> (PacerController, f64) {
    let mut c = PacerController::default();
    Controller::on_options(&mut c, &LimiterOptions::default(), Timestamp::ZERO);
    accept(&mut c, 5, 0, 4_000);
    let cut = throttle_after(&mut c, 4_000, 0, 1e9, None);
    (c, cut)
}

/// The first success after that throttle, 10 s from the start: the window learnt is 10 s.
fn first_success_at_10_s(c: &mut PacerController) {
    accept(c, 5, 10_000, 10_100);
    let _ = succeed(c, 10_000, 4_000, 60.0);
    assert_eq!(
        c.counting_window(),
        Duration::from_secs(10),
        "the age at the success"
    );
}

#[test]
fn the_first_success_after_a_young_bare_throttle_teaches_the_window() {
    let (mut c, cut) = young_bare_throttle();
    assert_eq!(cut, 60.0, "a young throttle: the minimum rate");
    assert_eq!(c.counting_window(), Duration::from_secs(60));
    assert_eq!(Controller::server_window(&c), None, "nothing learnt");
    // A response 1 s after the cut is to a request sent before it: nothing learnt yet.
    accept(&mut c, 1, 5_000, 5_100);
    let _ = succeed(&mut c, 5_000, 4_000, 60.0);
    assert_eq!(c.counting_window(), Duration::from_secs(60));
    first_success_at_10_s(&mut c);
    assert_eq!(
        Controller::server_window(&c),
        Some(Duration::from_secs(10)),
        "the limiter is told the window learnt"
    );
    // 50 a second again; at 30 s the window is full: its count is 500 units over 10 s, 3,000 a
    // minute, where the minute since the start holds 1,201 (the meter's slots of a sixtieth of
    // the window cut a little off).
    accept(&mut c, 5, 10_100, 30_000);
    let _ = throttle_after(&mut c, 30_000, 4_000, 3400.0, None);
    let estimate = c.limit_estimate(1).expect("a window's count");
    assert!((2_900.0..=3_000.0).contains(&estimate), "{estimate}");
    // A minute old and more, the count is still over the window learnt: 40 a second since
    // 60 s, and at 75 s the last 10 s hold 400 units, 2,400 a minute (the minute, 2,900 or so).
    accept(&mut c, 5, 30_000, 60_000);
    accept(&mut c, 4, 60_000, 75_000);
    assert_eq!(c.counting_window(), Duration::from_secs(10));
    let _ = throttle_after(&mut c, 75_000, 30_000, 3_000.0, None);
    let estimate = c.limit_estimate(1).expect("a window's count");
    assert!((2_300.0..=2_400.0).contains(&estimate), "{estimate}");
}

/// A server that accepts again soon after a young bare throttle with a long `Retry-After` taught
/// its window already: a window is learnt once, and the one learnt stands.
#[test]
fn a_window_learnt_from_a_retry_after_is_not_learnt_again_from_a_success() {
    let mut c = per_second_start();
    accept(&mut c, 5, 1_500, 3_000);
    let _ = throttle_after(&mut c, 3_000, 500, 3400.0, None);
    accept(&mut c, 5, 8_000, 8_100);
    let _ = succeed(&mut c, 8_000, 3_000, 60.0);
    assert_eq!(c.counting_window(), Duration::from_millis(1_500));
}

/// A bucket met the same way: the first success after the young throttle says only how long it
/// took to fill. A run of bare throttles that takes the bucket's leak, well under what a window
/// would have given back, unlearns the window: the count is over `QuotaWindow` again.
#[test]
fn a_bucket_s_leak_unlearns_a_window_learnt_from_a_success() {
    let (mut c, _) = young_bare_throttle();
    first_success_at_10_s(&mut c);
    // 50 a second until 40 s; then the bucket is full and takes its leak, 20 a second.
    accept(&mut c, 5, 10_100, 40_000);
    let _ = throttle_after(&mut c, 40_000, 4_000, 3_400.0, None);
    assert_eq!(
        c.counting_window(),
        Duration::from_secs(10),
        "one throttle is no run"
    );
    accept(&mut c, 2, 40_000, 42_000);
    let _ = throttle_after(&mut c, 42_000, 40_000, 3_000.0, None);
    assert_eq!(c.counting_window(), Duration::from_secs(60));
    assert_eq!(Controller::server_window(&c), None);
}

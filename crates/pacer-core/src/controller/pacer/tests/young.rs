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

/// The driver's side of a queue: the `Controller` calls a limiter makes around nginx's
/// `limit_req` as a site leaves it (5 a second, a burst of 20 held in nginx, a bare 503 over it).
mod queued {
    use crate::controller::PacerController;
    use crate::{Controller, ControllerContext, Feedback, LimiterOptions, Signal, Timestamp};
    use std::time::Duration;

    fn at(ms: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_millis(ms)
    }

    fn response(c: &mut PacerController, sent: u64, now: u64, signal: Signal) {
        let feedback = Feedback {
            units: 1,
            sent_at: at(sent),
            signal,
        };
        Controller::on_response(c, &feedback, at(now));
    }

    fn context(now: u64, rate: f64) -> ControllerContext {
        let mut cx = ControllerContext::new(at(now), rate, 60.0, 1e9);
        cx.since_last_decrease = at(now) - at(100);
        cx.since_last_increase = Duration::from_secs(2);
        cx.decreases = 1;
        cx.queued_units = 10.0;
        cx.waited = true;
        cx.measured_send_rate = Some(rate);
        cx
    }

    /// 21 requests sent in the first 100 ms: the first answered at once, the 20 others held by
    /// the server and answered every 200 ms (nginx's pace) if `queued`, or all at once (a
    /// burst let through, `nodelay`); then a bare throttle at 100 ms, the limiter's first.
    fn start(queued: bool) -> (PacerController, f64) {
        let mut c = PacerController::default();
        Controller::on_options(&mut c, &LimiterOptions::default(), Timestamp::ZERO);
        response(&mut c, 0, 5, Signal::Success);
        if !queued {
            for k in 1..=20 {
                response(&mut c, k * 4, k * 4 + 5, Signal::Success);
            }
        }
        let mut cx = ControllerContext::new(at(100), 1e9, 60.0, 1e9);
        cx.since_last_decrease = at(100) - Timestamp::ZERO;
        cx.queued_units = 10.0;
        cx.measured_send_rate = Some(12_000.0);
        let cut = Controller::on_throttled(&mut c, &cx);
        (c, cut)
    }

    #[test]
    fn requests_a_server_held_before_a_young_throttle_come_back_at_its_pace() {
        let (mut c, cut) = start(true);
        assert_eq!(cut, 60.0, "a young bare throttle: to the minimum");
        // The 20 held requests come back every 200 ms from 200 ms, sent before the throttle.
        for k in 1..=20u64 {
            response(&mut c, k * 4, k * 200, Signal::Success);
        }
        // The first success a settled while after the cut (2 s) reads the server's pace: 21
        // units over the limiter's 4 s, 315 a minute, at once and not in a line over
        // `RecoveryTime`; no estimate is kept (a part of a window), so the rate grows on as at
        // the start.
        let rate = Controller::on_success(&mut c, &context(4_000, 60.0));
        assert_eq!(rate, Some(315.0));
        assert_eq!(c.limit_estimate(1), None);
    }

    #[test]
    fn a_burst_let_through_at_once_keeps_the_young_count_and_its_climb() {
        let (mut c, cut) = start(false);
        assert_eq!(cut, 60.0);
        // Sending at the minimum, each request is accepted a round trip later.
        response(&mut c, 1_100, 1_200, Signal::Success);
        let rate = Controller::on_success(&mut c, &context(2_200, 60.0));
        // Nothing the server held: the young count (21 units at 100 ms, scaled to the minute,
        // × 600, and by the young part, 0.6, for the room a fresh server gives at once) is the
        // estimate, and the rate climbs back to it in a line over `RecoveryTime`, not at once.
        assert_eq!(c.limit_estimate(1), Some(7_560.0));
        assert!(rate.is_some_and(|r| r < 1_000.0), "{rate:?}");
    }

    #[test]
    fn a_success_late_for_its_round_trip_counts_where_it_was_sent() {
        // The burst's last answers come after the first refusal (their way back was longer):
        // they were accepted before it, and count in its young count.
        let (mut c, _) = start(true);
        for k in 1..=5u64 {
            response(&mut c, k * 4, 100 + k * 10, Signal::Success);
        }
        let _ = Controller::on_success(&mut c, &context(2_200, 60.0));
        // 6 units at 100 ms, scaled to a minute (× 600) and by the young part (0.6): 2,160.
        let estimate = c.limit_estimate(1).unwrap();
        assert!((estimate - 2_160.0).abs() < 1e-6, "{estimate}");
    }
}

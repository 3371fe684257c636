//! A fixed window, told by the ends of its throttles' `Retry-After`s, counted from its start.

use crate::controller::PacerController;
use crate::{Controller, ControllerContext, Feedback, LimiterOptions, Signal, Timestamp};
use std::time::Duration;

fn at(secs: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_secs(secs)
}

/// The server accepts `per_tenth` units every 0.1 s from `from` to `to` (s).
fn accept(c: &mut PacerController, per_tenth: u64, from: u64, to: u64) {
    for tenth in from * 10..to * 10 {
        let now = Timestamp::ZERO + Duration::from_millis(tenth * 100);
        let feedback = Feedback {
            units: per_tenth,
            sent_at: now,
            signal: Signal::Success,
        };
        Controller::on_response(c, &feedback, now);
    }
}

/// A throttle at `now` (s) with a `Retry-After` of `ra` s, the last cut at `cut` (s), the rate
/// at 1,200 a minute and the demand waiting: the response, then the cut.
fn throttle(c: &mut PacerController, now: u64, cut: u64, ra: u64) {
    let retry_after = Some(Duration::from_secs(ra));
    let feedback = Feedback {
        units: 1,
        sent_at: at(now),
        signal: Signal::Throttled { retry_after },
    };
    Controller::on_response(c, &feedback, at(now));
    let mut cx = ControllerContext::new(at(now), 1200.0, 60.0, 1e9);
    cx.since_last_decrease = at(now) - at(cut);
    cx.decreases = u64::from(cut > 0);
    cx.queued_units = 10.0;
    cx.measured_send_rate = Some(1200.0);
    cx.retry_after = retry_after;
    let _ = Controller::on_throttled(c, &cx);
}

/// A minute's window resetting on each minute, two throttles that ended on its boundaries (60 s
/// and 180 s), then 600 a minute to the boundary at 240 s and 1,200 a minute after it, and a
/// throttle at 290 s with `ra` seconds to wait: the estimate it leaves.
fn estimate_after(ra: u64) -> f64 {
    let mut c = PacerController::default();
    Controller::on_options(&mut c, &LimiterOptions::default(), Timestamp::ZERO);
    accept(&mut c, 1, 0, 50);
    throttle(&mut c, 50, 0, 10);
    accept(&mut c, 1, 60, 170);
    throttle(&mut c, 170, 50, 10);
    accept(&mut c, 1, 180, 240);
    accept(&mut c, 2, 240, 290);
    throttle(&mut c, 290, 170, ra);
    c.limit_estimate(1).expect("an estimate")
}

#[test]
fn a_window_whose_throttles_end_on_its_boundaries_is_counted_from_its_start() {
    // Ten seconds to wait: the window began at 240 s (a second earlier, for the rounding of
    // `Retry-After`): the units since 239 s, not the minute's, which hold the window before's.
    assert_eq!(estimate_after(10), 10.0 + 1000.0);
    // Seven: the end falls off the boundaries, so nothing says the window is fixed, and the
    // count is the last minute's (the meter's slot at 290 s is the newest, 231 s the oldest).
    assert_eq!(estimate_after(7), 90.0 + 1000.0);
}

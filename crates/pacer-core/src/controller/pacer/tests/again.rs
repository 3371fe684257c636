//! The `Controller` side of a throttle within `DecreaseCooldown` of a cut: when it cuts again.

use crate::controller::PacerController;
use crate::{Controller, ControllerContext, Feedback, LimiterOptions, Signal, Timestamp};
use std::time::Duration;

fn at(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

/// A Pacer controller counting over `window`.
fn controller(window: Duration) -> PacerController {
    let mut c = PacerController::default();
    let o = LimiterOptions {
        quota_window: window,
        ..LimiterOptions::default()
    };
    Controller::on_options(&mut c, &o, Timestamp::ZERO);
    c
}

/// The server accepts `per_second` units a second from `from` to `to` (ms), a tenth at a time.
fn accept(c: &mut PacerController, per_second: u64, from: u64, to: u64) {
    for t in (from..to).step_by(100) {
        let feedback = Feedback {
            units: per_second / 10,
            sent_at: at(t),
            signal: Signal::Success,
        };
        Controller::on_response(c, &feedback, at(t));
    }
}

/// A context at `now` (ms) with the rate at `rate`, the last cut at `cut` (ms), over `window`.
fn context(now: u64, rate: f64, cut: u64, window: Duration) -> ControllerContext {
    let mut cx = ControllerContext::new(at(now), rate, 60.0, 100_000.0);
    cx.since_last_decrease = at(now) - at(cut);
    cx.quota_window = window;
    cx.decreases = 1;
    cx
}

#[test]
fn a_throttle_of_a_request_whose_whole_window_was_sent_after_the_cut_cuts_again() {
    let w = Duration::from_secs(1);
    let mut c = controller(w);
    let mut cx = context(10_000, 3000.0, 8_000, w);
    cx.retry_after = Some(Duration::from_secs(1));
    // Sent 0.5 s after the cut: its window still held units sent at the old rate.
    assert!(!c.cuts_again(&cx, at(8_500)));
    // Sent a whole window after it, and still refused: the new rate is too high.
    assert!(c.cuts_again(&cx, at(9_000)));
    // A window of a minute: never before `DecreaseCooldown` on this count.
    let w = Duration::from_secs(60);
    let mut c = controller(w);
    let mut cx = context(10_000, 3000.0, 8_000, w);
    cx.retry_after = Some(Duration::from_secs(1));
    assert!(!c.cuts_again(&cx, at(9_999)));
}

#[test]
fn in_the_first_windows_of_several_processes_a_refusal_is_ours_a_window_later() {
    let w = Duration::from_secs(1);
    // Among `processes`, our cut at `cut` ms, then a refusal (with a `Retry-After` of a window,
    // or `bare`) 2 s later of a request sent at `sent` ms: does it cut again?
    let again = |processes, bare: bool, cut: u64, sent: u64| {
        let retry_after = (!bare).then_some(w);
        let mut c = controller(w);
        let mut cx = context(cut, 3000.0, 0, w);
        cx.instance_count = processes;
        cx.retry_after = retry_after;
        let _ = Controller::on_throttled(&mut c, &cx);
        let mut cx = context(cut + 2_000, 2000.0, cut, w);
        cx.instance_count = processes;
        cx.retry_after = retry_after;
        c.cuts_again(&cx, at(sent))
    };
    // A first cut at 5 s (a cold start: every process climbing). Sent 1.5 windows after it:
    // another process may still be climbing.
    assert!(!again(2, false, 5_000, 6_500));
    assert!(!again(4, false, 5_000, 6_500));
    // Two windows after it: the others met their throttles, and the refusal is ours.
    assert!(again(2, false, 5_000, 7_000));
    assert!(again(4, false, 5_000, 7_000));
    // A bare refusal (no `Retry-After`) is ours a window later, as before.
    assert!(again(2, true, 5_000, 6_500));
    // One process: a window is enough.
    assert!(again(1, false, 5_000, 6_500));
    // Past the first ten windows, two processes are back to one window.
    assert!(again(2, false, 30_000, 31_500));
}

#[test]
fn a_run_of_bare_throttles_that_measures_a_pace_under_the_rate_cuts_again() {
    let w = Duration::from_secs(10);
    // 80 a second while a bucket fills, its first refusal at 30 s (a cut), then its leak of 50
    // a second: 3,000 a minute.
    let history = |c: &mut PacerController| {
        accept(c, 80, 0, 30_000);
        let cx = context(30_000, 4800.0, 0, w);
        let _ = Controller::on_throttled(c, &cx);
        accept(c, 50, 30_000, 32_000);
    };
    let mut c = controller(w);
    history(&mut c);
    assert!(
        c.cuts_again(&context(32_000, 3360.0, 30_000, w), at(31_900)),
        "3,360 a minute against a leak of 3,000"
    );
    let mut c = controller(w);
    history(&mut c);
    assert!(
        !c.cuts_again(&context(32_000, 3100.0, 30_000, w), at(31_900)),
        "within the cut's margin of the leak"
    );
    // A window that is spent accepts next to nothing until it resets: 10 a second against the
    // 80 still sent is no leak to pace to.
    let mut c = controller(w);
    accept(&mut c, 80, 0, 30_000);
    let _ = Controller::on_throttled(&mut c, &context(30_000, 4800.0, 0, w));
    accept(&mut c, 10, 30_000, 32_000);
    let mut cx = context(32_000, 4800.0, 30_000, w);
    cx.measured_send_rate = Some(4800.0);
    assert!(!c.cuts_again(&cx, at(31_900)));
    // The same run with a `Retry-After`: the server said when, nothing to measure.
    let mut c = controller(w);
    history(&mut c);
    let mut cx = context(32_000, 3360.0, 30_000, w);
    cx.retry_after = Some(Duration::from_secs(1));
    assert!(!c.cuts_again(&cx, at(31_900)));
}

/// After a throttle at 100 s (the window full at 3,000 a minute), a bare run to 104 s in which
/// the server accepted `per_second` units a second (or one unit, for 0): the estimate at 104 s.
fn estimate_after_a_bare_run(per_second: u64) -> f64 {
    let w = Duration::from_secs(60);
    let mut c = controller(w);
    accept(&mut c, 50, 0, 100_000);
    let _ = Controller::on_throttled(&mut c, &context(100_000, 3000.0, 0, w));
    if per_second == 0 {
        let feedback = Feedback {
            units: 1,
            sent_at: at(102_000),
            signal: Signal::Success,
        };
        Controller::on_response(&mut c, &feedback, at(102_000));
    } else {
        accept(&mut c, per_second, 100_000, 104_000);
    }
    let _ = Controller::on_throttled(&mut c, &context(104_000, 3000.0, 100_000, w));
    c.limit_estimate(1).expect("an estimate")
}

#[test]
fn a_bare_run_s_pace_is_the_estimate_only_if_it_is_a_leak() {
    // 20 a second, 1,200 a minute, is a bucket's leak: the estimate.
    assert!((estimate_after_a_bare_run(20) - 1200.0).abs() < 1.0);
    // One unit in 4 s is a spent window, not a pace (a fixed window's before its boundary):
    // the estimate stays the window's count, not 15 a minute.
    let estimate = estimate_after_a_bare_run(0);
    assert!(estimate > 2500.0, "{estimate}");
}

/// Held for 200 s under a firm estimate of 3,000 a minute (a level), the window a minute back
/// holding `earlier` units a second: a throttle at 200 s (the level ends there), then the
/// server accepts `per_second` units a second until a bare throttle at 204 s. The controller
/// then.
fn after_a_level_and_a_bare_run(earlier: u64, per_second: u64) -> PacerController {
    let w = Duration::from_secs(60);
    let mut c = controller(w);
    accept(&mut c, earlier, 0, 200_000);
    c.limit = Some(3_000.0);
    c.firm = true;
    let _ = Controller::on_throttled(&mut c, &context(200_000, 3000.0, 0, w));
    assert!(c.peak.is_some(), "the level is a peak");
    accept(&mut c, per_second, 200_000, 204_000);
    let _ = Controller::on_throttled(&mut c, &context(204_000, 3000.0, 200_000, w));
    c
}

#[test]
fn a_bare_run_far_under_a_level_held_a_minute_is_a_fall_not_slack() {
    // 20 a second (1,200 a minute) after a minute at 50: less than a sliding window gives back,
    // but more than a fifth under the level a minute held. A neighbour or a cut filled the
    // window: the estimate is the pace, and the level is remembered, to probe back toward.
    let c = after_a_level_and_a_bare_run(50, 20);
    assert!((c.limit_estimate(1).expect("an estimate") - 1_200.0).abs() < 1.0);
    assert!(
        c.ceiling.is_some_and(|x| x.limit >= 3_000.0),
        "{:?}",
        c.ceiling
    );
    // 50 a second (3,000 a minute) after a window at 70 (a bucket's first window, let through
    // on top of its pace): a quarter under what a sliding window gives back, and within a
    // fifth of the level: a bucket's slack, nothing to probe back toward.
    let c = after_a_level_and_a_bare_run(70, 50);
    let e = c.limit_estimate(1).expect("an estimate");
    assert!((e - 3_000.0).abs() < 1.0, "{e}");
    assert!(c.ceiling.is_none(), "{:?}", c.ceiling);
}

#[test]
fn a_bucket_s_slack_keeps_a_limit_remembered_from_a_fall() {
    // While probing back toward a limit a cut took (remembered: 6,000 a minute), the quota is
    // still cut: a run of bare throttles measures the cut quota's pace. The limit it remembers
    // stays, for when the quota comes back.
    let w = Duration::from_secs(10);
    let mut c = controller(w);
    accept(&mut c, 80, 0, 30_000);
    c.ceiling = Some(crate::controller::pacer::memory::Ceiling {
        limit: 6_000.0,
        firm: true,
        at: Duration::from_secs(20),
    });
    let _ = Controller::on_throttled(&mut c, &context(30_000, 4800.0, 0, w));
    accept(&mut c, 50, 30_000, 32_000);
    let _ = Controller::on_throttled(&mut c, &context(32_000, 4800.0, 30_000, w));
    assert!((c.limit_estimate(1).expect("an estimate") - 3_000.0).abs() < 1.0);
    assert!(
        c.ceiling.is_some_and(|x| x.limit >= 6_000.0),
        "{:?}",
        c.ceiling
    );
}

#[test]
fn a_level_outlives_a_bare_run_within_a_fifth_of_it() {
    // A neighbour's units fill the window as it comes: the first run of bare throttles takes
    // 50 a second (within a fifth of the level of 3,000 a minute: a bucket's slack, as far as
    // it shows), the same run 8 s on only 10. The level outlives the first, so the second is
    // no slack: the estimate is its pace, and the fall from the estimate before is remembered.
    let w = Duration::from_secs(60);
    let mut c = after_a_level_and_a_bare_run(70, 50);
    assert!(c.ceiling.is_none(), "{:?}", c.ceiling);
    assert!(c.peak.is_some(), "the level outlives the slack");
    accept(&mut c, 10, 204_000, 212_000);
    let _ = Controller::on_throttled(&mut c, &context(212_000, 3000.0, 204_000, w));
    let e = c.limit_estimate(1).expect("an estimate");
    assert!(e < 2_400.0, "the run's pace: {e}");
    assert!(
        c.ceiling.is_some_and(|x| x.limit >= 3_000.0),
        "{:?}",
        c.ceiling
    );
}

#[test]
fn a_probe_s_estimate_above_the_level_keeps_the_level() {
    // A level of 3,000 a minute, held from the start to a throttle at 200 s.
    let w = Duration::from_secs(60);
    let mut c = controller(w);
    accept(&mut c, 50, 0, 200_000);
    c.limit = Some(3_000.0);
    c.firm = true;
    let _ = Controller::on_throttled(&mut c, &context(200_000, 3000.0, 0, w));
    assert!(c.peak.is_some(), "the level is a peak");
    // A probe finds room at 3,600 a minute (its throttle with a `Retry-After`); 6 s later a
    // bare throttle at the new hold.
    accept(&mut c, 60, 200_000, 260_000);
    c.probing = true;
    let mut cx = context(260_000, 3600.0, 200_000, w);
    cx.retry_after = Some(Duration::from_secs(1));
    let _ = Controller::on_throttled(&mut c, &cx);
    accept(&mut c, 58, 260_000, 266_000);
    let _ = Controller::on_throttled(&mut c, &context(266_000, 3500.0, 260_000, w));
    assert!(c.limit_estimate(1).is_some_and(|e| e > 3_300.0));
    // The probe's estimate has not held a minute: the level before it is still the level.
    assert!(
        c.peak.is_some_and(|p| (p.limit - 3_000.0).abs() < 1.0),
        "{:?}",
        c.peak
    );
    // A neighbour comes: a run of bare throttles at 20 a second, far under the level, is no
    // slack: the estimate is its pace, and the fall from the estimate before is remembered.
    accept(&mut c, 20, 266_000, 276_000);
    let _ = Controller::on_throttled(&mut c, &context(276_000, 3500.0, 266_000, w));
    let e = c.limit_estimate(1).expect("an estimate");
    assert!((e - 1_200.0).abs() < 1.0, "the run's pace: {e}");
    assert!(
        c.ceiling.is_some_and(|x| x.limit >= 3_000.0),
        "{:?}",
        c.ceiling
    );
}

#[test]
fn a_first_estimate_that_the_next_throttle_finds_no_fall_from_is_a_level() {
    // A window of 10 s: a first estimate of about 6,000 a minute at 12 s (requests waiting),
    // held until a throttle at 300 s. One that finds about 5,400 confirms it: a level (the
    // lower of the two), so a later run of bare throttles far under it is a fall, not a
    // bucket's slack.
    let w = Duration::from_secs(10);
    let after = |per_second: u64| {
        let mut c = controller(w);
        accept(&mut c, 100, 0, 12_000);
        let mut cx = context(12_000, 7200.0, 0, w);
        cx.queued_units = 10.0;
        let _ = Controller::on_throttled(&mut c, &cx);
        let first = c.limit_estimate(1).expect("a first estimate");
        accept(&mut c, per_second, 12_000, 300_000);
        let mut cx = context(300_000, 6000.0, 12_000, w);
        cx.queued_units = 10.0;
        let _ = Controller::on_throttled(&mut c, &cx);
        let second = c.limit_estimate(1).expect("an estimate");
        (c, first, second)
    };
    let (c, first, second) = after(90);
    assert!(second < first && second >= first * 0.8, "{first} {second}");
    assert!(
        c.peak.is_some_and(|p| (p.limit - second).abs() < 1.0),
        "{:?}",
        c.peak
    );
    // One that finds about 3,600, a fifth or more under it, corrects it (a bucket's first
    // window shows its size on top of its pace): no level.
    let (c, first, second) = after(60);
    assert!(second < first * 0.8, "{first} {second}");
    assert!(c.peak.is_none(), "{:?}", c.peak);
}

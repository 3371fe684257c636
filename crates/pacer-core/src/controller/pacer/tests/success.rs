//! The `Controller` side of a success: the shortcut for a success with nothing waiting.

use crate::controller::PacerController;
use crate::{
    Controller, ControllerContext, Feedback, LimiterOptions, RateController, Signal, Timestamp,
};
use std::time::Duration;

/// The `Controller` side answers a success with nothing waiting without building the whole
/// state: it must leave the controller as the pure contract does, through starts, a throttle,
/// a change of the instance count and a lapse.
#[test]
fn a_success_with_nothing_waiting_leaves_the_controller_as_the_whole_state_does() {
    let at = |s: u64| Timestamp::from_nanos(s * 1_000_000_000);
    let mut fast = PacerController::default();
    Controller::on_options(&mut fast, &LimiterOptions::default(), at(0));
    let mut whole = fast.clone();
    let (mut rate, mut cut_at) = (600.0, 0);
    for t in 1..600 {
        let now = at(t);
        let signal = if t == 200 || t == 420 {
            Signal::Throttled {
                retry_after: (t == 200).then_some(Duration::from_secs(5)),
            }
        } else {
            Signal::Success
        };
        let feedback = Feedback {
            units: 10,
            sent_at: now,
            signal,
        };
        Controller::on_response(&mut fast, &feedback, now);
        Controller::on_response(&mut whole, &feedback, now);
        let mut cx = ControllerContext::new(now, rate, 10.0, 100_000.0);
        cx.since_last_decrease = now - at(cut_at);
        cx.since_last_increase = Duration::from_secs(t % 7);
        cx.instance_count = if t < 300 { 1 } else { 3 };
        cx.measured_send_rate = Some(rate * 0.95);
        // Now and then something waits: the whole state then answers on both sides.
        cx.waited = t % 50 == 0;
        if let Signal::Throttled { retry_after } = signal {
            cx.retry_after = retry_after;
            let a = Controller::on_throttled(&mut fast, &cx);
            let b = Controller::on_throttled(&mut whole, &cx);
            assert_eq!(a, b);
            (rate, cut_at) = (a, t);
            continue;
        }
        let a = Controller::on_success(&mut fast, &cx);
        let state = whole.counts.state(&cx);
        let b = RateController::on_success(&mut whole, &state);
        assert_eq!(a, b, "at {t} s");
        if let Some(r) = a {
            rate = r;
        }
        assert_eq!(format!("{fast:?}"), format!("{whole:?}"), "at {t} s");
    }
}

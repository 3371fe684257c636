//! The built-in controllers as the limiter runs them (`Controller`: events in, their own counts)
//! and through their pure contract (`RateController` in a `PureController`, which counts for
//! them) move the rate alike.

use super::*;
use crate::{Aimd, Controller, Cubic, PacerController};

/// A busy limiter's day: a demand above the rate, throttles with and without `Retry-After`
/// (with `bare` false, every one with a `Retry-After`, of 0 s where the other has none), stops
/// the server orders, long quiet spells; the rate after each step. With `late`, the day begins
/// a `QuotaWindow` after the limiter was made.
fn rates(
    controller: Box<dyn Controller>,
    kind: ControllerKind,
    bare: bool,
    late: bool,
) -> Vec<f64> {
    let mut o = options();
    o.controller = kind;
    o.max_units_per_minute = 6000.0;
    o.quota_window = Duration::from_secs(20);
    let o_window = o.quota_window;
    let mut c = LimiterCore::with_controller(o, controller, Timestamp::ZERO).unwrap();
    // A small generator of its own, so the script is the same for every run.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut rates = Vec::new();
    let mut now = Timestamp::ZERO + if late { o_window } else { Duration::ZERO };
    for step in 0..4_000u64 {
        now += Duration::from_millis(50 + next() % 200);
        // Ask for more than the rate gives, so requests wait and the controllers climb.
        let _ = c.acquire(1 + next() % 3, now);
        while c.pop_ready(now).is_some() {}
        let sent_at = now.saturating_sub(Duration::from_millis(next() % 300));
        let feedback = match next() % 100 {
            0..=3 => throttled(sent_at, Some(Duration::from_secs(next() % 8))),
            4..=6 => throttled(sent_at, (!bare).then_some(Duration::ZERO)),
            7 => Feedback {
                signal: Signal::Neutral,
                ..success(sent_at)
            },
            _ => success(sent_at),
        };
        let _ = c.on_response(feedback, now);
        if step % 500 == 250 {
            let _ = c.pause_until(now + Duration::from_secs(3), now);
        }
        if step % 1000 == 999 {
            now += Duration::from_secs(90);
        }
        rates.push(c.rate());
    }
    rates
}

#[test]
fn each_built_in_controller_moves_the_rate_alike_on_its_own_counts_and_through_its_pure_contract() {
    type Run = (ControllerKind, Box<dyn Controller>, Box<dyn Controller>);
    // The Pacer controller, run as a `Controller`, also reads a run of bare throttles against
    // its own history of accepted units (a leaky bucket's slack), and learns a server's shorter
    // window from a young throttle's `Retry-After`, which a pure contract's state does not
    // hold: its day gives every throttle a `Retry-After` and begins a window late.
    let runs: [(Run, bool); 3] = [
        (
            (
                ControllerKind::Aimd,
                Box::new(Aimd::default()),
                Box::new(PureController::new(Aimd::default())),
            ),
            true,
        ),
        (
            (
                ControllerKind::Cubic,
                Box::new(Cubic::default()),
                Box::new(PureController::new(Cubic::default())),
            ),
            true,
        ),
        (
            (
                ControllerKind::Pacer,
                Box::new(PacerController::default()),
                Box::new(PureController::new(PacerController::default())),
            ),
            false,
        ),
    ];
    for ((kind, native, pure), bare) in runs {
        let late = !bare;
        let (native, pure) = (
            rates(native, kind, bare, late),
            rates(pure, kind, bare, late),
        );
        let moves = native.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(
            moves > 10,
            "{kind}: the script moves the rate ({moves} times)"
        );
        assert_eq!(native, pure, "{kind}");
    }
}

#[test]
fn the_controller_the_options_select_is_the_built_in_one() {
    for kind in ControllerKind::ALL {
        let mut o = options();
        o.controller = kind;
        let built = o.build_controller();
        let own: Box<dyn Controller> = match kind {
            ControllerKind::Aimd => Box::new(Aimd::default()),
            ControllerKind::Cubic => Box::new(Cubic::default()),
            _ => Box::new(PacerController::default()),
        };
        assert_eq!(
            rates(built, kind, true, false),
            rates(own, kind, true, false),
            "{kind}"
        );
    }
}

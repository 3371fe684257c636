//! The probe: when it comes, how it climbs, what its throttle teaches (nothing new, room the
//! next throttle does not confirm, the way back toward a limit that fell).

use super::{busy, run, throttle};
use crate::controller::{PacerController, RateController};
use std::time::Duration;

#[test]
fn it_holds_for_probe_after_times_the_instances_then_probes_gently() {
    for instances in [1u32, 2, 4] {
        let mut c = PacerController::default();
        let per = 1000.0 / f64::from(instances);
        let mut s = busy(per * 0.95);
        s.instance_count = instances;
        s.accepted_per_minute = per;
        s.since_last_decrease = Duration::from_secs(120);
        let _ = c.on_throttled(&s);
        s.rate = per * 0.985;
        // Reached the hold at 10 s after the cut; the wait is 2 min × instances.
        let wait = 120 * u64::from(instances);
        let at_end = run(&mut c, s, 10, wait);
        assert!((at_end - per * 0.985).abs() < 1e-9, "{instances}: held");
        assert!(!c.is_probing());
        let mut s2 = busy(at_end);
        s2.instance_count = instances;
        let mut probe = |c: &mut PacerController, after: u64| {
            s2.since_last_decrease = Duration::from_secs(10 + wait + after);
            c.on_success(&s2)
        };
        // 15 s into the probe: 2 % above the hold; 30 s: 6 %; 45 s: 14 %.
        for (after, step) in [(15, 0.02), (30, 0.06), (45, 0.14)] {
            let got = probe(&mut c, after).unwrap();
            assert!(
                (got / (per * 0.985) - 1.0 - step).abs() < 1e-9,
                "{instances} instances, {after} s: {got}"
            );
        }
        assert!(c.is_probing());
    }
}

#[test]
fn a_probe_that_finds_nothing_doubles_the_next_wait_up_to_the_maximum() {
    let mut c = PacerController::default();
    throttle(&mut c, 1050.0, 1000.0, 1);
    let mut waits = Vec::new();
    for _ in 0..5 {
        c.probing = true;
        throttle(&mut c, 1080.0, 1000.0, 1);
        waits.push(c.probe_after.as_secs());
    }
    assert_eq!(waits, [240, 480, 900, 900, 900]);
    // A probe that found more room keeps an eye on the limit.
    c.probing = true;
    throttle(&mut c, 1200.0, 1100.0, 1);
    assert_eq!(c.probe_after.as_secs(), 120);
}

/// A probe that found more room against a bucket found the tokens it regained while the rate was
/// under its leak after a cut: the next throttle at the hold finds less, and the next probe
/// waits twice as long. Confirmed (the next throttle finds at least as much), the wait stands.
#[test]
fn a_probe_s_room_that_the_next_throttle_does_not_confirm_doubles_the_next_wait() {
    let probed = |next: f64| {
        let mut c = PacerController::default();
        throttle(&mut c, 1050.0, 1000.0, 1);
        c.probing = true;
        throttle(&mut c, 1200.0, 1100.0, 1);
        assert_eq!(c.probe_after.as_secs(), 120, "more room");
        throttle(&mut c, 1080.0, next, 1);
        c.probe_after.as_secs()
    };
    assert_eq!(probed(1060.0), 240, "the room was not the limit's");
    assert_eq!(probed(1100.0), 120, "confirmed");
    // Only the first throttle after the probe decides: a later one at the hold is as before.
    let mut c = PacerController::default();
    throttle(&mut c, 1050.0, 1000.0, 1);
    c.probing = true;
    throttle(&mut c, 1200.0, 1100.0, 1);
    throttle(&mut c, 1080.0, 1100.0, 1);
    throttle(&mut c, 1080.0, 1060.0, 1);
    assert_eq!(c.probe_after.as_secs(), 120);
}

#[test]
fn after_a_fall_it_probes_back_toward_the_old_limit_and_takes_it_again() {
    let mut c = PacerController::default();
    throttle(&mut c, 1050.0, 1000.0, 1);
    assert!(c.firm);
    // A neighbour takes half: the estimate falls.
    let cut = throttle(&mut c, 985.0, 500.0, 20);
    assert_eq!(c.limit_estimate(1), Some(500.0));
    assert_eq!(cut, 475.0);
    // Back at the hold at once (a long pause), it probes after 40 s, toward 1,000 over 30 s.
    let mut s = busy(492.5);
    s.since_last_decrease = Duration::from_secs(1);
    assert_eq!(c.on_success(&s), None, "at the hold");
    s.since_last_decrease = Duration::from_secs(41);
    assert_eq!(c.on_success(&s), None, "still holding");
    s.since_last_decrease = Duration::from_secs(56);
    let halfway = c.on_success(&s).unwrap();
    assert!(
        (halfway - (492.5 + (1000.0 - 492.5) / 4.0)).abs() < 1e-9,
        "{halfway}"
    );
    s.since_last_decrease = Duration::from_secs(71);
    assert_eq!(c.on_success(&s), Some(985.0), "back to the old hold");
    assert_eq!(c.limit_estimate(1), Some(1000.0), "the old limit again");
    assert!(!c.is_probing());
    // Held like any estimate: no probe for `ProbeAfter` (2 min), where `RecoveryProbeAfter`
    // (40 s) would have probed from 112 s.
    assert_eq!(run(&mut c, busy(985.0), 72, 119), 985.0);
    assert!(!c.is_probing());
    assert!(
        run(&mut c, busy(985.0), 191, 16) > 985.0,
        "probing after 2 min"
    );
}

/// A throttle with a `Retry-After` of a second, `since` seconds after the last cut, with
/// `instances` processes sharing the budget.
fn throttle_after(c: &mut PacerController, rate: f64, accepted: f64, since: u64, instances: u32) {
    let mut s = busy(rate);
    s.accepted_per_minute = accepted;
    s.retry_after = Some(Duration::from_secs(1));
    s.since_last_decrease = Duration::from_secs(since);
    s.instance_count = instances;
    c.on_throttled(&s);
}

/// A level of 1,000 held `held` seconds, after a first estimate the next throttle corrects.
fn held_level(held: u64) -> PacerController {
    let mut c = PacerController::default();
    throttle_after(&mut c, 1050.0, 1000.0, 120, 1);
    throttle_after(&mut c, 1000.0, 1000.0, held, 1);
    c
}

/// A level of 1,000 (whole budget) held `held` seconds, after a first estimate the next
/// throttle corrects; then throttles that find 900, 840, 780 and `last`, each `apart` seconds
/// after the cut before it, the last three with `instances` processes (each with its share).
fn slide(held: u64, apart: [u64; 4], instances: u32, last: f64) -> PacerController {
    let mut c = held_level(held);
    let n = f64::from(instances);
    throttle_after(&mut c, 990.0, 900.0, apart[0], 1);
    throttle_after(&mut c, 930.0 / n, 840.0 / n, apart[1], instances);
    throttle_after(&mut c, 870.0 / n, 780.0 / n, apart[2], instances);
    throttle_after(&mut c, (last + 90.0) / n, last / n, apart[3], instances);
    assert_eq!(
        c.limit_estimate(1),
        Some(last),
        "the last estimate, whole budget"
    );
    c
}

#[test]
fn a_limit_that_fell_in_steps_is_probed_back_toward_like_one_that_fell_at_once() {
    // A crowd grows a few processes at a time: each throttle finds 7–12 % less, none a fall.
    let c = slide(120, [120, 60, 60, 60], 1, 720.0);
    assert!(c.ceiling.is_none(), "28 % under the level held is no fall");
    let mut c = slide(120, [120, 60, 60, 60], 1, 690.0);
    assert_eq!(
        c.ceiling.map(|c| c.limit),
        Some(1000.0),
        "31 % under the level held a minute: the limit fell, from there"
    );
    // The crowd left: it probes back toward 1,000 after `RecoveryProbeAfter` and takes it.
    let rate = run(&mut c, busy(690.0 * 0.95), 1, 150);
    assert_eq!(rate, 985.0, "back at the old hold");
    assert_eq!(c.limit_estimate(1), Some(1000.0), "the old limit again");
}

#[test]
fn a_slide_slower_than_four_windows_is_no_fall() {
    // The last step comes 5 windows after the level of 1,000 ended (two processes' shares of a
    // bucket trading places drift so).
    let c = slide(120, [120, 100, 100, 100], 1, 690.0);
    assert!(
        c.ceiling.is_none(),
        "a slide, not a crowd: nothing to probe back toward"
    );
}

#[test]
fn a_fall_in_one_or_two_swings_is_no_fall_in_steps() {
    // From the level of 1,000 to 690 in two throttles of a fifth less each, less than a fall
    // each: two processes' shares of a bucket trading places.
    let mut c = held_level(120);
    throttle_after(&mut c, 990.0, 900.0, 120, 1);
    throttle_after(&mut c, 810.0, 740.0, 60, 1);
    throttle_after(&mut c, 700.0, 690.0, 60, 1);
    assert_eq!(c.limit_estimate(1), Some(690.0));
    assert!(c.ceiling.is_none(), "a swing, not a crowd's steps");
}

#[test]
fn a_level_that_did_not_hold_a_minute_is_no_step_to_fall_from() {
    // The level of 1,000 ended by a throttle 30 s after the cut that set it (two processes
    // against a bucket trade their shares back and forth so).
    let c = slide(30, [30, 30, 30, 30], 1, 690.0);
    assert!(
        c.ceiling.is_none(),
        "no level held: nothing to probe back toward"
    );
}

#[test]
fn a_level_held_before_the_instance_count_changed_is_no_step_to_fall_from() {
    // The same whole budgets, but a second process was announced after the level of 1,000.
    let c = slide(120, [120, 60, 60, 60], 2, 690.0);
    assert!(
        c.ceiling.is_none(),
        "a level of another instance count is not one the budget fell from"
    );
}

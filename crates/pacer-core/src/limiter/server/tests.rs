//! Following the server's numbers, on the manual clock.

use super::*;
use crate::{Feedback, LimiterOptions, Signal};

fn secs(s: f64) -> Timestamp {
    Timestamp::from_secs_f64(s)
}

/// 600 units/min for 2 instances (300 each), within [60, 6000] for the budget.
fn core(instances: u32) -> LimiterCore {
    let o = LimiterOptions {
        controller: crate::ControllerKind::Aimd,
        initial_units_per_minute: Some(600.0),
        min_units_per_minute: 60.0,
        max_units_per_minute: 6000.0,
        instance_count: instances,
        ..LimiterOptions::default()
    };
    LimiterCore::new(o, Timestamp::ZERO).unwrap()
}

fn success(at: Timestamp) -> Feedback {
    Feedback {
        units: 1,
        sent_at: at,
        signal: Signal::Success,
    }
}

/// 1,200 units a minute, over a window of two minutes: not the limiter's `QuotaWindow`, so
/// the plain rule (remaining over the time to the reset) alone sets the pace.
fn quota(remaining: u64, reset_secs: u64) -> ServerQuota {
    ServerQuota::new(remaining, Duration::from_secs(reset_secs))
        .with_policy(2400, Duration::from_secs(120))
}

/// 1,200 units a minute over the limiter's `QuotaWindow`: the level rule applies too.
fn sliding(remaining: u64, reset_secs: u64) -> ServerQuota {
    ServerQuota::new(remaining, Duration::from_secs(reset_secs))
        .with_policy(1200, Duration::from_secs(60))
}

#[test]
fn room_in_a_window_of_quota_window_is_spread_over_a_tenth_of_it() {
    let mut c = core(2);
    let _ = c.follow_server(sliding(300, 1), secs(1.0));
    // The plain rule: 300 over half a second, 18,000 a minute each. Nothing of this process
    // leaves the window, so its 150 go over 6 s: 1,500 a minute.
    assert!((c.rate() - 1500.0).abs() < 1e-9, "{}", c.rate());
}

#[test]
fn units_accepted_a_window_ago_are_sent_again_as_they_leave_it() {
    let mut c = core(1);
    for at in [0.5, 1.5] {
        for _ in 0..10 {
            let _ = c.on_response(success(secs(at)), secs(at));
        }
    }
    // At 59.5 s the seconds 0 and 1 (20 units) leave next: 600 a minute, and the 10 left
    // over 6 s, 100 a minute.
    let _ = c.follow_server(sliding(10, 1), secs(59.5));
    assert!((c.rate() - 700.0).abs() < 1e-9, "{}", c.rate());
    // One unit left: the plain rule (over half a second, 120 a minute) is the lower.
    let _ = c.follow_server(sliding(1, 1), secs(59.5));
    assert!((c.rate() - 120.0).abs() < 1e-9, "{}", c.rate());
    // A second later second 0 has left: seconds 1 and 2 (10 units).
    let _ = c.follow_server(sliding(10, 1), secs(60.5));
    assert!((c.rate() - 400.0).abs() < 1e-9, "{}", c.rate());
    // The same numbers under a window other than QuotaWindow: the plain rule alone.
    let _ = c.follow_server(quota(10, 1), secs(60.5));
    assert!((c.rate() - 1200.0).abs() < 1e-9, "{}", c.rate());
}

/// 3,000 a minute as 50 units a second: a window of one second.
fn one_second(remaining: u64) -> ServerQuota {
    ServerQuota::new(remaining, Duration::from_secs(1)).with_policy(50, Duration::from_secs(1))
}

fn answered(c: &mut LimiterCore, units: u64, at: Timestamp) {
    let _ = c.on_response(
        Feedback {
            units,
            sent_at: at,
            signal: Signal::Success,
        },
        at,
    );
}

#[test]
fn a_short_window_is_paced_by_its_policy_less_the_largest_request_of_each_process() {
    let mut c = core(2);
    c.options.max_units_per_minute = 1e9;
    // Nothing sent yet: the largest cost is taken as 1. 1,500 a minute each, less 2 / 50.
    let _ = c.follow_server(one_second(20), secs(1.0));
    assert!((c.rate() - 1500.0 * 0.96).abs() < 1e-9, "{}", c.rate());
    // Whatever is left: the numbers are too coarse to steer by.
    let _ = c.follow_server(one_second(49), secs(1.1));
    assert!((c.rate() - 1500.0 * 0.96).abs() < 1e-9, "{}", c.rate());
    // A request of 5 units: either process may send one at once, 10 of the 50.
    answered(&mut c, 5, secs(1.2));
    let _ = c.follow_server(one_second(20), secs(1.3));
    assert!((c.rate() - 1500.0 * 0.8).abs() < 1e-9, "{}", c.rate());
    // Two QuotaWindows later the 5 is forgotten.
    answered(&mut c, 1, secs(125.0));
    let _ = c.follow_server(one_second(20), secs(125.0));
    assert!((c.rate() - 1500.0 * 0.96).abs() < 1e-9, "{}", c.rate());
    // Nothing left with a reset of a second: the pace, not a hold (below).
    let changes = c.follow_server(one_second(0), secs(126.0));
    assert_eq!(changes.paused_until, None);
    assert!((c.rate() - 1500.0 * 0.96).abs() < 1e-9, "{}", c.rate());
}

/// `remaining: 0` in a short window paced evenly is the way in bunching the pace: with a reset of
/// a second or less it is paced through, the bucket holding nothing, so that the next request
/// waits a pace interval instead of the whole window. A longer reset, and a stop before the
/// limiter is a window old, still hold until it.
#[test]
fn nothing_left_in_a_short_window_with_a_reset_of_a_second_is_paced_through() {
    let mut c = core(2);
    c.options.max_units_per_minute = 1e9;
    // Before the limiter is a window old: held until the reset.
    let changes = c.follow_server(one_second(0), secs(0.5));
    assert_eq!(changes.paused_until, Some(secs(1.5)));
    // A window old, nothing left, the reset a second away: no hold, the short pace (1,440 a
    // minute each), and one unit in the bucket: one request now, the next a pace interval later.
    let changes = c.follow_server(one_second(0), secs(10.0));
    assert_eq!(changes.paused_until, None);
    assert!((c.rate() - 1440.0).abs() < 1e-9, "{}", c.rate());
    assert!(c.try_take(1, secs(10.0)).is_ok());
    assert!(c.try_take(1, secs(10.0)).is_err());
    assert!(c.try_take(1, secs(10.0 + 60.0 / 1440.0 + 1e-9)).is_ok());
    // A window of 10 s with nothing left: with a reset of a second, paced through at 1,500 a
    // minute each less the margin of 2 units of the 500 (1,494); with its reset 4 s away (a
    // fixed window's boundary), held.
    let ten = |reset| {
        ServerQuota::new(0, Duration::from_secs(reset)).with_policy(500, Duration::from_secs(10))
    };
    let changes = c.follow_server(ten(1), secs(20.0));
    assert_eq!(changes.paused_until, None);
    assert!((c.rate() - 1494.0).abs() < 1e-9, "{}", c.rate());
    let changes = c.follow_server(ten(4), secs(20.0));
    assert_eq!(changes.paused_until, Some(secs(24.0)));
}

#[test]
fn a_throttle_at_a_short_window_s_pace_widens_its_margin_by_a_unit_a_process() {
    let throttled = |c: &mut LimiterCore, sent: f64, at: f64| {
        let _ = c.on_response(
            Feedback {
                units: 1,
                sent_at: secs(sent),
                signal: Signal::Throttled {
                    retry_after: Some(Duration::from_secs(1)),
                },
            },
            secs(at),
        );
    };
    let pace = |c: &mut LimiterCore, at: f64| {
        let _ = c.follow_server(one_second(20), secs(at));
        c.rate()
    };
    let mut c = core(2);
    c.options.max_units_per_minute = 1e9;
    // A request sent before the short pace began (a start's burst) widens nothing.
    throttled(&mut c, 0.5, 0.9);
    assert!((pace(&mut c, 1.0) - 1500.0 * 0.96).abs() < 1e-9);
    throttled(&mut c, 0.9, 1.1);
    assert!((pace(&mut c, 1.2) - 1500.0 * 0.96).abs() < 1e-9);
    // One sent at the pace: a unit more a process, 1 − 2 × 2 / 50.
    throttled(&mut c, 1.05, 1.3);
    assert!((pace(&mut c, 1.4) - 1500.0 * 0.92).abs() < 1e-9);
    // The same window's overfill seen again: once a window.
    throttled(&mut c, 1.4, 1.9);
    assert!((pace(&mut c, 2.0) - 1500.0 * 0.92).abs() < 1e-9);
    throttled(&mut c, 2.1, 2.4);
    assert!((pace(&mut c, 2.5) - 1500.0 * 0.88).abs() < 1e-9);
    // Five minutes without a throttle at the pace: a unit narrower, and five more for the next.
    assert!((pace(&mut c, 302.3) - 1500.0 * 0.88).abs() < 1e-9);
    assert!((pace(&mut c, 302.4) - 1500.0 * 0.92).abs() < 1e-9);
    assert!((pace(&mut c, 602.3) - 1500.0 * 0.92).abs() < 1e-9);
    assert!((pace(&mut c, 602.4) - 1500.0 * 0.96).abs() < 1e-9);
    // Numbers gone stale hand the rate to the controller: its throttles widen nothing.
    answered(&mut c, 1, secs(604.0));
    assert!(!c.is_following_server(secs(604.0)));
    throttled(&mut c, 604.1, 604.2);
    assert!((pace(&mut c, 604.3) - 1500.0 * 0.96).abs() < 1e-9);
}

#[test]
fn a_short_window_that_refills_as_a_bucket_spends_its_room_above_half_its_size() {
    // Two processes at 20 units a second each (requests of 2) for two seconds: 23 units a
    // second each is the even pace (25 less 2 × 2 / 50).
    let feed = |remaining: u64| {
        let mut c = core(2);
        c.options.max_units_per_minute = 1e9;
        for tenth in 0..20 {
            let at = secs(1.0 + f64::from(tenth) * 0.1);
            let _ = c.follow_server(one_second(remaining), at);
            answered(&mut c, 2, at);
        }
        c
    };
    // A window holds 10 left once a second at that pace: the even pace alone.
    let c = feed(10);
    assert!((c.rate() - 23.0 * 60.0).abs() < 1e-9, "{}", c.rate());
    // 48 left through a whole second of it is a bucket's: (48 − 25) ÷ 2 more a second each.
    let mut c = feed(48);
    assert!((c.rate() - 34.5 * 60.0).abs() < 1e-9, "{}", c.rate());
    // Its level falling to 30: 2.5 more; to half its size or under: none.
    let _ = c.follow_server(one_second(30), secs(3.0));
    assert!((c.rate() - 25.5 * 60.0).abs() < 1e-9, "{}", c.rate());
    let _ = c.follow_server(one_second(25), secs(3.1));
    assert!((c.rate() - 23.0 * 60.0).abs() < 1e-9, "{}", c.rate());
}

#[test]
fn a_short_window_younger_than_the_limiter_spreads_what_is_left_until_it_is_a_window_old() {
    let mut c = core(2);
    c.options.max_units_per_minute = 1e9;
    let ten = |remaining| {
        ServerQuota::new(remaining, Duration::from_secs(1))
            .with_policy(500, Duration::from_secs(10))
    };
    // Half a second in, a start's burst has left 450 of 500. None of it leaves the window
    // before 10 s: what is left less both processes' largest request (1), this process's
    // half, over the 9.5 s to then, where the even pace is 249 each a window.
    let _ = c.follow_server(ten(450), secs(0.5));
    let first = (450.0 - 2.0) / 2.0 * 60.0 / 9.5;
    assert!((c.rate() - first).abs() < 1e-9, "{}", c.rate());
    // More left than the even pace would spend by then: the even pace.
    let _ = c.follow_server(ten(499), secs(8.0));
    assert!((c.rate() - 249.0 * 6.0).abs() < 1e-9, "{}", c.rate());
    // At 10 s the start's units leave: the even pace, whatever is left.
    let _ = c.follow_server(ten(2), secs(10.0));
    assert!((c.rate() - 249.0 * 6.0).abs() < 1e-9, "{}", c.rate());
}

#[test]
fn a_window_longer_than_ten_seconds_or_a_request_as_large_as_a_share_is_paced_by_remaining() {
    // 11 s: the plain rule, 30 units over half a second.
    let mut c = core(1);
    c.options.max_units_per_minute = 1e9;
    let q = ServerQuota::new(30, Duration::from_secs(1)).with_policy(550, Duration::from_secs(11));
    let _ = c.follow_server(q, secs(1.0));
    assert!((c.rate() - 3600.0).abs() < 1e-9, "{}", c.rate());
    // 10 s is short: 3,000 a minute (the limiter older than the window).
    let q = ServerQuota::new(30, Duration::from_secs(1)).with_policy(500, Duration::from_secs(10));
    let _ = c.follow_server(q, secs(11.0));
    assert!(
        (c.rate() - 3000.0 * (1.0 - 1.0 / 500.0)).abs() < 1e-9,
        "{}",
        c.rate()
    );
    // A quota of 10 a second shared by 2 with requests of 5: no margin is left, so the
    // plain rule again (4 units each over half a second).
    let mut c = core(2);
    c.options.max_units_per_minute = 1e9;
    answered(&mut c, 5, secs(0.5));
    let q = ServerQuota::new(8, Duration::from_secs(1)).with_policy(10, Duration::from_secs(1));
    let _ = c.follow_server(q, secs(1.0));
    assert!((c.rate() - 480.0).abs() < 1e-9, "{}", c.rate());
}

#[test]
fn the_rate_is_the_remaining_over_the_reset_shared_by_the_instances() {
    let table = [
        // (remaining, reset s, instances, units/min for this process)
        (30, 10, 1, 30.0 * 60.0 / 9.5), // half a second early
        (30, 10, 2, 30.0 * 60.0 / 9.5 / 2.0),
        (10, 1, 1, 10.0 * 60.0 / 0.5), // t = 1: over half a second
        (10, 0, 1, 1200.0),            // t = 0: at least half a second
        (1, 600, 2, 30.0),             // below the minimum share (30): the minimum
        (1000, 1, 1, 6000.0),          // above the maximum: the maximum
    ];
    for (remaining, reset, instances, expected) in table {
        let mut c = core(instances);
        let _ = c.follow_server(quota(remaining, reset), secs(1.0));
        assert!(
            (c.rate() - expected).abs() < 1e-9,
            "{remaining} over {reset} s for {instances}: {} ≠ {expected}",
            c.rate()
        );
        assert!(c.is_following_server(secs(1.0)));
    }
}

#[test]
fn nothing_left_holds_every_request_until_the_reset_then_the_policy_pace() {
    let mut c = core(2);
    let changes = c.follow_server(quota(0, 20), secs(5.0));
    assert_eq!(changes.paused_until, Some(secs(25.0)));
    assert_eq!(c.paused_until(secs(5.0)), Some(secs(25.0)));
    assert_eq!(c.rate(), 600.0, "1,200 a minute for the budget, 600 each");
    // MaxRetryAfter (5 min) caps a reset far away.
    let mut c = core(1);
    let _ = c.follow_server(quota(0, 3600), secs(0.0));
    assert_eq!(c.paused_until(secs(0.0)), Some(secs(300.0)));
}

/// A server that stops may announce its quota as 0 while stopped: that is no pace for
/// after the reset (it once held the rate at the minimum, and every request waiting behind
/// the stop was refused as too long a wait).
#[test]
fn a_policy_of_no_units_sets_no_pace_for_after_the_stop() {
    let mut c = core(1);
    let stopped =
        ServerQuota::new(0, Duration::from_secs(20)).with_policy(0, Duration::from_secs(60));
    let changes = c.follow_server(stopped, secs(5.0));
    assert_eq!(changes.paused_until, Some(secs(25.0)));
    assert_eq!(c.rate(), 600.0, "the rate before the stop, not the minimum");
    // Stale at the reset: nothing to hand over, the rate is left as it is.
    let changes = c.on_response(success(secs(4.0)), secs(26.0));
    assert!(changes.rate.is_none_or(|r| r.rate >= 600.0), "{changes:?}");
    assert!(c.rate() >= 600.0);
}

#[test]
fn while_the_numbers_are_fresh_successes_do_not_move_the_rate() {
    let mut c = core(1);
    let _ = c.follow_server(quota(5, 10), secs(0.0));
    let rate = c.rate();
    // Requests wait, so AIMD would climb after 10 s; it is not asked.
    for _ in 0..20 {
        let _ = c.acquire(1, secs(1.0));
    }
    for i in 0..5 {
        let changes = c.on_response(success(secs(1.0)), secs(9.0 + f64::from(i) * 0.1));
        assert!(changes.rate.is_none());
    }
    assert_eq!(c.rate(), rate);
}

#[test]
fn the_controller_takes_over_at_the_reset_from_the_policy_pace() {
    let mut c = core(1);
    let _ = c.follow_server(quota(100, 10), secs(0.0));
    assert!(c.is_following_server(secs(9.9)));
    assert!(!c.is_following_server(secs(10.0)), "stale at the reset");
    let changes = c.on_response(success(secs(9.0)), secs(10.5));
    let change = changes.rate.unwrap();
    assert_eq!(change.rate, 1200.0, "the policy's pace");
    assert_eq!(change.reason, RateChangeReason::Server);
    assert!(!c.is_following_server(secs(10.5)));
}

#[test]
fn the_controller_takes_over_after_ten_responses_without_numbers() {
    let mut c = core(1);
    let _ = c.follow_server(quota(100, 600), secs(0.0));
    for i in 0..9 {
        let _ = c.on_response(success(secs(0.0)), secs(1.0 + f64::from(i)));
        assert!(c.is_following_server(secs(1.0 + f64::from(i))));
    }
    let _ = c.on_response(success(secs(0.0)), secs(10.0));
    assert!(!c.is_following_server(secs(10.0)));
    // New numbers put the server back in charge.
    let _ = c.follow_server(quota(100, 600), secs(11.0));
    assert!(c.is_following_server(secs(11.0)));
}

#[test]
fn without_a_policy_the_rate_is_left_as_it_is_when_the_numbers_go_stale() {
    let mut c = core(1);
    let _ = c.follow_server(ServerQuota::new(50, Duration::from_secs(5)), secs(0.0));
    let rate = c.rate();
    let changes = c.on_response(success(secs(0.0)), secs(6.0));
    assert!(changes.rate.is_none());
    assert_eq!(c.rate(), rate);
}

#[test]
fn a_throttle_while_following_still_cuts_and_pauses() {
    let mut c = core(1);
    let _ = c.follow_server(quota(60, 10), secs(0.0));
    let rate = c.rate();
    let changes = c.on_response(
        Feedback {
            units: 1,
            sent_at: secs(0.5),
            signal: Signal::Throttled {
                retry_after: Some(Duration::from_secs(2)),
            },
        },
        secs(1.0),
    );
    assert_eq!(changes.rate.unwrap().rate, rate * 0.7, "AIMD's cut");
    assert_eq!(changes.paused_until, Some(secs(3.0)));
}

#[test]
fn the_bucket_never_holds_more_than_the_server_has_left() {
    let mut c = core(2); // a full bucket of 5 units at 300/min
    let _ = c.follow_server(quota(6, 1), secs(0.0));
    assert_eq!(c.rate(), 360.0, "6 units over half a second, for 2");
    assert_eq!(c.snapshot(secs(0.0)).available_units, 3.0, "half of 6");
    assert!(c.try_take(3, secs(0.0)).is_ok());
    assert!(c.try_take(1, secs(0.0)).is_err());
}

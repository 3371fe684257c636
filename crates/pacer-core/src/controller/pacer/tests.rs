//! The Pacer controller's rules, one test each.

// The pure contract: the state in, a rate out (the `Controller` side is tested through the
// limiter).
use super::{
    Duration, PacerController, PacerControllerOptions, RateController, RateControllerState,
};

const SEC: Duration = Duration::from_secs(1);

/// A state of one process with requests waiting and a demand that uses the rate.
fn busy(rate: f64) -> RateControllerState {
    let mut s = RateControllerState::new(rate, 10.0, 100_000.0);
    s.waited = true;
    s.queued_units = 50.0;
    s.measured_send_rate = Some(rate);
    s.since_last_increase = SEC;
    s
}

/// A throttle at `rate` after a minute in which the server accepted `accepted`.
fn throttle(c: &mut PacerController, rate: f64, accepted: f64, ra: u64) -> f64 {
    let mut s = busy(rate);
    s.accepted_per_minute = accepted;
    s.retry_after = Some(Duration::from_secs(ra));
    s.since_last_decrease = Duration::from_secs(120);
    c.on_throttled(&s)
}

/// Calls `on_success` once a second from `from` for `secs` seconds after the last cut,
/// applying each answer; returns the rate at the end.
fn run(c: &mut PacerController, mut s: RateControllerState, from: u64, secs: u64) -> f64 {
    for t in from..from + secs {
        s.since_last_decrease = Duration::from_secs(t);
        s.since_last_decrease_unpaused = Duration::from_secs(t);
        s.measured_send_rate = Some(s.rate);
        if let Some(r) = c.on_success(&s) {
            s.rate = r;
        }
    }
    s.rate
}

mod again;
mod first;
mod fixed;
mod probe;
mod success;
mod window;
mod young;

#[test]
fn the_estimate_is_the_units_accepted_in_the_last_minute() {
    let mut c = PacerController::default();
    throttle(&mut c, 2500.0, 1500.0, 1);
    assert_eq!(c.limit_estimate(1), Some(1500.0));
    // Nothing accepted yet: the lower of the rate and the measured send rate.
    let mut c = PacerController::default();
    let mut s = busy(900.0);
    s.measured_send_rate = Some(700.0);
    let _ = c.on_throttled(&s);
    assert_eq!(c.limit_estimate(1), Some(700.0));
}

#[test]
fn a_cut_is_shallow_near_the_estimate_or_after_a_long_pause_and_deep_far_above_it() {
    let table = [
        // (rate, accepted, Retry-After s, expected cut)
        (1050.0, 1000.0, 1, 950.0),  // near: 5 % under the estimate
        (1000.0, 1100.0, 1, 950.0),  // under the estimate: 5 % under the rate
        (2000.0, 1000.0, 10, 950.0), // a long pause: 5 % under the estimate
        (2000.0, 1000.0, 1, 950.0),  // far: 0.7 × 2,000 = 1,400, but 950 is lower
        (1200.0, 1000.0, 1, 840.0),  // far: 0.7 × 1,200 = 840, below 950
    ];
    for (rate, accepted, ra, expected) in table {
        let mut c = PacerController::default();
        let cut = throttle(&mut c, rate, accepted, ra);
        assert!(
            (cut - expected).abs() < 1e-9,
            "{rate} / {accepted} / {ra} s: {cut}"
        );
    }
}

#[test]
fn a_second_throttle_soon_after_a_cut_when_the_budget_grew_under_the_limit_cuts_deep() {
    // One instance under the limit for 5 minutes, then a second joins (scale-out): the first
    // throttle at 5:44 cuts shallow; another 7 s later says the window still holds the single
    // instance's slower units, and the cut is AIMD's. Without the join, or 12 s later, shallow.
    let second = |join: bool, after: u64| {
        let mut c = PacerController::default();
        let mut s = busy(3000.0);
        s.accepted_per_minute = 2000.0;
        s.since_last_decrease = Duration::from_secs(299);
        let _ = c.on_success(&s);
        s.instance_count = if join { 2 } else { 1 };
        s.rate = 1500.0;
        s.since_last_decrease = Duration::from_secs(300);
        let _ = c.on_success(&s);
        s.accepted_per_minute = 1600.0;
        s.retry_after = Some(SEC);
        s.since_last_decrease = Duration::from_secs(344);
        assert!(
            (c.on_throttled(&s) - 1425.0).abs() < 1e-9,
            "the first: shallow"
        );
        s.rate = 1450.0;
        s.accepted_per_minute = 1500.0;
        s.since_last_decrease = Duration::from_secs(after);
        c.on_throttled(&s)
    };
    assert!((second(true, 7) - 1015.0).abs() < 1e-9, "0.7 × 1,450");
    assert!(
        (second(false, 7) - 1377.5).abs() < 1e-9,
        "5 % under the rate"
    );
    assert!(
        (second(true, 12) - 1377.5).abs() < 1e-9,
        "5 % under the rate"
    );
}

#[test]
fn after_a_cut_it_climbs_back_to_the_hold_in_a_line_over_the_recovery_time() {
    let mut c = PacerController::default();
    let cut = throttle(&mut c, 1200.0, 1000.0, 1);
    assert_eq!(cut, 840.0);
    let hold = 1000.0 * 0.985;
    for (t, expected) in [(15, 840.0 + (hold - 840.0) / 2.0), (30, hold), (45, hold)] {
        let mut s = busy(cut);
        s.since_last_decrease_unpaused = Duration::from_secs(t);
        let got = c.on_success(&s).unwrap();
        assert!((got - expected).abs() < 1e-9, "at {t} s: {got}");
    }
}

#[test]
fn a_fall_within_a_lapses_window_remembers_the_estimate_the_lapse_set_aside() {
    let mut c = PacerController::default();
    throttle(&mut c, 1050.0, 1000.0, 1);
    // A long Retry-After at the hold: the estimate falls to our hold's count, 1,000 set aside.
    throttle(&mut c, 985.0, 980.0, 30);
    assert_eq!(c.limit_estimate(1), Some(980.0));
    // The quota was cut: 62 s later (within a window of the pause's end) the pause's hole
    // comes round and the window fills at half the units.
    let mut s = busy(965.0);
    s.accepted_per_minute = 490.0;
    s.retry_after = Some(Duration::from_secs(28));
    s.since_last_decrease = Duration::from_secs(62);
    let cut = c.on_throttled(&s);
    assert_eq!(c.limit_estimate(1), Some(490.0));
    assert_eq!(c.ceiling.map(|c| (c.limit, c.firm)), Some((1000.0, true)));
    // When the quota comes back, the probe back takes the estimate before the lapse again.
    run(&mut c, busy(cut), 1, 200);
    assert_eq!(c.limit_estimate(1), Some(1000.0));
}

#[test]
fn a_long_retry_after_at_the_hold_lowers_the_estimate_until_a_window_after_the_pause() {
    // A neighbour comes while we hold under 1,000: the window held more than the limit by 30 s
    // of units, and what it accepted from us was our hold.
    let lapse = |c: &mut PacerController| {
        throttle(c, 1050.0, 1000.0, 1);
        let cut = throttle(c, 985.0, 980.0, 30);
        assert_eq!(c.limit_estimate(1), Some(980.0));
        cut
    };
    let mut c = PacerController::default();
    let cut = lapse(&mut c);
    // The pause ends 30 s after the cut; until a window after that, the hold is under 980.
    assert_eq!(run(&mut c, busy(cut), 30, 60), 980.0 * 0.985);
    assert_eq!(c.limit_estimate(1), Some(980.0));
    // A window of units after the pause and no throttle: the neighbour left, 1,000 again.
    assert_eq!(run(&mut c, busy(980.0 * 0.985), 90, 1), 985.0);
    assert_eq!(c.limit_estimate(1), Some(1000.0));
    // A throttle within that window: the limit stayed down, and the new estimate stays.
    let mut c = PacerController::default();
    lapse(&mut c);
    throttle(&mut c, 965.0, 950.0, 1);
    run(&mut c, busy(902.5), 1, 100);
    assert_eq!(c.limit_estimate(1), Some(950.0));
    // A short Retry-After is our units at the limit: nothing is set aside.
    let mut c = PacerController::default();
    throttle(&mut c, 1050.0, 1000.0, 1);
    let cut = throttle(&mut c, 985.0, 980.0, 1);
    run(&mut c, busy(cut), 1, 100);
    assert_eq!(c.limit_estimate(1), Some(980.0));
}

#[test]
fn a_level_only_demand_reached_is_not_kept_as_a_limit() {
    let mut c = PacerController::default();
    // The first throttle meets us below our rate, the queue empty: our demand (800) met a
    // limit, not our rate.
    let mut s = busy(1200.0);
    s.queued_units = 0.0;
    s.measured_send_rate = Some(800.0);
    s.accepted_per_minute = 800.0;
    let _ = c.on_throttled(&s);
    assert!(!c.firm);
    assert_eq!(c.probe_after.as_secs(), 40, "look again soon");
    // Then the limit falls; probing back reaches 800 without a throttle.
    let _ = throttle(&mut c, 790.0, 400.0, 20);
    let mut s = busy(394.0);
    s.since_last_decrease = Duration::from_secs(1);
    let _ = c.on_success(&s);
    s.since_last_decrease = Duration::from_secs(72);
    assert_eq!(c.on_success(&s), Some(788.0));
    assert_eq!(c.limit_estimate(1), None, "the limit above 800 is unknown");
}

#[test]
fn a_throttle_below_what_the_server_accepted_without_one_is_measured_from_that() {
    // Five quiet minutes at our demand: the server accepted 2,000 in a minute, no throttle.
    let quiet = |c: &mut PacerController| {
        let mut s = busy(2500.0);
        s.accepted_per_minute = 2000.0;
        s.since_last_decrease = Duration::from_secs(300);
        let _ = c.on_success(&s);
    };
    // Then a throttle at 1,800 with nobody waiting, in a burst of demand (sent faster than
    // the window's average).
    let met = |c: &mut PacerController| {
        let mut s = busy(2500.0);
        s.waited = false;
        s.queued_units = 0.0;
        s.measured_send_rate = Some(2200.0);
        s.accepted_per_minute = 1800.0;
        s.retry_after = Some(Duration::from_secs(15));
        s.since_last_decrease = Duration::from_secs(300);
        let _ = c.on_throttled(&s);
    };
    let mut c = PacerController::default();
    quiet(&mut c);
    met(&mut c);
    assert!(
        !c.firm,
        "below the 2,000 accepted before: the limit came down to our demand"
    );
    assert!(c.ceiling.is_none(), "1,800 is no fall from 2,000");
    // Requests wait and the window holds 1,500: a fifth below the 2,000, if not the 1,800.
    throttle(&mut c, 1750.0, 1500.0, 1);
    assert_eq!(c.limit_estimate(1), Some(1500.0));
    let ceiling = c.ceiling.expect("the limit fell");
    assert_eq!(ceiling.limit, 2000.0);
    assert!(!ceiling.firm, "only our demand reached it");
    assert_eq!(c.probe_after.as_secs(), 40);
    // Without the quiet minutes the burst counts as filling the window, and 1,500 is no fall
    // from 1,800.
    let mut c = PacerController::default();
    met(&mut c);
    assert!(c.firm);
    throttle(&mut c, 1750.0, 1500.0, 1);
    assert!(c.ceiling.is_none());
    assert_eq!(c.limit_estimate(1), Some(1500.0));
}

#[test]
fn it_never_climbs_without_waiting_demand_that_uses_the_rate() {
    let mut c = PacerController::default();
    let mut s = busy(1000.0);
    s.accepted_per_minute = 1000.0;
    s.since_last_decrease = Duration::from_secs(300);
    assert!(c.on_success(&s).is_some(), "the control case climbs");
    let mut idle = s;
    idle.waited = false;
    idle.queued_units = 0.0;
    assert_eq!(c.on_success(&idle), None, "nobody waits");
    let mut unused = s;
    unused.measured_send_rate = Some(700.0);
    assert_eq!(c.on_success(&unused), None, "70 % of the rate used");
    let mut soon = s;
    soon.since_last_increase = Duration::from_millis(999);
    assert_eq!(
        c.on_success(&soon),
        None,
        "within a second of the last change"
    );
}

#[test]
fn before_any_throttle_it_grows_by_a_quarter_a_second_but_not_past_lead_times_accepted() {
    let mut c = PacerController::default();
    let mut s = busy(1000.0);
    s.since_last_decrease = Duration::from_secs(300);
    s.accepted_per_minute = 2000.0;
    assert_eq!(c.on_success(&s), Some(1250.0));
    s.accepted_per_minute = 700.0;
    assert_eq!(c.on_success(&s), None, "1.25 × 700 is below the rate");
    s.accepted_per_minute = 900.0;
    assert_eq!(c.on_success(&s), Some(1125.0), "1.25 × 900");
    // In the first minute, the units since the start count as a minute's worth.
    s.since_last_decrease = Duration::from_secs(20);
    s.accepted_per_minute = 400.0; // 1,200 a minute
    assert_eq!(c.on_success(&s), Some(1250.0));
}

#[test]
fn a_stop_longer_than_the_window_keeps_the_estimate() {
    // A first throttle that is a 120 s stop, demand-bound at 2,000 of a rate of 2,500: the
    // 2,000 accepted are not the limit. The rate stays, and nothing is estimated.
    let mut c = PacerController::default();
    let mut s = busy(2500.0);
    s.accepted_per_minute = 2000.0;
    s.retry_after = Some(Duration::from_secs(120));
    assert_eq!(c.on_throttled(&s), 2500.0);
    assert_eq!(c.limit_estimate(1), None);
    // With an estimate, it comes back at the hold (or stays lower) and keeps the estimate.
    throttle(&mut c, 1050.0, 1000.0, 1);
    s.accepted_per_minute = 400.0;
    assert_eq!(c.on_throttled(&s), 985.0);
    s.rate = 900.0;
    assert_eq!(c.on_throttled(&s), 900.0);
    assert_eq!(c.limit_estimate(1), Some(1000.0));
    // A Retry-After of the window or less is the limit speaking: the estimate moves.
    s.retry_after = Some(Duration::from_secs(60));
    let _ = c.on_throttled(&s);
    assert_eq!(c.limit_estimate(1), Some(400.0));
}

#[test]
fn the_fixed_timings_follow_the_time_scale_not_the_quota_window() {
    // The same story on a clock 10 times faster (and a 6 s window, as a simulator at 10× has):
    // every timing is a tenth, so the rates match at the matching times.
    for (window, scale) in [(60u64, 1.0), (6, 0.1)] {
        let w = Duration::from_secs(window);
        let at = |secs: f64| Duration::from_secs_f64(secs * scale);
        let options = PacerControllerOptions {
            probe_after: at(120.0),
            max_probe_after: at(900.0),
            recovery_probe_after: at(40.0),
            recovery_time: at(30.0),
            ..PacerControllerOptions::default()
        }
        .with_time_scale(1.0 / scale);
        let mut c = PacerController::new(options).unwrap();
        let mut s = busy(1050.0);
        s.quota_window = w;
        s.accepted_per_minute = 1000.0;
        s.since_last_decrease = at(120.0);
        s.since_last_increase = at(1.0);
        let _ = c.on_throttled(&s);
        // Half a second (scaled) after the last change: too soon.
        s.rate = 985.0;
        s.since_last_increase = at(0.5);
        s.since_last_decrease = at(10.0);
        assert_eq!(c.on_success(&s), None, "{window} s: too soon");
        s.since_last_increase = at(1.0);
        assert_eq!(c.on_success(&s), None, "{window} s: at the hold");
        // 2 min of hold, then a probe 30 s on: 6 % above the hold (two doublings of 15 s).
        s.since_last_decrease = at(10.0 + 120.0 + 30.0);
        let got = c.on_success(&s).unwrap();
        assert!((got / 985.0 - 1.06).abs() < 1e-9, "{window} s: {got}");
        // A Retry-After of 5 s (scaled) is long: a shallow cut to the estimate.
        let mut t = busy(2000.0);
        t.quota_window = w;
        t.accepted_per_minute = 1000.0;
        t.retry_after = Some(at(5.0));
        // A window old: the Retry-After says nothing of a shorter window.
        t.since_last_decrease = w;
        let mut fresh = PacerController::new(options).unwrap();
        assert_eq!(fresh.on_throttled(&t), 950.0, "{window} s: a long pause");
    }
    // On the real clock a short window changes none of them: a Retry-After of 2 s is short in a
    // 10 s window too (a deep cut, × 0.7), and the climb waits a whole second.
    let mut t = busy(2000.0);
    t.quota_window = Duration::from_secs(10);
    t.accepted_per_minute = 1000.0;
    t.retry_after = Some(Duration::from_secs(2));
    t.since_last_decrease = Duration::from_secs(10);
    let mut c = PacerController::default();
    assert_eq!(c.on_throttled(&t), 950.0_f64.min(2000.0 * 0.7));
    let mut s = busy(950.0);
    s.quota_window = Duration::from_secs(10);
    s.accepted_per_minute = 950.0;
    s.since_last_increase = Duration::from_millis(500);
    assert_eq!(c.on_success(&s), None, "half a second: too soon");
}

#[test]
fn a_time_scale_must_be_finite_and_above_zero() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = PacerControllerOptions::default()
            .with_time_scale(bad)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("TimeScale"), "{bad}: {e}");
    }
    assert_eq!(PacerControllerOptions::default().time_scale(), 1.0);
}

#[test]
fn the_estimate_is_kept_for_the_whole_budget_so_a_new_instance_count_rescales_it() {
    let mut c = PacerController::default();
    let mut s = busy(800.0);
    s.instance_count = 2;
    s.accepted_per_minute = 750.0;
    let _ = c.on_throttled(&s);
    assert_eq!(c.limit_estimate(2), Some(750.0));
    assert_eq!(c.limit_estimate(3), Some(500.0));
}

#[test]
fn invalid_options_are_named() {
    let e = PacerController::new(PacerControllerOptions {
        hold_margin: 0.0,
        lead: 1.0,
        max_probe_after: Duration::from_secs(60),
        recovery_time: Duration::ZERO,
        ..PacerControllerOptions::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "HoldMargin = 0: must be greater than 0 and less than 1; Lead = 1: must be greater \
         than 1; MaxProbeAfter = 60s: must be at least ProbeAfter (120s); RecoveryTime = 0s: \
         must be greater than 0"
    );
}

#[test]
fn a_throttle_without_retry_after_in_the_first_window_sends_as_little_as_it_may() {
    // 44 s after the start, the server's window is full of the 1,500 units we sent since: none
    // leaves before the limiter is a minute old, and the server says nothing of when.
    let young = |ra: Option<u64>, age: u64| {
        let mut c = PacerController::default();
        let mut s = busy(2500.0);
        s.accepted_per_minute = 1500.0;
        s.retry_after = ra.map(Duration::from_secs);
        s.since_last_decrease = Duration::from_secs(age);
        let cut = c.on_throttled(&s);
        (c, cut)
    };
    let (mut c, cut) = young(None, 44);
    assert_eq!(cut, 10.0, "the minimum rate");
    assert_eq!(c.limit_estimate(1), Some(1500.0), "the estimate stands");
    // When the first units leave, it climbs back in a line to the hold over `RecoveryTime`.
    let mut s = busy(cut);
    s.accepted_per_minute = 1500.0;
    assert!(run(&mut c, s, 1, 15) < 1500.0 * 0.985 * 0.6);
    assert_eq!(run(&mut c, s, 1, 30), 1500.0 * 0.985);
    // With a Retry-After the server says when; a window old, units leave already: the usual cut.
    assert_eq!(young(Some(16), 44).1, 1425.0);
    assert_eq!(young(None, 60).1, 1425.0);
}

/// nginx's `limit_req`: 3 s after the start, a 429 with no Retry-After; the server accepted
/// 75 units since the start (its burst and its pace), 1,500 "a minute" of the window so far.
/// Successes come again a few seconds later, long before our first units could leave a window
/// of a minute: the server counts over a shorter window, and the estimate becomes the pace
/// over the window, scaled: 1,500 × 60 s / 3 s × 0.6 = 18,000, at most the 4,000 sent.
#[test]
fn successes_soon_after_a_young_throttle_scale_its_count_to_the_window() {
    let young = |sent: f64| {
        let mut c = PacerController::default();
        let mut s = busy(sent);
        s.accepted_per_minute = 1500.0;
        s.since_last_decrease = Duration::from_secs(3);
        let cut = c.on_throttled(&s);
        assert_eq!(cut, 10.0, "the minimum rate");
        assert_eq!(c.limit_estimate(1), Some(1500.0));
        (c, busy(cut))
    };
    // A response to a request sent before the cut (1 s after it) says nothing.
    let (mut c, mut s) = young(4000.0);
    s.since_last_decrease = SEC;
    let _ = c.on_success(&s);
    assert_eq!(c.limit_estimate(1), Some(1500.0));
    // 5 s after the cut, 8 s old: the pace over the window, at most the send rate.
    s.since_last_decrease = Duration::from_secs(5);
    let _ = c.on_success(&s);
    assert_eq!(c.limit_estimate(1), Some(4000.0));
    // The climb goes to the new hold.
    s.accepted_per_minute = 1500.0;
    assert_eq!(run(&mut c, s, 5, 40), 4000.0 * 0.985);
    // Sent faster, the scaled count itself.
    let (mut c, mut s) = young(50_000.0);
    s.since_last_decrease = Duration::from_secs(5);
    let _ = c.on_success(&s);
    assert_eq!(c.limit_estimate(1), Some(18_000.0));
}

/// A server that counts the requests it refuses (HAProxy's stick tables) throttles again a few
/// seconds after a young throttle, while we send at the minimum: the pace a later success
/// reads is capped by what went out before the first throttle, not by that minimum.
#[test]
fn a_second_young_throttle_keeps_the_first_one_s_send_rate() {
    let mut c = PacerController::default();
    let mut s = busy(1000.0);
    s.accepted_per_minute = 50.0;
    s.since_last_decrease = Duration::from_secs_f64(2.5);
    let cut = c.on_throttled(&s);
    assert_eq!(cut, 10.0, "the minimum rate");
    let mut s = busy(cut);
    s.accepted_per_minute = 50.0;
    s.since_last_decrease = Duration::from_secs(5);
    let _ = c.on_throttled(&s);
    let mut s = busy(cut);
    s.since_last_decrease = Duration::from_secs(5);
    let _ = c.on_success(&s);
    // 50 units over the 7.5 s since the start, scaled to the window: 0.6 × 50 × 60 / 7.5 = 240,
    // under the 1,000 sent before the first throttle (the second's 10 would have capped it).
    let estimate = c.limit_estimate(1).unwrap();
    assert!((estimate - 240.0).abs() < 1e-9, "{estimate}");
}

/// A sliding window of a minute refuses everything after a young throttle until our first
/// units leave it, a minute after the start: the first success comes a window old, and the
/// count was a window's quota after all. A throttle with a Retry-After is not young: a process
/// that joins a fleet late is throttled young too, by a window full of the others' units, and
/// its count over its age is its share.
#[test]
fn successes_only_a_window_after_the_start_keep_a_young_count() {
    for ra in [None, Some(Duration::from_secs(16))] {
        let mut c = PacerController::default();
        let mut s = busy(2500.0);
        s.accepted_per_minute = 1500.0;
        s.retry_after = ra;
        s.since_last_decrease = Duration::from_secs(44);
        let cut = c.on_throttled(&s);
        let mut s = busy(cut);
        s.since_last_decrease = Duration::from_secs(16);
        let _ = c.on_success(&s);
        assert_eq!(c.limit_estimate(1), Some(1500.0), "{ra:?}");
        // Nor does a later success change it: the young count is forgotten a window old.
        s.since_last_decrease = Duration::from_secs(17);
        let _ = c.on_success(&s);
        assert_eq!(c.limit_estimate(1), Some(1500.0), "{ra:?}");
    }
}

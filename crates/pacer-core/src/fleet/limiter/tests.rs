//! The fleet's one limiter: cuts, stops, counts, ticks, and its state through the store.

use super::*;

fn at(s: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_secs(s)
}

fn options() -> LimiterOptions {
    LimiterOptions {
        initial_units_per_minute: Some(2_000.0),
        max_units_per_minute: 10_000.0,
        ..LimiterOptions::default()
    }
}

#[test]
fn a_throttle_cuts_once_per_cooldown_and_never_for_a_request_sent_before_the_cut() {
    let o = options();
    let mut f = FleetLimiter::new(&o, at(0));
    f.count(1_500.0, &o, at(60));
    let busy = Totals {
        measured: 2_000.0,
        queued: 10.0,
        waited: true,
        members: 8,
        ..Totals::default()
    };
    f.tick(&o, &busy, Duration::from_secs(3), at(60));
    assert!(f.throttle(&o, at(60), None, BarePause::Take, at(61)));
    let cut = f.rate();
    assert!(cut < 2_000.0, "{cut}");
    // Seven more members saw the same window full: sent before the cut, they cut nothing.
    for _ in 0..7 {
        f.throttle(&o, at(60), None, BarePause::Take, at(61));
    }
    assert_eq!(f.rate(), cut);
    assert_eq!(f.decreases(), 1);
    // Within the cooldown, not even a request sent after it.
    f.throttle(&o, at(62), None, BarePause::Take, at(63));
    assert_eq!(f.decreases(), 1);
}

/// A window of a second, with the Pacer controller.
fn second() -> LimiterOptions {
    LimiterOptions {
        quota_window: Duration::from_secs(1),
        ..options()
    }
}

fn ms(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

#[test]
fn units_counted_at_a_commit_are_spread_over_the_span_they_were_accepted_in() {
    let o = second();
    let mut f = FleetLimiter::new(&o, ms(0));
    // 200 units a second (12,000 a minute), reported every 250 ms ...
    for t in (250..=9_000).step_by(250) {
        f.count(50.0, &o, ms(t));
    }
    // ... then one commit late and one early: the window of the second before the throttle
    // holds five commits, 250 units counted as lumps at their commits.
    for (t, units) in [
        (9_300, 60.0),
        (9_500, 40.0),
        (9_750, 50.0),
        (10_000, 50.0),
        (10_250, 50.0),
    ] {
        f.count(units, &o, ms(t));
    }
    f.throttle(
        &o,
        ms(10_250),
        Some(Duration::from_secs(1)),
        BarePause::Take,
        ms(10_260),
    );
    let (estimate, _) = f.estimate().expect("an estimate");
    assert!(
        (estimate - 12_000.0).abs() <= 12_000.0 * 0.03,
        "{estimate}: the lumps would say 15,000"
    );
    // A window of a minute counts a period's units at once, as before: one step of its
    // meter is a second.
    let o = options();
    let mut f = FleetLimiter::new(&o, ms(0));
    f.count(50.0, &o, ms(250));
    f.count(50.0, &o, ms(500));
    let mut lump = FleetLimiter::new(&o, ms(0));
    lump.count(100.0, &o, ms(500));
    f.throttle(&o, ms(500), None, BarePause::Take, ms(600));
    lump.throttle(&o, ms(500), None, BarePause::Take, ms(600));
    assert_eq!(f.estimate(), lump.estimate());
}

#[test]
fn a_cut_that_fell_short_in_a_short_window_cuts_again_as_one_process_would() {
    let o = second();
    let mut f = FleetLimiter::new(&o, ms(0));
    let mut alone = crate::LimiterCore::new(o.clone(), ms(0)).expect("valid options");
    for t in (250..=10_000).step_by(250) {
        f.count(50.0, &o, ms(t));
        for _ in 0..50 {
            let _ = alone.on_response(
                Feedback {
                    units: 1,
                    sent_at: ms(t),
                    signal: Signal::Success,
                },
                ms(t),
            );
        }
    }
    let ra = Some(Duration::from_secs(1));
    let throttled = |sent: u64| Feedback {
        units: 1,
        sent_at: ms(sent),
        signal: Signal::Throttled { retry_after: ra },
    };
    // The first throttle cuts; one for a request sent before that cut does not.
    assert!(f.throttle(&o, ms(9_990), ra, BarePause::Take, ms(10_000)));
    assert_eq!(f.decreases(), 1);
    f.throttle(&o, ms(9_995), ra, BarePause::Take, ms(10_500));
    assert_eq!(f.decreases(), 1);
    // Sent a window after the cut and refused still, within `DecreaseCooldown` (5 s): the
    // cut fell short, and the fleet cuts again, as the limiter of one process does.
    f.throttle(&o, ms(11_100), ra, BarePause::Take, ms(11_200));
    assert_eq!(f.decreases(), 2);
    let _ = alone.on_response(throttled(9_990), ms(10_000));
    let _ = alone.on_response(throttled(9_995), ms(10_500));
    let _ = alone.on_response(throttled(11_100), ms(11_200));
    assert_eq!(alone.snapshot(ms(11_200)).decreases, 2);
}

/// What the store does to the state between two members: written, read back, adopted.
fn through_the_store(f: &FleetLimiter, o: &LimiterOptions, now: Timestamp) -> FleetLimiter {
    let stored = serde_json::to_vec(f).expect("a fleet's state serializes");
    let mut back: FleetLimiter = serde_json::from_slice(&stored).expect("and reads back");
    back.adopt(o, now);
    back
}

#[test]
fn a_window_learnt_from_a_short_retry_after_is_kept_with_the_fleet_s_state() {
    // Nothing configured: `QuotaWindow` a minute. A throttle at 8 s asking for 3 s says the
    // server counts over 11 s at most, and the controller counts over that from then on,
    // whichever member reads the state next.
    let o = LimiterOptions::default();
    let mut f = FleetLimiter::new(&o, ms(0));
    for t in (250..=8_000).step_by(250) {
        f.count(20.0, &o, ms(t));
    }
    f.throttle(
        &o,
        ms(8_000),
        Some(Duration::from_secs(3)),
        BarePause::Take,
        ms(8_000),
    );
    assert_eq!(f.counting_window(&o), Duration::from_secs(11));
    let back = through_the_store(&f, &o, ms(8_100));
    assert_eq!(back.counting_window(&o), Duration::from_secs(11));
}

#[test]
fn a_state_written_without_the_newer_fields_reads_as_before() {
    // A member of an older version wrote the state (a rolling deploy): what it did not
    // know is read as none, and the next count goes in at once, as all did then.
    let o = second();
    let mut f = FleetLimiter::new(&o, ms(0));
    f.count(50.0, &o, ms(250));
    let mut value = serde_json::to_value(&f).expect("serializes");
    let fields = value.as_object_mut().expect("an object");
    for key in ["counted_at", "counted_since_tick"] {
        assert!(fields.remove(key).is_some(), "{key}");
    }
    let controller = fields["controller"]["Pacer"]
        .as_object_mut()
        .expect("the Pacer controller's state");
    for key in ["learnt", "learnt_before", "boundaries"] {
        assert!(controller.remove(key).is_some(), "{key}");
    }
    let mut back: FleetLimiter = serde_json::from_value(value).expect("reads");
    back.adopt(&o, ms(300));
    assert_eq!(back.counting_window(&o), Duration::from_secs(1));
    back.count(50.0, &o, ms(500));
    assert_eq!(back.rate(), f.rate());
}

#[test]
fn a_tick_with_no_unit_accepted_is_no_success() {
    // A throttle without `Retry-After` at 10 s, a minute's window: if a success comes 2 s
    // after the cut, the server's window is shorter than a minute (its first units have
    // left it). Ticks while the server still refuses everything bring no success: the window
    // is learnt at the first tick after units were accepted again.
    let o = LimiterOptions::default();
    let mut f = FleetLimiter::new(&o, ms(0));
    let busy = Totals {
        measured: 3_000.0,
        queued: 50.0,
        waited: true,
        members: 2,
        ..Totals::default()
    };
    for t in (250..=10_000).step_by(250) {
        f.count(20.0, &o, ms(t));
        f.tick(&o, &busy, Duration::from_secs(3), ms(t));
    }
    f.throttle(&o, ms(10_000), None, BarePause::Take, ms(10_000));
    for t in (12_250..=14_000).step_by(250) {
        f.count(0.0, &o, ms(t));
        f.tick(&o, &busy, Duration::from_secs(3), ms(t));
        assert_eq!(f.counting_window(&o), Duration::from_secs(60), "at {t} ms");
    }
    f.count(5.0, &o, ms(14_250));
    f.tick(&o, &busy, Duration::from_secs(3), ms(14_250));
    assert_eq!(f.counting_window(&o), Duration::from_millis(14_250));
    let back = through_the_store(&f, &o, ms(14_300));
    assert_eq!(back.counting_window(&o), Duration::from_millis(14_250));
}

#[test]
fn a_throttle_without_retry_after_stops_the_fleet_for_pause_without_retry_after() {
    let o = options();
    let mut f = FleetLimiter::new(&o, at(0));
    assert!(f.throttle(&o, at(10), None, BarePause::Take, at(10)));
    assert_eq!(f.pause_until(), at(11), "the default second");
    // Another refusal of the same burst, within the cooldown: the stop is longer, but that
    // is no news to publish at once.
    assert!(!f.throttle(
        &o,
        at(10),
        None,
        BarePause::Take,
        at(10) + Duration::from_millis(500)
    ));
    assert_eq!(f.pause_until(), at(11) + Duration::from_millis(500));
    // A stop that begins is.
    assert!(f.throttle(&o, at(12), None, BarePause::Take, at(20)));
    assert_eq!(f.pause_until(), at(21));
    // Fields that said when the quota is back: no pause of this kind.
    let mut f = FleetLimiter::new(&o, at(0));
    f.throttle(&o, at(10), None, BarePause::ServerSaidWhen, at(10));
    assert_eq!(
        f.pause_until(),
        at(0),
        "the server's own stop holds the endpoint"
    );
    let o = LimiterOptions {
        pause_without_retry_after: Duration::ZERO,
        ..options()
    };
    let mut f = FleetLimiter::new(&o, at(0));
    f.throttle(&o, at(10), None, BarePause::Take, at(10));
    assert_eq!(f.pause_until(), at(0), "none at 0");
}

#[test]
fn a_retry_after_stops_the_fleet_and_survives_the_store() {
    let o = options();
    let mut f = FleetLimiter::new(&o, at(0));
    f.throttle(
        &o,
        at(10),
        Some(Duration::from_secs(7)),
        BarePause::Take,
        at(10),
    );
    assert_eq!(f.pause_until(), at(17));
    let back = through_the_store(&f, &o, at(11));
    assert_eq!(back.pause_until(), at(17));
    assert_eq!(back.rate(), f.rate());
    assert_eq!(back.decreases(), 1);
    assert_eq!(
        back.estimate(),
        f.estimate(),
        "the controller's memory comes back whole"
    );
}

#[test]
fn an_unlimited_fleet_starts_at_the_members_measured_rate() {
    let o = LimiterOptions::default();
    let mut f = FleetLimiter::new(&o, at(0));
    assert!(!f.is_limiting());
    let totals = Totals {
        measured: 3_300.0,
        members: 4,
        ..Totals::default()
    };
    let _ = &totals.demands;
    f.tick(&o, &totals, Duration::from_secs(3), at(30));
    assert!(
        !f.is_limiting(),
        "a tick without a throttle leaves it unlimited"
    );
    f.throttle(&o, at(30), None, BarePause::Take, at(31));
    assert!(f.is_limiting());
    assert!(f.rate() <= 3_300.0 && f.rate() >= 60.0, "{}", f.rate());
}

//! The defaults' unlimited start: nothing is held back until the first throttle signal, then the
//! rate starts from the measured send rate (`InitialUnitsPerMinute` unset).

use super::*;

/// 100 units a second for `secs` seconds, each answered at once with `signal`.
fn send(core: &mut LimiterCore, from_ms: u64, secs: u64) -> Timestamp {
    let mut now = ms(from_ms);
    for i in 0..secs * 100 {
        now = ms(from_ms + i * 10);
        assert_eq!(core.acquire(1, now), Ok(Acquired::Now), "request {i}");
        let _ = core.on_response(success(now), now);
    }
    now
}

/// The defaults with AIMD, whose cut (× 0.7) is easy to check.
fn aimd() -> LimiterOptions {
    LimiterOptions {
        controller: ControllerKind::Aimd,
        ..LimiterOptions::default()
    }
}

#[test]
fn the_defaults_hold_nothing_back_before_a_throttle() {
    let mut c = core(LimiterOptions::default());
    assert!(!c.is_limiting());
    assert_eq!(c.rate(), LimiterOptions::DEFAULT_MAX_UNITS_PER_MINUTE);
    // 50,000 units in the same millisecond, then 6,000 a minute for 10 s: all at once.
    for _ in 0..50_000 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    let now = send(&mut c, 1, 10);
    assert!(!c.is_limiting());
    assert_eq!(c.queue_len(), 0);
    let stats = c.snapshot(now).stats;
    assert_eq!(stats.rejected_wait + stats.rejected_queue_full, 0);
    assert_eq!(c.rate(), LimiterOptions::DEFAULT_MAX_UNITS_PER_MINUTE);
}

#[test]
fn the_first_throttle_starts_at_the_measured_send_rate_cut_by_the_controller() {
    for (kind, factor) in [(ControllerKind::Aimd, 0.7), (ControllerKind::Cubic, 0.7)] {
        let mut c = core(LimiterOptions {
            controller: kind,
            ..LimiterOptions::default()
        });
        // 100 units a second: 6,000 a minute measured.
        let now = send(&mut c, 0, 5);
        let measured = c.snapshot(now).measured_send_rate.unwrap();
        assert!((measured - 6000.0).abs() < 1.0, "{measured}");
        let changes = c.on_response(throttled(now, None), now);
        assert!(c.is_limiting());
        assert!(
            (c.rate() - measured * factor).abs() < 1e-6,
            "{kind}: {} from {measured}",
            c.rate()
        );
        // One change, from the maximum it ran at unlimited to the cut, that says the start
        // ended (the rate gauge counts the endpoint from here).
        let change = changes.rate.unwrap();
        assert_eq!(change.reason, RateChangeReason::Throttled);
        assert_eq!(
            change.previous,
            LimiterOptions::default().max_units_per_minute
        );
        assert!(changes.started_limiting);
    }
}

#[test]
fn the_pacer_controller_starts_at_or_below_the_measured_send_rate() {
    let mut c = core(LimiterOptions {
        controller: ControllerKind::Pacer,
        ..LimiterOptions::default()
    });
    let now = send(&mut c, 0, 5);
    let _ = c.on_response(throttled(now, None), now);
    assert!(c.is_limiting());
    assert!(c.rate() <= 6000.0 + 1.0 && c.rate() >= 60.0, "{}", c.rate());
}

#[test]
fn a_throttle_before_the_first_measurement_counts_what_was_sent() {
    let mut c = core(aimd());
    for i in 0..20 {
        let _ = c.acquire(1, ms(i * 10));
        let _ = c.on_response(success(ms(i * 10)), ms(i * 10));
    }
    // 21 units (the throttled one counts) in the first 0.2 s, counted over at least half a
    // second: 2,520 a minute, cut by AIMD's 0.7.
    let _ = c.on_response(throttled(ms(200), None), ms(200));
    assert!((c.rate() - 2520.0 * 0.7).abs() < 1e-6, "{}", c.rate());
}

#[test]
fn a_throttle_on_the_first_response_starts_from_that_response_alone() {
    let mut c = core(aimd());
    let _ = c.on_response(throttled(ms(0), Some(Duration::from_secs(1))), ms(0));
    assert!(c.is_limiting());
    // 1 unit over half a second: 120 a minute, cut by 0.7 (never below the minimum, 60).
    assert!((c.rate() - 84.0).abs() < 1e-9, "{}", c.rate());
    assert_eq!(c.paused_until(ms(0)), Some(secs(1)));
}

#[test]
fn a_pause_ends_the_unlimited_start_without_a_cut() {
    let mut c = core(LimiterOptions::default());
    let now = send(&mut c, 0, 5);
    let changes = c.pause_until(now + Duration::from_secs(2), now);
    assert!(c.is_limiting());
    assert_eq!(changes.rate.unwrap().reason, RateChangeReason::Measured);
    assert!((c.rate() - 6000.0).abs() < 1.0);
    assert_eq!(c.snapshot(now).decreases, 0);
}

#[test]
fn numbers_far_from_the_quota_are_ignored_near_ones_start_limiting() {
    let mut c = core(LimiterOptions::default());
    let now = send(&mut c, 0, 5);
    // 6,000 a minute against 100,000 left of 120,000 for the next minute: far from it.
    let far = ServerQuota::new(100_000, Duration::from_secs(60))
        .with_policy(120_000, Duration::from_secs(60));
    assert!(c.follow_server(far, now).is_empty());
    assert!(!c.is_limiting());
    assert!(!c.is_following_server(now));
    // 1,000 left for the next 30 s: at 6,000 a minute they run out in 10 s.
    let near = ServerQuota::new(1000, Duration::from_secs(30));
    let _ = c.follow_server(near, now);
    assert!(c.is_limiting());
    assert!(c.is_following_server(now));
    // From then on the numbers set the rate as they do for a limiter that limits from the start.
    let mut explicit = core(LimiterOptions {
        initial_units_per_minute: Some(6000.0),
        ..LimiterOptions::default()
    });
    let _ = explicit.follow_server(near, now);
    assert!((c.rate() - explicit.rate()).abs() < 1e-6, "{}", c.rate());
    assert!(c.rate() < 3000.0);
}

#[test]
fn explicit_options_keep_their_meaning() {
    let mut c = core(options());
    assert!(c.is_limiting());
    assert_eq!(c.rate(), 600.0);
    // The 1 s burst holds 10 units; the 11th waits.
    for _ in 0..10 {
        assert_eq!(c.acquire(1, ms(0)), Ok(Acquired::Now));
    }
    let _ = queued(c.acquire(1, ms(0)));
    // A throttle cuts from the configured rate, not the measured one.
    let _ = c.on_response(throttled(ms(0), None), ms(0));
    assert!((c.rate() - 420.0).abs() < 1e-9);
    // An explicit maximum with the unlimited start: starts at the maximum, never above it.
    let capped = core(LimiterOptions {
        max_units_per_minute: 1200.0,
        ..LimiterOptions::default()
    });
    assert!(!capped.is_limiting());
    assert_eq!(capped.rate(), 1200.0);
}

#[test]
fn the_instance_count_keeps_the_unlimited_start_at_the_new_maximum() {
    let mut c = core(LimiterOptions {
        max_units_per_minute: 1200.0,
        ..LimiterOptions::default()
    });
    let _ = c.set_instance_count(3, ms(0)).unwrap();
    assert!(!c.is_limiting());
    assert_eq!(c.rate(), 400.0);
}

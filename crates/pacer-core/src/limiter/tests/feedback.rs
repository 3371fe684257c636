//! How responses, pauses and new options move the rate, and what the controller is told.

use super::*;
use crate::{Controller, ControllerContext};

#[test]
fn a_throttle_cuts_once_per_cooldown_and_never_for_a_request_sent_before_the_cut() {
    let mut c = core(LimiterOptions {
        decrease_cooldown: Duration::from_secs(5),
        ..options()
    });
    let cut = c.on_response(throttled(secs(0), None), secs(1));
    assert_eq!(
        cut.rate,
        Some(RateChange {
            previous: 600.0,
            rate: 420.0,
            reason: RateChangeReason::Throttled
        })
    );
    // Within the cooldown: no cut.
    assert!(
        c.on_response(throttled(secs(2), None), secs(3))
            .rate
            .is_none()
    );
    // After the cooldown, but sent before the cut at 1 s: no cut.
    assert!(
        c.on_response(throttled(ms(900), None), secs(7))
            .rate
            .is_none()
    );
    // Sent after the cut, after the cooldown: cut.
    let second = c
        .on_response(throttled(secs(2), None), secs(8))
        .rate
        .unwrap();
    assert!((second.rate - 294.0).abs() < 1e-9);
    // Down to the minimum and no further.
    let mut t = 8;
    for _ in 0..20 {
        t += 6;
        let _ = c.on_response(throttled(secs(t - 1), None), secs(t));
    }
    assert_eq!(c.rate(), 60.0);
}

/// A controller that cuts to three quarters of the rate, and within the cooldown asks to cut
/// again for every throttle after `again_from`; it records the send times it was asked about.
#[derive(Debug)]
struct Again {
    again_from: Timestamp,
    asked: Arc<Mutex<Vec<Timestamp>>>,
}

impl Controller for Again {
    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        cx.rate * 0.75
    }

    fn on_success(&mut self, _: &ControllerContext) -> Option<f64> {
        None
    }

    fn cuts_again(&mut self, cx: &ControllerContext, sent_at: Timestamp) -> bool {
        self.asked.lock().unwrap().push(sent_at);
        cx.now >= self.again_from
    }
}

#[test]
fn a_controller_may_cut_again_within_the_cooldown_but_never_for_a_request_sent_before_the_cut() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let again = Again {
        again_from: secs(3),
        asked: Arc::clone(&asked),
    };
    let o = LimiterOptions {
        decrease_cooldown: Duration::from_secs(5),
        ..options()
    };
    let mut c = LimiterCore::with_controller(o, Box::new(again), Timestamp::ZERO).unwrap();
    let _ = c.on_response(throttled(secs(0), None), secs(1));
    assert_eq!(c.rate(), 450.0);
    assert!(asked.lock().unwrap().is_empty(), "the first throttle cuts");
    // Sent before the cut: an echo of the old rate, not asked.
    let _ = c.on_response(throttled(ms(900), None), secs(2));
    assert!(asked.lock().unwrap().is_empty());
    // Sent after it, within the cooldown: asked; the controller says no.
    let _ = c.on_response(throttled(ms(1500), None), ms(2500));
    assert_eq!(*asked.lock().unwrap(), [ms(1500)]);
    assert_eq!(c.rate(), 450.0);
    // It says yes: cut again at once, and the cooldown starts from this cut.
    let change = c
        .on_response(throttled(secs(2), None), secs(3))
        .rate
        .unwrap();
    assert_eq!((change.previous, change.rate), (450.0, 337.5));
    let _ = c.on_response(throttled(ms(2500), None), secs(4));
    assert_eq!(c.rate(), 337.5, "sent before the new cut: not asked");
    assert_eq!(asked.lock().unwrap().len(), 2);
}

#[test]
fn the_built_in_aimd_never_cuts_again_within_the_cooldown() {
    let mut c = core(LimiterOptions {
        decrease_cooldown: Duration::from_secs(5),
        quota_window: Duration::from_secs(1),
        ..options()
    });
    let _ = c.on_response(throttled(secs(0), None), secs(1));
    for t in 2..6 {
        let _ = c.on_response(
            throttled(secs(t), None),
            secs(t) + Duration::from_millis(100),
        );
    }
    assert_eq!(c.rate(), 420.0, "one cut in the cooldown");
}

#[test]
fn the_controller_is_asked_only_when_the_limiter_cuts_and_its_answer_never_raises_the_rate() {
    let (mut c, seen) = Recorder {
        on_throttled: 5000.0,
        ..Recorder::default()
    }
    .limiter();
    let _ = c.on_response(throttled(secs(0), None), secs(1));
    assert_eq!(
        c.rate(),
        600.0,
        "the lower of the answer and the current rate"
    );
    let _ = c.on_response(throttled(secs(0), None), secs(2));
    assert_eq!(seen.lock().unwrap().len(), 1, "in the cooldown: not asked");
}

#[test]
fn a_retry_after_pauses_every_request_and_is_capped_by_max_retry_after() {
    let mut c = core(LimiterOptions {
        max_retry_after: Duration::from_secs(60),
        max_wait: Duration::from_secs(600),
        ..options()
    });
    let changes = c.on_response(throttled(secs(0), Some(Duration::from_secs(3600))), secs(1));
    assert_eq!(changes.paused_until, Some(secs(61)));
    assert_eq!(c.paused_until(secs(1)), Some(secs(61)));
    let (t, at) = queued(c.acquire(1, secs(2)));
    // The pause emptied the bucket and nothing flows in before it ends; then 7 units/s.
    let after = secs(61) + Duration::from_nanos(142_857_143);
    assert_eq!(at, after);
    assert_eq!(c.pop_ready(secs(61)), None);
    assert_eq!(c.pop_ready(after).map(|g| g.0), Some(t));
    // A shorter Retry-After never shortens a pause that is on.
    let _ = c.on_response(throttled(after, Some(Duration::from_secs(30))), secs(62));
    assert!(
        c.on_response(throttled(secs(62), Some(Duration::from_secs(1))), secs(63))
            .paused_until
            .is_none()
    );
    assert_eq!(c.paused_until(secs(63)), Some(secs(92)));
}

#[test]
fn a_throttle_without_retry_after_pauses_for_pause_without_retry_after() {
    let (mut c, seen) = Recorder {
        on_throttled: 420.0,
        ..Recorder::default()
    }
    .limiter();
    let changes = c.on_response(throttled(secs(0), None), secs(1));
    assert_eq!(changes.paused_until, Some(secs(2)), "the default second");
    assert_eq!(
        seen.lock().unwrap()[0].1.retry_after,
        None,
        "the controller still sees a bare throttle"
    );
    let (t, at) = queued(c.acquire(1, ms(1500)));
    // The pause emptied the bucket: the unit flows in at 420 a minute (7/s) after it ends.
    let after = secs(2) + Duration::from_nanos(142_857_143);
    assert_eq!(at, after);
    assert_eq!(c.pop_ready(secs(2)), None);
    assert_eq!(c.pop_ready(after).map(|g| g.0), Some(t));
    // Each bare throttle orders its second, from when it comes back.
    let changes = c.on_response(throttled(secs(0), None), ms(2500));
    assert_eq!(changes.paused_until, Some(ms(3500)));

    // Capped by MaxRetryAfter; none at 0. A `Retry-After: 0` says only that the wait is under
    // a second (tower_governor rounds it down): the same pause, none if that is 0.
    for (pause, max_retry_after, retry_after, until) in [
        (
            Duration::from_secs(1),
            Duration::from_millis(300),
            None,
            Some(ms(1300)),
        ),
        (Duration::ZERO, Duration::from_secs(60), None, None),
        (
            Duration::from_secs(1),
            Duration::from_secs(60),
            Some(Duration::ZERO),
            Some(secs(2)),
        ),
        (
            Duration::ZERO,
            Duration::from_secs(60),
            Some(Duration::ZERO),
            None,
        ),
        (
            Duration::from_secs(5),
            Duration::from_secs(60),
            None,
            Some(secs(6)),
        ),
    ] {
        let mut c = core(LimiterOptions {
            pause_without_retry_after: pause,
            max_retry_after,
            ..options()
        });
        let changes = c.on_response(throttled(secs(0), retry_after), secs(1));
        assert_eq!(changes.paused_until, until, "{pause:?} {retry_after:?}");
        assert_eq!(c.paused_until(secs(1)), until, "{pause:?} {retry_after:?}");
    }
}

/// A controller that knows the server's window (as the Pacer controller does once it learnt one).
#[derive(Debug)]
struct KnowsTheWindow(Duration);

impl Controller for KnowsTheWindow {
    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        cx.rate
    }

    fn on_success(&mut self, _: &ControllerContext) -> Option<f64> {
        None
    }

    fn server_window(&self) -> Option<Duration> {
        Some(self.0)
    }
}

/// A throttle with no `Retry-After` pauses at most a quarter of the window the server counts
/// over: `QuotaWindow`, or the one the controller knows. A `Retry-After: 0` (a wait under a
/// second, rounded down) takes the whole `PauseWithoutRetryAfter` whatever the window.
#[test]
fn a_bare_throttle_pauses_at_most_a_quarter_of_the_server_s_window() {
    for (quota_window, retry_after, until) in [
        (1, None, ms(1250)),
        (2, None, ms(1500)),
        (4, None, secs(2)),
        (60, None, secs(2)),
        (1, Some(Duration::ZERO), secs(2)),
    ] {
        let quota_window = Duration::from_secs(quota_window);
        let mut c = core(LimiterOptions {
            quota_window,
            ..options()
        });
        let changes = c.on_response(throttled(secs(0), retry_after), secs(1));
        assert_eq!(
            changes.paused_until,
            Some(until),
            "{quota_window:?} {retry_after:?}"
        );
    }
    for (known, until) in [(1, ms(1250)), (10, secs(2))] {
        let mut c = LimiterCore::with_controller(
            options(),
            Box::new(KnowsTheWindow(Duration::from_secs(known))),
            Timestamp::ZERO,
        )
        .unwrap();
        let changes = c.on_response(throttled(secs(0), None), secs(1));
        assert_eq!(changes.paused_until, Some(until), "{known:?}");
    }
}

#[test]
fn the_controller_is_not_asked_on_a_success_during_a_pause() {
    let (mut c, seen) = Recorder {
        on_success: Some(700.0),
        on_throttled: 420.0,
        ..Recorder::default()
    }
    .limiter();
    let _ = c.on_response(throttled(secs(0), Some(Duration::from_secs(10))), secs(1));
    let _ = c.on_response(success(secs(0)), secs(5));
    assert_eq!(seen.lock().unwrap().len(), 1);
    let _ = c.on_response(success(secs(0)), secs(12));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let (kind, state) = seen[1];
    assert_eq!(kind, "success");
    assert_eq!(
        state.since_last_increase,
        Duration::from_secs(1),
        "counts from the end of the pause at 11 s"
    );
    assert_eq!(
        state.since_last_decrease_unpaused,
        Duration::from_secs(1),
        "11 s since the cut, less the 10 s pause"
    );
    assert_eq!(state.since_last_decrease, Duration::from_secs(11));
    assert_eq!(state.rate_before_last_decrease, 600.0);
    assert_eq!(state.decreases, 1);
}

#[test]
fn the_state_handed_to_the_controller_on_a_throttle() {
    let rec = Recorder {
        on_throttled: 300.0,
        ..Recorder::default()
    };
    let seen = Arc::clone(&rec.seen);
    let mut c = LimiterCore::with_controller(
        LimiterOptions {
            instance_count: 2,
            initial_units_per_minute: Some(1200.0),
            min_units_per_minute: 120.0,
            max_units_per_minute: 2400.0,
            ..options()
        },
        Box::new(PureController::new(rec)),
        Timestamp::ZERO,
    )
    .unwrap();
    for _ in 0..10 {
        c.acquire(1, ms(0)).unwrap();
    }
    queued(c.acquire(3, ms(0)));
    let _ = c.on_response(throttled(secs(0), Some(Duration::from_secs(2))), secs(4));
    let (_, s) = seen.lock().unwrap()[0];
    assert_eq!(
        (s.rate, s.min_rate, s.max_rate, s.initial_rate),
        (600.0, 60.0, 1200.0, 600.0)
    );
    assert_eq!(s.instance_count, 2);
    assert!(s.waited);
    assert_eq!(
        s.since_last_decrease,
        Duration::from_secs(4),
        "since creation"
    );
    assert_eq!(s.since_last_increase, Duration::from_secs(4));
    assert_eq!(s.retry_after, Some(Duration::from_secs(2)));
    assert_eq!(s.queued_units, 3.0);
    assert_eq!(s.decreases, 0);
    assert!(!c.snapshot(secs(4)).waited, "a cut clears the flag");
}

#[test]
fn a_success_with_a_new_rate_restarts_the_increase_clock_and_clears_waited() {
    let (mut c, seen) = Recorder {
        on_success: Some(600.0),
        ..Recorder::default()
    }
    .limiter();
    for _ in 0..11 {
        let _ = c.acquire(1, ms(0));
    }
    assert!(c.snapshot(ms(0)).waited);
    let changes = c.on_response(success(ms(0)), secs(3));
    assert!(changes.rate.is_none(), "the same rate is no change of rate");
    assert!(!c.snapshot(secs(3)).waited);
    let _ = c.on_response(success(ms(0)), secs(5));
    let seen = seen.lock().unwrap();
    assert_eq!(seen[1].1.since_last_increase, Duration::from_secs(2));
}

#[test]
fn a_success_says_whether_the_controller_raised_or_lowered_the_rate() {
    for (answer, reason) in [
        (900.0, RateChangeReason::Increased),
        (300.0, RateChangeReason::Lowered),
    ] {
        let (mut c, _) = Recorder {
            on_success: Some(answer),
            ..Recorder::default()
        }
        .limiter();
        let changes = c.on_response(success(ms(0)), secs(3));
        assert_eq!(
            changes.rate,
            Some(RateChange {
                previous: 600.0,
                rate: answer,
                reason
            })
        );
        assert_eq!(c.snapshot(secs(3)).rate, answer);
    }
    assert_eq!(RateChangeReason::Lowered.as_str(), "lowered");
}

#[test]
fn aimd_climbs_one_share_of_the_step_per_interval_while_requests_wait() {
    // 2 instances: each climbs 60 units/min per 10 s, 720 per minute for the budget.
    let mut c = core(LimiterOptions {
        controller: ControllerKind::Aimd,
        instance_count: 2,
        initial_units_per_minute: Some(1500.0),
        min_units_per_minute: 60.0,
        max_units_per_minute: 5625.0,
        ..LimiterOptions::default()
    });
    assert_eq!(c.rate(), 750.0);
    let mut t = Timestamp::ZERO;
    let mut rates = vec![];
    while t < secs(60) {
        // Keep demand above the rate: someone always waits.
        let _ = c.acquire(1, t);
        while c.pop_ready(t).is_some() {}
        if let Some(r) = c.on_response(success(t), t).rate {
            rates.push(r.rate);
        }
        t += Duration::from_millis(50);
    }
    assert_eq!(rates, [810.0, 870.0, 930.0, 990.0, 1050.0]);
    assert!(
        c.rate() - 750.0 <= 360.0,
        "at most 360 per instance per minute"
    );
}

#[test]
fn set_instance_count_scales_the_rate_so_the_budget_rate_stays_the_same() {
    let mut c = core(LimiterOptions {
        instance_count: 2,
        initial_units_per_minute: Some(1200.0),
        min_units_per_minute: 60.0,
        max_units_per_minute: 2400.0,
        ..LimiterOptions::default()
    });
    assert_eq!(c.rate(), 600.0);
    let changes = c.set_instance_count(3, secs(1)).unwrap();
    assert_eq!(changes.rate.map(|r| r.rate), Some(400.0));
    assert_eq!(c.snapshot(secs(1)).budget_rate, 1200.0);
    // Fewer instances: each takes more, up to the new share of the maximum.
    let _ = c.set_instance_count(1, secs(2)).unwrap();
    assert_eq!(c.rate(), 1200.0);
    assert_eq!(
        c.set_instance_count(0, secs(3)).unwrap_err().to_string(),
        "InstanceCount = 0: must be at least 1"
    );
    // Once set live, a reload's InstanceCount no longer applies.
    let _ = c
        .update_options(
            LimiterOptions {
                instance_count: 4,
                max_units_per_minute: 2400.0,
                ..LimiterOptions::default()
            },
            secs(4),
        )
        .unwrap();
    assert_eq!(c.snapshot(secs(4)).instance_count, 1);
}

#[test]
fn new_options_keep_the_rate_and_clamp_it_into_the_new_bounds() {
    let mut c = core(options());
    let _ = c.update_options(
        LimiterOptions {
            initial_units_per_minute: Some(100.0),
            min_units_per_minute: 60.0,
            max_units_per_minute: 6000.0,
            ..LimiterOptions::default()
        },
        secs(1),
    );
    assert_eq!(c.rate(), 600.0, "a new initial rate has no effect");
    let changes = c
        .update_options(
            LimiterOptions {
                initial_units_per_minute: Some(100.0),
                min_units_per_minute: 60.0,
                max_units_per_minute: 300.0,
                ..LimiterOptions::default()
            },
            secs(2),
        )
        .unwrap();
    assert_eq!(
        changes.rate,
        Some(RateChange {
            previous: 600.0,
            rate: 300.0,
            reason: RateChangeReason::Reconfigured
        })
    );
    let before = c.snapshot(secs(3));
    let bad = LimiterOptions {
        min_units_per_minute: 0.0,
        ..LimiterOptions::default()
    };
    assert!(c.update_options(bad, secs(3)).is_err());
    assert_eq!(
        c.snapshot(secs(3)),
        before,
        "invalid options change nothing"
    );
    // The controller follows a changed Controller option.
    let _ = c.update_options(
        LimiterOptions {
            controller: ControllerKind::Cubic,
            initial_units_per_minute: Some(100.0),
            max_units_per_minute: 300.0,
            ..LimiterOptions::default()
        },
        secs(4),
    );
    assert!(format!("{:?}", c.controller).contains("Cubic"));
}

#[test]
fn a_cut_refuses_at_once_the_waiters_that_can_no_longer_make_their_deadline() {
    // The cut alone: a bare throttle's pause (the test above) would refuse more.
    let mut c = core(LimiterOptions {
        max_wait: Duration::from_secs(2),
        pause_without_retry_after: Duration::ZERO,
        ..options()
    });
    for _ in 0..10 {
        c.acquire(1, ms(0)).unwrap();
    }
    let (a, _) = queued(c.acquire(5, ms(0))); // at 0.5 s
    // b may wait 1.6 s and would go at 1.5 s: admitted.
    let (b, at_b) = queued(c.acquire_within(10, Duration::from_millis(1600), ms(0)));
    assert_eq!(at_b, ms(1500));
    let (d, _) = queued(c.acquire(1, ms(0))); // at 1.6 s
    // At 0.1 s the bucket holds 1 unit; the cut to 420/min (7/s, a bucket of 7) puts a at
    // 0.1 + 4/7 s and b at 0.1 + (5 + 7 - 1)/7 ≈ 1.671 s, past its 1.6 s: b is refused, and d
    // moves up to 0.1 + 5/7 s.
    let ch = c.on_response(throttled(ms(0), None), ms(100));
    assert_eq!(ch.rate.map(|r| r.rate), Some(420.0));
    let refused: Vec<_> = ch.rejected.iter().map(|(t, _)| *t).collect();
    assert_eq!(refused, [b]);
    match &ch.rejected[0].1 {
        RejectReason::WaitTooLong {
            cause: WaitCause::Queue,
            needed,
            max_wait,
        } => {
            assert_eq!(*max_wait, Duration::from_millis(1600));
            assert_eq!(needed.as_millis(), 1671);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.next_grant_at(ms(100)),
        Some(ms(100) + Duration::from_secs_f64(4.0 / 7.0))
    );
    assert!(c.is_waiting(a) && c.is_waiting(d) && !c.is_waiting(b));
}

#[test]
fn the_measured_send_rate_reaches_the_controller() {
    let (mut c, seen) = Recorder {
        on_throttled: 100.0,
        ..Recorder::default()
    }
    .limiter();
    // 4 units per half second = 8 units/s.
    for i in 0..8 {
        let _ = c.on_response(
            Feedback {
                units: 1,
                sent_at: ms(0),
                signal: Signal::Neutral,
            },
            ms(i * 125),
        );
    }
    let _ = c.on_response(throttled(ms(0), None), ms(1000));
    let (_, s) = seen.lock().unwrap()[0];
    let measured = s.measured_send_rate.unwrap();
    // Two whole periods of 8 units/s: 8 × 0.8 = 6.4, then 8 × 0.8 + 6.4 × 0.2 = 7.68 units/s.
    assert!((measured - 7.68 * 60.0).abs() < 1e-6, "{measured}");
}

#[test]
fn the_controller_sees_the_units_accepted_in_the_last_minute() {
    let (mut c, seen) = Recorder {
        on_throttled: 300.0,
        ..Recorder::default()
    }
    .limiter();
    let response = |units, signal, at: Timestamp| Feedback {
        units,
        sent_at: at.saturating_sub(Duration::from_millis(100)),
        signal,
    };
    let throttle = Signal::Throttled { retry_after: None };
    for (units, signal, at) in [
        (5, Signal::Success, secs(1)),
        (2, Signal::Neutral, secs(2)),
        (3, Signal::Success, secs(30)),
        (4, throttle, secs(40)),
        (4, throttle, secs(61)),
    ] {
        let _ = c.on_response(response(units, signal, at), at);
    }
    let seen = seen.lock().unwrap();
    let throttles: Vec<f64> = seen
        .iter()
        .filter(|(kind, _)| *kind == "throttled")
        .map(|(_, s)| s.accepted_per_minute)
        .collect();
    assert_eq!(
        throttles,
        [8.0, 3.0],
        "successes only; at 61 s the units of second 1 have left"
    );
}

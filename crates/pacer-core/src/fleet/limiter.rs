//! The fleet's one limiter: the rate of the whole budget and what the controller remembers,
//! kept in the store and moved by whichever member has something to tell it.

use crate::controller::{Aimd, Controller, Cubic, PacerController};
use crate::limiter::BarePause;
use crate::limiter::control::{Control, bounded_cut};
use crate::{ControllerContext, ControllerKind, Feedback, LimiterOptions, Signal, Timestamp};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a fleet's members reported since the last tick, summed, and their gauges now.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Totals {
    /// Each member's demand (units asked per minute).
    pub(crate) demands: Vec<f64>,
    /// The members' measured send rates, summed (units per minute).
    pub(crate) measured: f64,
    /// The units waiting in the members' queues, summed.
    pub(crate) queued: f64,
    /// Whether any member had a request wait since its last report.
    pub(crate) waited: bool,
    /// How many members reported.
    pub(crate) members: u32,
}

/// A built-in controller, kept with the fleet's state (a controller of one's own cannot be).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum BuiltIn {
    Aimd(Aimd),
    Cubic(Cubic),
    /// Boxed: its state (a meter of 60 slots among it) is many times the others'.
    Pacer(Box<PacerController>),
}

impl BuiltIn {
    pub(crate) fn new(options: &LimiterOptions) -> Self {
        match options.controller {
            ControllerKind::Aimd => BuiltIn::Aimd(Aimd::new(options.aimd).unwrap_or_default()),
            ControllerKind::Cubic => BuiltIn::Cubic(Cubic::new(options.cubic).unwrap_or_default()),
            _ => BuiltIn::Pacer(Box::new(
                PacerController::new(options.pacer).unwrap_or_default(),
            )),
        }
    }

    /// This member's options on a state read from the store (options are not kept there); a
    /// state of another kind than the options select starts afresh.
    pub(crate) fn adopt(&mut self, options: &LimiterOptions) {
        match (self, options.controller) {
            (BuiltIn::Aimd(c), ControllerKind::Aimd) => c.set_options(options.aimd),
            (BuiltIn::Cubic(c), ControllerKind::Cubic) => c.set_options(options.cubic),
            (BuiltIn::Pacer(c), ControllerKind::Pacer) => c.set_options(options.pacer),
            (this, _) => *this = BuiltIn::new(options),
        }
    }

    pub(crate) fn get(&mut self) -> &mut dyn Controller {
        match self {
            BuiltIn::Aimd(c) => c,
            BuiltIn::Cubic(c) => c,
            BuiltIn::Pacer(c) => &mut **c,
        }
    }

    /// The time since the last tick was not seen (see [`PacerController::restart_hold`]).
    fn restart_hold(&mut self) {
        if let BuiltIn::Pacer(c) = self {
            c.restart_hold();
        }
    }

    /// Takes the fleet's estimate (`limit` for the whole budget) when it has none of its own (the
    /// Pacer controller's; the others keep no estimate).
    pub(crate) fn seed(&mut self, limit: f64, firm: bool) {
        if let BuiltIn::Pacer(c) = self {
            c.seed(limit, firm);
        }
    }

    /// The Pacer controller's estimate of the limit for the whole budget, and whether it is firm.
    pub(crate) fn estimate(&self) -> Option<(f64, bool)> {
        match self {
            BuiltIn::Pacer(c) => c.limit_estimate(1).map(|l| (l, c.is_firm())),
            _ => None,
        }
    }

    /// The window the controller counts accepted units over: the Pacer controller's (the one it
    /// learnt, or `QuotaWindow`); the others count none, and `QuotaWindow` stands for theirs.
    fn counting_window(&self, options: &LimiterOptions) -> Duration {
        match self {
            BuiltIn::Pacer(c) => c.counting_window(),
            _ => options.quota_window,
        }
    }
}

/// The fleet's limiter, on the store's clock: the rate of the whole budget (one controller for
/// every member, as one process with the whole budget would have it), the controller contract's
/// bookkeeping, the stop the server ordered, the controller's state, and the members' totals at
/// the last tick.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FleetLimiter {
    rate: f64,
    control: Control,
    pause_until: Timestamp,
    controller: BuiltIn,
    /// The members' gauges at the last tick (what a throttle's context reads).
    measured: f64,
    queued: f64,
    members: u32,
    /// The members whose demand is below an even share at the last tick: what they take
    /// (their demand and some room), and how many they are. The others split the rest.
    light: f64,
    light_members: u32,
    /// When the last tick ran (the store's clock).
    ticked_at: Option<Timestamp>,
    /// When the controller last counted the members' accepted units (the store's clock): the
    /// units of the next count were accepted since. (A state written before it was kept reads
    /// as none: that count goes in at once, as all did then.)
    #[serde(default)]
    counted_at: Option<Timestamp>,
    /// The units counted since the last tick: a tick with none is no success to learn from.
    #[serde(default)]
    counted_since_tick: f64,
}

/// The steps a count of accepted units is spread in over a window ([`FleetLimiter::count`]): the
/// slots of the controller's meter.
const SPREAD_STEPS: u32 = 60;

/// A member whose demand is below an even share takes its demand and this much more, so that it
/// has room to show a growing demand; the rest of the fleet's rate goes to the others, evenly.
pub(crate) const LIGHT_ROOM: f64 = 0.25;

impl FleetLimiter {
    /// A fleet that starts at `now` with `options` (whole-budget rates: the fleet runs one
    /// controller for all).
    pub(crate) fn new(options: &LimiterOptions, now: Timestamp) -> Self {
        let rate = options.rate_at_start();
        let limiting = options.initial_units_per_minute.is_some();
        let mut controller = BuiltIn::new(options);
        controller.get().on_options(options, now);
        FleetLimiter {
            rate,
            control: Control::new(rate, limiting, rate, now),
            pause_until: Timestamp::ZERO,
            controller,
            measured: 0.0,
            queued: 0.0,
            members: 0,
            light: 0.0,
            light_members: 0,
            ticked_at: None,
            counted_at: None,
            counted_since_tick: 0.0,
        }
    }

    /// Readies a state read from the store for this member's `options`.
    pub(crate) fn adopt(&mut self, options: &LimiterOptions, now: Timestamp) {
        self.controller.adopt(options);
        self.controller.get().on_options(options, now);
        self.rate = self
            .rate
            .clamp(options.min_units_per_minute, options.max_units_per_minute);
    }

    /// The rate of the whole budget, units per minute.
    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }

    /// Whether the fleet limits (its unlimited start has ended).
    pub(crate) fn is_limiting(&self) -> bool {
        self.control.limiting
    }

    /// Until when the server's stop holds every member.
    pub(crate) fn pause_until(&self) -> Timestamp {
        self.pause_until
    }

    /// What `members` members take at the rate, one of them asking `demand` units per
    /// minute: max-min fair shares, from the demands at the last tick. A member asking less
    /// than an even share gets its demand and [`LIGHT_ROOM`] more; the others split the rest of
    /// the rate evenly; when every member asks less, each gets an even part of what is left
    /// besides (the fleet's rate is never left unused to hold a burst back).
    pub(crate) fn share(&self, members: u32, demand: f64) -> f64 {
        let n = f64::from(members.max(1));
        let even = self.rate / n;
        let light = demand * (1.0 + LIGHT_ROOM);
        if light < even {
            if self.light_members >= members {
                return light + (self.rate - self.light).max(0.0) / n;
            }
            return light;
        }
        let heavy = members.saturating_sub(self.light_members).max(1);
        ((self.rate - self.light).max(0.0) / f64::from(heavy)).max(even.min(light))
    }

    /// Splits the rate among the members whose demands are `demands`, at a tick.
    fn split(&mut self, demands: &[f64]) {
        let even = self.rate / demands.len().max(1) as f64;
        let (mut light, mut count) = (0.0, 0);
        for d in demands {
            let take = d * (1.0 + LIGHT_ROOM);
            if take < even {
                light += take;
                count += 1;
            }
        }
        self.light = light;
        self.light_members = count;
    }

    /// How many cuts so far.
    pub(crate) fn decreases(&self) -> u64 {
        self.control.decreases
    }

    /// The controller's estimate of the limit, whole budget, and whether it is firm.
    pub(crate) fn estimate(&self) -> Option<(f64, bool)> {
        self.controller.estimate()
    }

    /// The window the controller counts accepted units over (see [`BuiltIn::counting_window`]).
    pub(crate) fn counting_window(&self, options: &LimiterOptions) -> Duration {
        self.controller.counting_window(options)
    }

    fn context(&self, options: &LimiterOptions, now: Timestamp) -> ControllerContext {
        let bounds = (
            self.rate,
            options.min_units_per_minute,
            options.max_units_per_minute,
        );
        let mut cx =
            self.control
                .context(now, bounds, self.control.initial_whole, self.pause_until);
        cx.instance_count = 1;
        // Measured once a tick has counted the members' gauges (zero is a measure then).
        cx.measured_send_rate = self.ticked_at.map(|_| self.measured);
        cx.queued_units = self.queued;
        cx.quota_window = options.quota_window;
        cx
    }

    /// A tick at `now` with the members' gauges: (while the fleet limits and no stop holds it)
    /// the controller may move the rate; the rate is split anew. A tick that comes more than
    /// `gap` after the last one (the store was down: every lease ran out, the members are only
    /// coming back) moves nothing, and the controller's hold starts again. True if the rate
    /// changed.
    pub(crate) fn tick(
        &mut self,
        options: &LimiterOptions,
        totals: &Totals,
        gap: Duration,
        now: Timestamp,
    ) -> bool {
        let missed = self
            .ticked_at
            .is_some_and(|t| now.saturating_duration_since(t) > gap);
        self.ticked_at = Some(now);
        self.measured = totals.measured;
        self.queued = totals.queued;
        self.members = totals.members;
        self.control.waited |= totals.waited;
        if missed {
            self.controller.restart_hold();
            self.split(&totals.demands);
            return false;
        }
        // The controller hears of successes at the tick; a tick with no unit accepted since the
        // last one brings none (a process alone hears nothing then either). After a young
        // throttle without `Retry-After` the first success says the server's window is shorter
        // than `QuotaWindow`: a tick while the server still refuses everything is not one.
        let counted = std::mem::take(&mut self.counted_since_tick);
        let changed = counted >= 1.0 && self.step(options, now);
        self.split(&totals.demands);
        changed
    }

    /// The controller counts `units` the members reported accepted since the last count, at
    /// `now`. They were accepted over that span, not at `now`: counted as one lump at each
    /// commit, a window of a second held four periods' units or five, by where the commits fell,
    /// and its estimate was a quarter off either way. So they are spread over the span (at most
    /// a window back) in steps of the controller's slot, a sixtieth of the window it counts
    /// over; a span of one slot or less (a period's, at the default `Period`, in any window of
    /// 30 s or more) takes them in one step at `now`, as before.
    pub(crate) fn count(&mut self, units: f64, options: &LimiterOptions, now: Timestamp) {
        let from = self.counted_at.filter(|&at| at < now);
        self.counted_at = Some(self.counted_at.map_or(now, |at| at.max(now)));
        if units < 1.0 {
            return;
        }
        self.counted_since_tick += units;
        let window = self.controller.counting_window(options);
        let span = from.map_or(Duration::ZERO, |from| (now - from).min(window));
        let slot = window / SPREAD_STEPS;
        let steps = if slot.is_zero() {
            1
        } else {
            span.as_nanos()
                .div_ceil(slot.as_nanos())
                .clamp(1, u128::from(SPREAD_STEPS)) as u32
        };
        let total = units.round();
        let mut counted = 0.0;
        for step in 1..=steps {
            let upto = (total * f64::from(step) / f64::from(steps)).round();
            let piece = upto - counted;
            if piece < 1.0 {
                continue;
            }
            counted = upto;
            // The last step is `now` itself (not a sum that rounding moved off it).
            let at = if step == steps {
                now
            } else {
                now.saturating_sub(span.mul_f64(f64::from(steps - step) / f64::from(steps)))
            };
            let accepted = Feedback {
                units: piece as u64,
                sent_at: at,
                signal: Signal::Success,
            };
            self.controller.get().on_response(&accepted, at);
        }
    }

    fn step(&mut self, options: &LimiterOptions, now: Timestamp) -> bool {
        if !self.control.limiting || now < self.pause_until {
            return false;
        }
        let cx = self.context(options, now);
        let Some(proposed) = self.controller.get().on_success(&cx) else {
            return false;
        };
        if proposed.is_nan() {
            return false;
        }
        self.control.changed(now);
        let rate = proposed.clamp(options.min_units_per_minute, options.max_units_per_minute);
        let changed = rate != self.rate;
        self.rate = rate;
        changed
    }

    /// A member's request sent at `sent_at` was throttled, the server asking for `retry_after`:
    /// an unlimited start ends at the members' measured send rate; the controller cuts if the
    /// contract allows (once per `DecreaseCooldown`, never for a request sent before the last
    /// cut); a `Retry-After` (or `PauseWithoutRetryAfter` without one) stops every member. True if
    /// anything changed.
    pub(crate) fn throttle(
        &mut self,
        options: &LimiterOptions,
        sent_at: Timestamp,
        retry_after: Option<Duration>,
        bare: BarePause,
        now: Timestamp,
    ) -> bool {
        let retry_after = retry_after.map(|r| r.min(options.max_retry_after));
        let mut changed = false;
        if !self.control.limiting {
            let min = options.min_units_per_minute;
            let start = if self.measured > 0.0 {
                self.measured
            } else {
                self.rate
            };
            let rate = start.clamp(min, options.max_units_per_minute);
            self.control.start(rate, 1, now);
            self.rate = rate;
            changed = true;
        }
        // As a limiter of one process cuts: once per `DecreaseCooldown`, or again within it when
        // the controller says the cut fell short (a window shorter than the cooldown that still
        // refuses a request sent after the cut; a bucket's run of bare throttles).
        let cuts = self
            .control
            .may_cut(sent_at, now, options.decrease_cooldown)
            || (self.control.sent_after_cut(sent_at) && {
                let mut cx = self.context(options, now);
                cx.retry_after = retry_after;
                self.controller.get().cuts_again(&cx, sent_at)
            });
        if cuts {
            let mut cx = self.context(options, now);
            cx.retry_after = retry_after;
            let proposed = self.controller.get().on_throttled(&cx);
            let rate = bounded_cut(proposed, self.rate, options.min_units_per_minute);
            self.control.cut(self.rate, now);
            self.rate = rate;
            changed = true;
        }
        self.control.restart_increase_clock(now);
        if let Some(pause) = options.throttle_pause(retry_after, bare) {
            // A bare throttle while a stop is on only lengthens it (the members' requests sent
            // before it, refused one after another): the commit carries it, but is not urgent,
            // or every refusal of a burst would be published to every member.
            let stopped = self.pause_until > now;
            changed |= self.pause(now + pause, now, options) && (retry_after.is_some() || !stopped);
        }
        changed
    }

    /// Holds every member until `until` (capped by `MaxRetryAfter`); never shortens a stop.
    pub(crate) fn pause(
        &mut self,
        until: Timestamp,
        now: Timestamp,
        options: &LimiterOptions,
    ) -> bool {
        let until = until.min(now + options.max_retry_after);
        if until <= self.pause_until || until <= now {
            return false;
        }
        self.controller
            .get()
            .on_pause(now.max(self.pause_until), until);
        self.pause_until = until;
        true
    }
}

#[cfg(test)]
mod tests {
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
        let stored = serde_json::to_vec(&f).unwrap();
        let mut back: FleetLimiter = serde_json::from_slice(&stored).unwrap();
        back.adopt(&o, at(11));
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
}

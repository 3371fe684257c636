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

    fn get_ref(&self) -> &dyn Controller {
        match self {
            BuiltIn::Aimd(c) => c,
            BuiltIn::Cubic(c) => c,
            BuiltIn::Pacer(c) => &**c,
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

    /// The window the server counts over, as far as the controller knows
    /// ([`Controller::server_window`]).
    pub(crate) fn server_window(&self) -> Option<Duration> {
        self.get_ref().server_window()
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
    /// Whether the members draw each request's units from the store's pool instead of sending
    /// their shares ([`FleetLimiter::decide_pool`]). (A member of a version without the pool
    /// reads the state as though it were not, and sends its share.)
    #[serde(default)]
    pooled: bool,
}

/// The steps a count of accepted units is spread in over a window ([`FleetLimiter::count`]): the
/// slots of the controller's meter.
const SPREAD_STEPS: u32 = 60;

/// A member whose demand is below an even share takes its demand and this much more, so that it
/// has room to show a growing demand; the rest of the fleet's rate goes to the others, evenly.
pub(crate) const LIGHT_ROOM: f64 = 0.25;

/// A fleet draws from the store's pool when an even share delivers fewer units than this within
/// `MaxWait`: each member's queue then holds too few requests to use its share. A queue that
/// holds K requests, fed at random at its rate (an M/M/1/K queue at load 1), carries
/// `K / (K + 1)` of it: at K = 50 it loses 2 % (requests of one unit; larger ones fill it
/// sooner). One queue for the whole fleet holds the fleet's rate × `MaxWait`.
pub(crate) const POOL_BELOW_UNITS: f64 = 50.0;

/// A pooled fleet goes back to shares only once an even share delivers this many times
/// [`POOL_BELOW_UNITS`] within `MaxWait`: a rate that moves around the boundary (a cut, a climb
/// back) does not switch the members back and forth.
const POOL_LEAVE_FACTOR: f64 = 2.0;

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
            pooled: false,
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

    /// Whether the members draw from the store's pool.
    pub(crate) fn is_pooled(&self) -> bool {
        self.pooled
    }

    /// Decides at a tick whether the members draw from the store's pool: when the units an even
    /// share delivers within `MaxWait` fall below [`POOL_BELOW_UNITS`], until they are
    /// [`POOL_LEAVE_FACTOR`] times as many. A fleet of one never pools (its share is the rate).
    fn decide_pool(&mut self, options: &LimiterOptions) {
        let members = self.members.max(1);
        let room = self.rate / f64::from(members) * options.max_wait.as_secs_f64() / 60.0;
        self.pooled = members > 1
            && if self.pooled {
                room < POOL_BELOW_UNITS * POOL_LEAVE_FACTOR
            } else {
                room < POOL_BELOW_UNITS
            };
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

    /// The window the server counts over, as far as the fleet's controller knows
    /// ([`Controller::server_window`]).
    pub(crate) fn server_window(&self) -> Option<Duration> {
        self.controller.server_window()
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
            self.decide_pool(options);
            return false;
        }
        // The controller hears of successes at the tick; a tick with no unit accepted since the
        // last one brings none (a process alone hears nothing then either). After a young
        // throttle without `Retry-After` the first success says the server's window is shorter
        // than `QuotaWindow`: a tick while the server still refuses everything is not one.
        let counted = std::mem::take(&mut self.counted_since_tick);
        let changed = counted >= 1.0 && self.step(options, now);
        self.split(&totals.demands);
        self.decide_pool(options);
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
            // The last step (no time left to take off) is `now` itself.
            let at = now.saturating_sub(span.mul_f64(f64::from(steps - step) / f64::from(steps)));
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
    /// cut); a `Retry-After` (or `PauseWithoutRetryAfter` without one, at most a quarter of the
    /// window the controller counts over) stops every member. True if
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
        let mut cx = self.context(options, now);
        cx.retry_after = retry_after;
        let cuts = self
            .control
            .may_cut(sent_at, now, options.decrease_cooldown)
            || (self.control.sent_after_cut(sent_at)
                && self.controller.get().cuts_again(&cx, sent_at));
        if cuts {
            let proposed = self.controller.get().on_throttled(&cx);
            let rate = bounded_cut(proposed, self.rate, options.min_units_per_minute);
            self.control.cut(self.rate, now);
            self.rate = rate;
            changed = true;
        }
        self.control.restart_increase_clock(now);
        let window = self.counting_window(options);
        if let Some(pause) = options.throttle_pause(retry_after, bare, window) {
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
mod tests;

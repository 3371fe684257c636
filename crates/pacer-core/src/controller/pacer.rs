//! Pacer's own controller: learn where the limit is, hold just under it, probe rarely.
//!
//! AIMD and CUBIC both forget the limit the moment they cut: AIMD climbs back in small steps and
//! spends most of its time well below the limit; CUBIC races back to its maximum and finds the
//! limit again by a throttle, again and again. The limiter knows more than either uses: how many
//! units the server accepted over its quota window (at a throttle, with the window full of our own
//! units, that *is* the limit), the Retry-After, and whether requests wait. This controller keeps
//! that estimate and holds the rate just under it; it probes above it only after holding long
//! without a throttle, and less often each time a probe finds nothing new.

use super::pure::StateCounts;
use super::{Controller, ControllerContext, RateController, RateControllerState};
use crate::validation::InvalidOptions;
use crate::{Feedback, LimiterOptions, Timestamp};
use memory::{Ceiling, Peak, Suspended, Young};
use std::time::Duration;

mod again;
mod bare;
mod fixed;
mod memory;
mod options;
mod probe;
mod share;
mod success;
mod throttle;
mod window;
mod young;
pub use options::PacerControllerOptions;

// The fixed timings below are on the real clock, whatever the `QuotaWindow`: they are about round
// trips and `Retry-After` seconds, which do not shrink with the window. Only a clock that runs
// faster than the real one divides them (`PacerControllerOptions::with_time_scale`, see `timing`).

/// The least time between two increases.
const CLIMB_INTERVAL: Duration = Duration::from_secs(1);
/// After a probe's throttle, each increase closes this fraction of the gap to the hold.
const CLIMB_FRACTION: f64 = 0.1;
/// The rate climbs only while the measured send rate is at least this fraction of it: a rate
/// the demand does not use tells nothing.
const UTILISATION: f64 = 0.8;
/// A probe starts this fraction above the hold …
const PROBE_START: f64 = 0.02;
/// … and its step above the hold doubles this often.
const PROBE_DOUBLING: Duration = Duration::from_secs(15);
/// An estimate this fraction below the last one means the limit fell (a neighbour, a cut).
const FALL_BAND: f64 = 0.2;
/// At a throttle, a rate within this fraction above the estimate was about what the window held:
/// its profile is flat and a shallow cut is enough.
const NEAR_BAND: f64 = 0.1;
/// A Retry-After at least this long already held the rate at zero for a while.
const LONG_PAUSE: Duration = Duration::from_secs(5);
/// A throttle this soon after a cut (two of the limiter's default 5 s cooldowns) found the window
/// full again: the cut did not bring the rate under what leaves it.
const AGAIN: Duration = Duration::from_secs(10);
/// How long a limit that fell is remembered as one that may come back.
const CEILING_MEMORY: Duration = Duration::from_secs(600);
/// A limit that fell in steps fell when it is this part or more under the highest level a
/// throttle found held within `CEILING_MEMORY` (wider than `FALL_BAND`: two processes against
/// a bucket trade a few percent back and forth at each throttle). Chosen over the simulator's
/// autoscale story and the shapes example (docs/research/controllers-record.md, "A fall in
/// steps").
const STEPPED_FALL_BAND: f64 = 0.3;
/// A level counts for [`STEPPED_FALL_BAND`] when it held this long without a throttle.
const PEAK_HELD: Duration = Duration::from_secs(60);
/// ... and the fall from it counts when it comes within this many `QuotaWindow`s of the
/// throttle that ended the level (at most `CEILING_MEMORY`),
const STEPPED_FALL_WINDOWS: u32 = 4;
/// ... at this throttle after that one or a later one (a crowd shows as several steps; two
/// processes' shares of a bucket trade places in one or two).
const STEPPED_FALL_STEPS: u32 = 3;

/// Pacer's controller: it learns where the limit is and holds just under it.
///
/// - **The estimate.** On a throttle the limit is estimated as the units the server accepted
///   from this process over the last `QuotaWindow`, a minute unless configured
///   ([`accepted_per_minute`]): when the server's window is full of our own units, that is our
///   part of the quota, whatever rate we were asking for.
///   (Before anything was accepted: the lower of the rate and the measured send rate.)
/// - **The cut.** Near the estimate (a probe found the limit, or the rate was about what the
///   window held), or after a long Retry-After (the pause already held the rate at zero), the
///   rate goes to the estimate less `CutMargin` (5 %). Far above it — a climb that ran ahead of
///   the window, whose early units will leave slowly — the rate really sent (the lower of the
///   rate and the measured send rate) is multiplied by `DecreaseFactor` (0.7), or the rate set to
///   the estimate less `CutMargin`, the lower. Then it climbs back to the hold in a line over
///   `RecoveryTime` (30 s).
/// - **A cut that fell short.** Within `DecreaseCooldown` of a cut, a throttle of a request sent
///   after it cuts again at once when the cut did not bring the rate under the server's:
///   the request was sent a whole `QuotaWindow` after the cut (so only a window shorter than
///   the cooldown, a per-second quota; two windows after a cut in the controller's first ten
///   windows when there are several processes and the refusal has a `Retry-After`: the others,
///   climbing too, meet their own throttles in between), or a run of bare throttles measures the
///   server's pace under the rate less `CutMargin` but at least a quarter of what was sent, now
///   and at the run's first throttle (a bucket's leak, below; a spent window accepts next to
///   nothing). (Only as a [`Controller`]: see [`Controller::cuts_again`].)
/// - **The hold.** The rate holds at the estimate less `HoldMargin` (1.5 %).
/// - **The probe.** After `ProbeAfter` (2 min × instances) at the hold with requests waiting
///   and no throttle, the rate probes above: 2 % at first, the step doubling every 15 s. A probe
///   that ends in a throttle without finding more room doubles the next wait (up to
///   `MaxProbeAfter`); so does one that found more room when the next throttle that is not a
///   probe's finds less than it did (a bucket's regained tokens, not the limit moving).
/// - **A fall.** When a throttle's estimate is a fifth or more below the last one, the limit
///   fell (a neighbour took part of it, the server cut it). While the last one was only our
///   demand (or there was none), the fall is measured from the most the server accepted over a
///   window without a throttle, if that is higher: the limit was at least that. The first
///   estimate is only what the window held at that moment (a bucket that starts full holds a
///   window's quota more): the next throttle corrects it, and a fall is not measured from it
///   nor from what the server accepted before it, unless a long Retry-After came with either
///   (the limit moved). A next throttle that finds no fall from it confirms it instead: the
///   lower of the two is then a level (below) once it held a minute. The old limit is
///   remembered for 10 minutes; the controller probes back toward it every
///   `RecoveryProbeAfter` (40 s × √n), reaching it in `RecoveryTime` if nothing throttles.
///   Reached without a throttle, it is the estimate again (if it was ever a real limit, not
///   just our demand), and the next probe waits `ProbeAfter`, as at any estimate.
/// - **A fall in steps.** A limit that fell in steps, each under a fifth (a crowd that grew a
///   few processes at a time: an autoscaled deployment whose `InstanceCount` stays as it
///   started), fell all the same once a throttle's estimate is 30 % or more under the highest
///   firm estimate that held a minute without a throttle, within 4 × `QuotaWindow` (at most 10
///   minutes) of the throttle that ended it and at the third throttle after it or later; that
///   one is remembered as above. (A slower slide, or one in one or two steps, is two
///   processes' shares of a bucket trading places.) Not across a change of the instance count,
///   nor for 10 minutes after it (a count over a window of the old share is no level of the
///   whole budget).
/// - **A bucket's slack.** On a run of throttles without `Retry-After` (each within a window of
///   the last), once it spans 5 % of `QuotaWindow` (at least a second): if the server accepted a
///   quarter less over the run than a sliding window would have given back (what it accepted a
///   window earlier), and at least a quarter of what was sent, now and at the run's first
///   throttle (a spent window accepts next to nothing until it resets or drains, which is no
///   pace), it is a bucket leaking at its pace, and the window's count also held what the
///   bucket let through while it filled. The estimate is at most that pace, and is not a fall;
///   a limit remembered from a fall stays. But a pace a fifth or more under a level the limit
///   held for a minute (a firm estimate a throttle confirmed, or a first estimate and the
///   throttle that found no fall from it, the lower of the two) is no bucket's slack: a bucket
///   does not leak that much slower than it let us send for a minute unless its rate was cut,
///   and a sliding window that a neighbour or a cut filled accepts a fraction of what it let
///   through until it turns over. The estimate is then the run's pace, and a fall is measured
///   as at any throttle. (Only as a [`Controller`]: the pure contract's state holds no
///   history.)
/// - **A stop.** A `Retry-After` longer than `QuotaWindow` cannot be our own units leaving the
///   server's window (they would be gone before it ends): it is maintenance or a penalty, and
///   says nothing of the limit. The estimate stays, and the rate comes back at the hold (or
///   where it was, if lower).
/// - **A lapse.** A long Retry-After (5 s or more) that meets the rate at or under the estimate
///   is the limit moving under a hold it had allowed (a neighbour came, the server cut the
///   quota): the units accepted are only our hold, and the estimate falls to them for the time
///   being. If no throttle comes within a window of the pause's end, the limit came back and the
///   estimate before the lapse stands again; a throttle in that window (the limit stayed down)
///   keeps the new one, and a fall then remembers the estimate before the lapse, not the
///   lapse's count of our hold.
/// - **Before any throttle**, the rate grows by `StartGrowth` (25 %) a second while requests
///   wait, but never above `Lead` (1.25) times what the server accepted in the last minute: fast
///   from a cold start, gentle after a long quiet spell.
/// - **A young throttle.** A throttle without a Retry-After before the limiter is a
///   `QuotaWindow` old: the server's window holds only units sent since we started, and none
///   leaves before we are a window old. The rate goes to the minimum, and climbs back to the
///   hold in a line over `RecoveryTime` once successes come.
/// - **A server with a shorter window.** After a young throttle, a success more than 2 s after
///   the cut and before the limiter is a window old says
///   the server counts over a shorter window than `QuotaWindow` (nginx's `limit_req`, a
///   per-second quota): the units accepted since the start were its pace over those seconds,
///   not a window's quota. The estimate becomes that pace over the window, times 0.6 (the count
///   holds the room a fresh server gives at once), at most the send rate at the throttle. And
///   the server's window is at most the limiter's age then (our first units have left it): from
///   then on a throttle counts over that age, until a run of bare throttles measures a bucket's
///   leak (a bucket has no window: the count is over `QuotaWindow` again). (Only as a
///   [`Controller`].)
/// - **A young throttle with a short Retry-After.** A throttle before the limiter is a
///   `QuotaWindow` old whose `Retry-After` ends within two fifths of a window from our start
///   says the server's window lets units go that soon: it counts over a shorter window (a
///   per-second quota), or others' units fill it. Either way the units accepted since the start
///   were the server's pace over that span, not a window's quota, and the estimate is that pace
///   (the units over our age plus the `Retry-After`), at most the send rate. A window of a
///   minute that we filled alone ends its span at the window, so the rule leaves it alone.
/// - **A window learnt.** The first such throttle also says the server's window is at most that
///   span: from then on the controller counts over the span instead of `QuotaWindow`, keeps no
///   estimate from the part-window so far, and grows again from the cut as before any throttle,
///   until a throttle measures a whole (learnt) window. A later `Retry-After` longer than the
///   span says the window is longer after all (others' units filled it), and the count is over
///   `QuotaWindow` again. (Only as a [`Controller`].)
/// - **A fixed window.** Once throttles' `Retry-After`s end on the same boundaries, a whole
///   number of windows apart, more often in a row than a sliding window's would by chance, the
///   window resets there, and a throttle's count is over the part of it since it began: the
///   last window's count also held the window before's units. (Only as a [`Controller`].)
/// - It never climbs unless requests wait and the demand uses at least 80 % of the rate.
///
/// In the simulator it takes more of the quota than AIMD with fewer 429s in most stories;
/// `docs/controllers.md` has the figures, the spread over seeds and instance counts, and where it
/// loses.
///
/// [`accepted_per_minute`]: RateControllerState::accepted_per_minute
///
/// # Example
///
/// ```
/// use pacer_core::{PacerController, RateController, RateControllerState};
/// use std::time::Duration;
///
/// let mut pacer = PacerController::default();
/// // A throttle after a minute in which the server accepted 1,500 units from us.
/// let mut state = RateControllerState::new(2000.0, 60.0, 6000.0);
/// state.accepted_per_minute = 1500.0;
/// state.since_last_decrease = Duration::from_secs(90);
/// state.queued_units = 40.0;
/// let cut = pacer.on_throttled(&state);
/// assert_eq!(pacer.limit_estimate(1), Some(1500.0));
/// assert!((cut - 1400.0).abs() < 1e-9, "0.7 × 2,000, below 0.95 × 1,500");
///
/// // Requests wait and the demand uses the rate: it climbs back to 1.5 % under the estimate in
/// // a line over 30 s.
/// state.rate = cut;
/// state.measured_send_rate = Some(cut);
/// state.since_last_increase = Duration::from_secs(1);
/// state.since_last_decrease_unpaused = Duration::from_secs(30);
/// assert_eq!(pacer.on_success(&state), Some(1500.0 * 0.985));
/// ```
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PacerController {
    /// Not kept with the state: a fleet's controller takes each member's own.
    #[serde(skip)]
    options: PacerControllerOptions,
    /// The estimate of the limit for the whole budget (this process's estimate times the
    /// instance count when it was made), units per minute.
    limit: Option<f64>,
    /// Whether the estimate was measured with the window full of our own units (requests
    /// waited, we sent faster than the minute's average, or a probe found it). A throttle that
    /// met us below our rate only says the limit was at most our demand; so does one with nobody
    /// waiting below what the server accepted before without a throttle, however fast a burst
    /// of demand went out.
    firm: bool,
    /// While the estimate is not firm (or there is none): the most (whole budget) the server
    /// accepted over a window without a throttle since the last firm estimate. The limit was at
    /// least that; a throttle far below it means the limit fell.
    demonstrated: f64,
    /// A higher limit (whole budget) seen before the limit fell, whether it was firm, and the
    /// limiter's age when it fell.
    ceiling: Option<Ceiling>,
    /// The highest firm estimate that held a minute without a throttle (or the lower of a first
    /// estimate and the throttle that found no fall from it): a limit that fell from it in
    /// steps, each under a fifth, within 4 windows, fell all the same, and a run of bare
    /// throttles far under it is no bucket's slack.
    #[serde(default)]
    peak: Option<Peak>,
    /// `since_last_decrease` when the rate reached the hold after the last cut.
    held_from: Option<Duration>,
    /// The current wait before a probe, for one instance.
    probe_after: Duration,
    /// Whether the rate is probing above the hold.
    probing: bool,
    /// After a cut that was not a probe's: the rate it set, to climb back from in a line.
    ramp_from: Option<f64>,
    /// The limiter's age at the last cut (the sum of the `since_last_decrease` of every cut).
    age_at_cut: Duration,
    /// The instance count last seen, the one before it, and the age at the change.
    instances: Option<(u32, u32, Duration)>,
    /// After a long Retry-After at or under the estimate: the estimate it replaced, until a
    /// window of units sent after the pause shows whether the limit stayed down.
    suspended: Option<Suspended>,
    /// After a young throttle: what it measured, to scale the estimate by if the server turns
    /// out to count over a shorter window than `QuotaWindow`.
    young: Option<Young>,
    /// Whether the estimate is the first one, made without a long Retry-After, and no throttle
    /// has come since: a lower estimate at the next throttle is not a fall from it.
    #[serde(default)]
    unconfirmed: bool,
    /// Whether the last probe found more room and no throttle that was not a probe's came since.
    #[serde(default)]
    probe_found: bool,
    /// As a [`Controller`]: the units accepted over time and the current run of bare throttles
    /// (not kept with a fleet's state: a fleet's controller goes without the rule).
    #[serde(skip)]
    bare: bare::BareRuns,
    /// The server's pace a run of bare throttles measured, for the throttle being handled.
    #[serde(skip)]
    bare_pace: Option<f64>,
    /// As a [`Controller`]: the units the server accepted over the last `QuotaWindow` (or the
    /// window it learnt) and the time paused since the last cut, which its state holds.
    counts: StateCounts,
    /// As a [`Controller`]: a server's window shorter than `QuotaWindow`, learnt from a young
    /// throttle with a short `Retry-After`, or from the first success after a young throttle
    /// without one, for the first `QuotaWindow`. Kept with a fleet's state, as the window's
    /// ends below: a fleet that configured nothing meets a per-second quota as one process does.
    #[serde(default)]
    learnt: Option<window::Learnt>,
    /// Whether it ever learnt one: a window is learnt once.
    #[serde(default)]
    learnt_before: bool,
    /// As a [`Controller`]: the ends of the throttles' `Retry-After`s, which tell a fixed window.
    #[serde(default)]
    boundaries: fixed::Boundaries,
}

impl Default for PacerController {
    fn default() -> Self {
        PacerController::with(PacerControllerOptions::default())
    }
}

impl PacerController {
    /// A controller with validated options.
    pub fn new(options: PacerControllerOptions) -> Result<Self, InvalidOptions> {
        options.validate()?;
        Ok(PacerController::with(options))
    }

    fn with(options: PacerControllerOptions) -> Self {
        PacerController {
            options,
            limit: None,
            firm: false,
            demonstrated: 0.0,
            ceiling: None,
            peak: None,
            held_from: None,
            probe_after: options.probe_after,
            probing: false,
            ramp_from: None,
            age_at_cut: Duration::ZERO,
            instances: None,
            suspended: None,
            young: None,
            unconfirmed: false,
            probe_found: false,
            bare: bare::BareRuns::default(),
            bare_pace: None,
            counts: StateCounts::default(),
            learnt: None,
            learnt_before: false,
            boundaries: fixed::Boundaries::default(),
        }
    }

    /// The controller's options.
    #[must_use]
    pub fn options(&self) -> &PacerControllerOptions {
        &self.options
    }

    /// Replaces the options (they are valid), keeping the state.
    pub(crate) fn set_options(&mut self, options: PacerControllerOptions) {
        self.options = options;
    }

    /// The estimate of the limit, in units per minute for one of `instance_count` processes;
    /// `None` before the first throttle (and while the limit above a level that only our demand
    /// ever reached is unknown).
    #[must_use]
    pub fn limit_estimate(&self, instance_count: u32) -> Option<f64> {
        self.limit.map(|l| l / f64::from(instance_count.max(1)))
    }

    /// Whether the rate is probing above the estimate.
    #[must_use]
    pub fn is_probing(&self) -> bool {
        self.probing
    }

    /// Whether the estimate was measured with the server's window full of our own units.
    pub(crate) fn is_firm(&self) -> bool {
        self.firm
    }

    /// Starts its hold again: time it did not see (a fleet whose store was down) is not time
    /// held without a throttle, and must not make the next probe a leap.
    pub(crate) fn restart_hold(&mut self) {
        self.held_from = None;
        self.probing = false;
    }

    /// Takes `limit` (for the whole budget) as its estimate when it has none: a fleet member
    /// that falls back to its own control keeps what the fleet learnt.
    pub(crate) fn seed(&mut self, limit: f64, firm: bool) {
        if self.limit.is_none() && limit.is_finite() && limit > 0.0 {
            self.limit = Some(limit);
            self.firm = firm;
            self.held_from = None;
            self.ramp_from = None;
        }
    }

    /// A fixed timing on the controller's clock (divided by its time scale, 1 on the real clock).
    fn timing(&self, t: Duration) -> Duration {
        let k = self.options.time_scale;
        if k == 1.0 { t } else { t.div_f64(k) }
    }

    /// The limiter's age: the controller sees only durations since events, so it adds them up.
    fn age(&self, state: &RateControllerState) -> Duration {
        self.age_at_cut + state.since_last_decrease
    }
}

/// As a [`Controller`], the Pacer controller counts the units the server accepted over the last
/// `QuotaWindow` and the time paused since the last cut itself.
impl Controller for PacerController {
    fn on_options(&mut self, options: &LimiterOptions, now: Timestamp) {
        self.counts.on_options(options, now);
    }

    fn on_response(&mut self, feedback: &Feedback, now: Timestamp) {
        let window = self.counting_window();
        match feedback.signal {
            crate::Signal::Success => {
                self.bare.accepted(feedback.units as f64, now, window);
                self.accepted_in_learnt(feedback.units as f64, now);
                self.note_late(feedback.units as f64, feedback.sent_at, now);
            }
            crate::Signal::Throttled { retry_after } => {
                self.boundaries.throttled(now, retry_after, window);
            }
            crate::Signal::Neutral => {}
        }
        self.counts.on_response(feedback, now);
    }

    fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        self.counts.on_pause(from, until);
    }

    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        self.unlearn_on(cx);
        let cx = &self.seen(cx);
        let mut state = self.state_at(cx);
        if let Some(since) = self.since_boundary(cx) {
            state.accepted_per_minute = since;
        }
        self.bare_pace = self.leak(cx);
        self.unlearn_for_bucket();
        let rate = RateController::on_throttled(self, &state);
        if let Some(young) = &mut self.young {
            young.at = Some(cx.now);
        }
        self.counts.on_cut(cx);
        self.learn_window(cx);
        rate
    }

    fn on_success(&mut self, cx: &ControllerContext) -> Option<f64> {
        if self.suspended.is_none() && self.young.is_none() && !(cx.waited || cx.queued_units > 0.0)
        {
            // Nothing waits and no lapse or young throttle is pending (most successes): all
            // the success does is what `climb_hold_or_probe` does before it finds no demand,
            // the demonstrated rate, read without building the whole state.
            self.note_demonstrated(
                self.age_at_cut + cx.since_last_decrease,
                cx.instance_count,
                self.window_of(cx),
                self.accepted_per_minute(cx.now),
            );
            return None;
        }
        let state = self.state_at(&self.seen(cx));
        let shorter = self.young_says_shorter(&state);
        let rate = RateController::on_success(self, &state);
        if shorter {
            self.learn_young_window(cx, self.age(&state));
        }
        rate
    }

    fn cuts_again(&mut self, cx: &ControllerContext, sent_at: Timestamp) -> bool {
        let cx = &self.seen(cx);
        self.cut_fell_short(cx, sent_at)
    }

    fn server_window(&self) -> Option<Duration> {
        self.learnt_window()
    }

    fn memory(&self) -> crate::ControllerMemory {
        crate::ControllerMemory::new(self.limit, self.firm).with_window(self.learnt_window())
    }

    fn recall(&mut self, memory: &crate::ControllerMemory, now: Timestamp) {
        if let Some(limit) = memory.limit {
            self.seed(limit, memory.firm);
            // Not young: the server's window holds the earlier process's units, not only ours
            // since we started, so a first throttle is read as any other.
            self.age_at_cut = self.age_at_cut.max(self.counts.quota_window());
        }
        if let Some(window) = memory.window {
            self.recall_window(window, now);
        }
    }
}

impl RateController for PacerController {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        self.cut(state)
    }

    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        self.climb_hold_or_probe(state)
    }
}

#[cfg(test)]
mod tests;

/// The rate really sent: the lower of the rate and the measured send rate (the rate until one
/// is measured).
fn sent_rate(rate: f64, measured_send_rate: Option<f64>) -> f64 {
    measured_send_rate.map_or(rate, |m| rate.min(m))
}

//! Pacer's own controller: learn where the limit is, hold just under it, probe rarely.
//!
//! AIMD and CUBIC both forget the limit the moment they cut: AIMD climbs back in small steps and
//! spends most of its time well below the limit; CUBIC races back to its maximum and finds the
//! limit again by a throttle, again and again. The limiter knows more than either uses: how many
//! units the server accepted over its quota window (at a throttle, with the window full of our own
//! units, that *is* the limit), the Retry-After, and whether requests wait. This controller keeps
//! that estimate and holds the rate just under it; it probes above it only after holding long
//! without a throttle, and less often each time a probe finds nothing new.

use super::{RateController, RateControllerState};
use crate::validation::{Checker, InvalidOptions, format_duration};
use std::time::Duration;

// The fixed timings below are for the default one-minute `QuotaWindow`; with another window each
// is scaled in proportion (see `in_window`).

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
/// How long a limit that fell is remembered as one that may come back.
const CEILING_MEMORY: Duration = Duration::from_secs(600);
/// The window the timings above are for.
const MINUTE: Duration = Duration::from_secs(60);

/// `timing` (meant for a one-minute quota window) for the window `window`.
fn in_window(timing: Duration, window: Duration) -> Duration {
    if window == MINUTE {
        timing
    } else {
        timing.mul_f64(window.as_secs_f64() / MINUTE.as_secs_f64())
    }
}

/// Options of the [`PacerController`] (`Pacer.*` in configuration).
///
/// Rates here are fractions of the limit estimate, so nothing depends on the size of the quota.
/// Durations for probing are for one instance: with `InstanceCount` = n, each process waits n
/// times as long before it probes (each probe costs every instance a 429 or so, so the whole
/// budget probes at one pace).
///
/// The defaults suit a server that counts its quota per minute (`QuotaWindow` = 1 min). The
/// controller's fixed timings (a second between two increases, a probe's step doubling every
/// 15 s, a Retry-After of 5 s or more counting as long, a fallen limit remembered 10 minutes)
/// scale with `QuotaWindow` by themselves; for a much longer or shorter window, scale these
/// durations in proportion too.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PacerControllerOptions {
    /// `Pacer.HoldMargin`: the rate holds this fraction under the limit estimate. Default 0.015;
    /// strictly between 0 and 1.
    pub hold_margin: f64,
    /// `Pacer.CutMargin`: a throttle near the estimate sets the rate this fraction under the new
    /// estimate. Default 0.05; strictly between 0 and 1.
    pub cut_margin: f64,
    /// `Pacer.DecreaseFactor`: a throttle far above the estimate (a climb that ran ahead of the
    /// server's window) multiplies the rate by this, or cuts to the estimate less `CutMargin` if
    /// that is lower. Default 0.7 (AIMD's); strictly between 0 and 1.
    pub decrease_factor: f64,
    /// `Pacer.StartGrowth`: while no limit is known, the rate grows by this fraction each second
    /// that requests wait … Default 0.25; greater than 0.
    pub start_growth: f64,
    /// `Pacer.Lead`: … but never to more than this many times the units per minute the server
    /// accepted over the last `QuotaWindow` (in the first window, the units since the start,
    /// scaled to a whole window).
    /// Default 1.25; greater than 1.
    pub lead: f64,
    /// `Pacer.ProbeAfter`: how long the rate holds without a throttle before it probes above the
    /// estimate, for one instance. Default 2 min.
    pub probe_after: Duration,
    /// `Pacer.MaxProbeAfter`: each probe that finds no more room doubles the hold before the
    /// next, up to this, for one instance. Default 15 min.
    pub max_probe_after: Duration,
    /// `Pacer.RecoveryProbeAfter`: after the limit fell (the estimate dropped by a fifth or more),
    /// how long the rate holds before it probes back toward the limit it had, for one instance
    /// (`√n` times this for n instances). Default 40 s.
    pub recovery_probe_after: Duration,
    /// `Pacer.RecoveryTime`: how long a climb back takes: to the hold after a cut (in a line),
    /// and to the remembered limit when probing after a fall. Default 30 s.
    pub recovery_time: Duration,
}

impl Default for PacerControllerOptions {
    fn default() -> Self {
        PacerControllerOptions {
            hold_margin: 0.015,
            cut_margin: 0.05,
            decrease_factor: 0.7,
            start_growth: 0.25,
            lead: 1.25,
            probe_after: Duration::from_secs(120),
            max_probe_after: Duration::from_secs(900),
            recovery_probe_after: Duration::from_secs(40),
            recovery_time: Duration::from_secs(30),
        }
    }
}

impl PacerControllerOptions {
    /// Checks every option; the error names each one that is out of range (as `HoldMargin`; the
    /// limiter's options prefix it with `Pacer.`).
    pub fn validate(&self) -> Result<(), InvalidOptions> {
        let mut c = Checker::new();
        c.fraction("HoldMargin", self.hold_margin);
        c.fraction("CutMargin", self.cut_margin);
        c.fraction("DecreaseFactor", self.decrease_factor);
        c.positive("StartGrowth", self.start_growth);
        if self.lead.is_finite() {
            c.relation(
                self.lead > 1.0,
                "Lead",
                self.lead,
                "must be greater than 1".into(),
            );
        } else {
            c.positive("Lead", self.lead);
        }
        c.nonzero_duration("ProbeAfter", self.probe_after);
        c.relation(
            self.max_probe_after >= self.probe_after,
            "MaxProbeAfter",
            format_duration(self.max_probe_after),
            format!(
                "must be at least ProbeAfter ({})",
                format_duration(self.probe_after)
            ),
        );
        c.nonzero_duration("RecoveryProbeAfter", self.recovery_probe_after);
        c.nonzero_duration("RecoveryTime", self.recovery_time);
        c.finish()
    }
}

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
///   the window, whose early units will leave slowly — it is multiplied by `DecreaseFactor` (0.7)
///   or set to the estimate less `CutMargin`, the lower. Then it climbs back to the hold in a
///   line over `RecoveryTime` (30 s).
/// - **The hold.** The rate holds at the estimate less `HoldMargin` (1.5 %).
/// - **The probe.** After `ProbeAfter` (2 min × instances) at the hold with requests waiting
///   and no throttle, the rate probes above: 2 % at first, the step doubling every 15 s. A probe
///   that ends in a throttle without finding more room doubles the next wait (up to
///   `MaxProbeAfter`).
/// - **A fall.** When a throttle's estimate is a fifth or more below the last one, the limit
///   fell (a neighbour took part of it, the server cut it). While the last one was only our
///   demand (or there was none), the fall is measured from the most the server accepted over a
///   window without a throttle, if that is higher: the limit was at least that. The old limit is
///   remembered for 10 minutes; the controller probes back toward it every `RecoveryProbeAfter`
///   (40 s × √n), reaching it in `RecoveryTime` if nothing throttles. Reached without a
///   throttle, it is the estimate again (if it was ever a real limit, not just our demand).
/// - **A stop.** A `Retry-After` longer than `QuotaWindow` cannot be our own units leaving the
///   server's window (they would be gone before it ends): it is maintenance or a penalty, and
///   says nothing of the limit. The estimate stays, and the rate comes back at the hold (or
///   where it was, if lower).
/// - **Before any throttle**, the rate grows by `StartGrowth` (25 %) a second while requests
///   wait, but never above `Lead` (1.25) times what the server accepted in the last minute: fast
///   from a cold start, gentle after a long quiet spell.
/// - It never climbs unless requests wait and the demand uses at least 80 % of the rate.
///
/// In the simulator's default comparison it takes 91–98 % of the quota in every story where AIMD
/// takes 86–91 %, with fewer 429s (`docs/controllers.md` has the figures, the spread over seeds
/// and instance counts, and where it loses).
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
#[derive(Debug, Clone)]
pub struct PacerController {
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
}

#[derive(Debug, Clone, Copy)]
struct Ceiling {
    limit: f64,
    firm: bool,
    at: Duration,
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
            held_from: None,
            probe_after: options.probe_after,
            probing: false,
            ramp_from: None,
            age_at_cut: Duration::ZERO,
            instances: None,
        }
    }

    /// The controller's options.
    #[must_use]
    pub fn options(&self) -> &PacerControllerOptions {
        &self.options
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

    /// The limiter's age: the controller sees only durations since events, so it adds them up.
    fn age(&self, state: &RateControllerState) -> Duration {
        self.age_at_cut + state.since_last_decrease
    }

    /// The units accepted over the last window as this process's share: within a window of a
    /// change of the instance count, scaled by `before / now` (that window was another share).
    fn accepted_share(&mut self, state: &RateControllerState) -> f64 {
        let (share, instances) = self.share_of(state);
        self.instances = Some(instances);
        share
    }

    /// [`accepted_share`](Self::accepted_share) without noting a change of the instance count:
    /// the share, and the counts and the age of the change as they would be noted.
    fn share_of(&self, state: &RateControllerState) -> (f64, (u32, u32, Duration)) {
        let age = self.age(state);
        let n = state.instance_count.max(1);
        let (now, before, at) = match self.instances {
            Some((last, _, _)) if last != n => (n, last, age),
            Some(seen) => seen,
            None => (n, n, age),
        };
        let share = if before != now && age.saturating_sub(at) < state.quota_window {
            state.accepted_per_minute * f64::from(before) / f64::from(now)
        } else {
            state.accepted_per_minute
        };
        (share, (now, before, at))
    }

    /// The new wait before a probe, after a throttle.
    fn next_probe_after(&self, t: &Throttle) -> Duration {
        let o = &self.options;
        if t.probing {
            if self.ceiling.is_some() {
                o.recovery_probe_after
            } else if t
                .previous
                .is_some_and(|l| t.estimate > l * (1.0 + o.cut_margin))
            {
                // The probe found more room: the limit moves, keep an eye on it.
                o.probe_after
            } else {
                (self.probe_after * 2).min(o.max_probe_after)
            }
        } else if t.fell {
            o.recovery_probe_after
        } else if t.previous.is_some() {
            self.probe_after
        } else if t.saturated && (t.age >= t.window || t.long_pause) {
            o.probe_after
        } else {
            // The first throttle met us below our rate (the limit fell below our demand, for
            // all we know for a moment), or came within our first window while the server's
            // window already let units go (a short Retry-After: it is older than we are, and
            // our part-window of units understates our share): look again soon.
            o.recovery_probe_after
        }
    }
}

/// What a throttle says, worked out once.
struct Throttle {
    estimate: f64,
    previous: Option<f64>,
    probing: bool,
    saturated: bool,
    long_pause: bool,
    fell: bool,
    age: Duration,
    window: Duration,
}

impl RateController for PacerController {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        let o = self.options;
        let n = f64::from(state.instance_count.max(1));
        self.accepted_share(state);
        self.age_at_cut += state.since_last_decrease;
        self.held_from = None;
        if state.retry_after.is_some_and(|r| r > state.quota_window) {
            // A stop longer than the server's window: our own units would have left the window
            // before it ends, so it is not the limit speaking (maintenance, a penalty) and the
            // units accepted say nothing of the limit. Keep the estimate and come back at the
            // hold, or where we were if lower.
            self.probing = false;
            self.ramp_from = None;
            return match self.limit_estimate(state.instance_count) {
                Some(l) => state.rate.min(l * (1.0 - o.hold_margin)),
                None => state.rate,
            }
            .max(state.min_rate);
        }
        let estimate = if state.accepted_per_minute > 0.0 {
            state.accepted_per_minute
        } else {
            state
                .measured_send_rate
                .map_or(state.rate, |m| state.rate.min(m))
        };
        let previous = self.limit_estimate(state.instance_count);
        // While the estimate was only our demand (or there was none), the server has shown that
        // it accepts more: a fall is measured from the higher of the two (whole budget).
        let demonstrated = if self.firm { 0.0 } else { self.demonstrated };
        let reference = previous.map_or(0.0, |l| l * n).max(demonstrated);
        let t = Throttle {
            estimate,
            previous,
            probing: std::mem::replace(&mut self.probing, false),
            // Did we fill the window? Requests waited, or we sent faster than the window's
            // average — unless the window holds a twentieth less than the server accepted before
            // without a throttle: then the limit came down to meet our demand, and a burst of it
            // measures nothing.
            saturated: state.queued_units > 0.0
                || (state
                    .measured_send_rate
                    .is_some_and(|m| m > estimate * (1.0 + FALL_BAND / 4.0))
                    && estimate * n >= demonstrated * (1.0 - FALL_BAND / 4.0)),
            long_pause: state
                .retry_after
                .is_some_and(|r| r >= in_window(LONG_PAUSE, state.quota_window)),
            fell: estimate * n < reference * (1.0 - FALL_BAND),
            age: self.age_at_cut,
            window: state.quota_window,
        };
        if self
            .ceiling
            .is_some_and(|c| t.age.saturating_sub(c.at) > in_window(CEILING_MEMORY, t.window))
        {
            self.ceiling = None;
        }
        self.probe_after = self.next_probe_after(&t);
        if t.fell {
            // Remember the higher limit: it may come back.
            let firm = match self.ceiling {
                Some(c) if c.limit > reference => c.firm,
                _ => self.firm,
            };
            let limit = self.ceiling.map_or(reference, |c| c.limit.max(reference));
            self.ceiling = Some(Ceiling {
                limit,
                firm,
                at: t.age,
            });
        }
        self.limit = Some(estimate * n);
        self.firm = t.probing || t.saturated;
        if self.firm {
            self.demonstrated = 0.0;
        }
        let near = state.rate <= estimate * (1.0 + NEAR_BAND);
        let cut = if t.probing || t.long_pause || near {
            state.rate.min(estimate) * (1.0 - o.cut_margin)
        } else {
            (state.rate * o.decrease_factor).min(estimate * (1.0 - o.cut_margin))
        }
        .max(state.min_rate);
        // Someone else's probe or an overload: climb back in a line. After our own probe the
        // window is full of a flat hold: back at once.
        self.ramp_from = (!t.probing).then_some(cut.min(state.rate));
        cut
    }

    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        let o = self.options;
        let n = f64::from(state.instance_count.max(1));
        let demand = state.waited || state.queued_units > 0.0;
        let used = state
            .measured_send_rate
            .is_none_or(|m| m >= UTILISATION * state.rate);
        let window = state.quota_window;
        if !self.firm {
            self.demonstrated = self.demonstrated.max(self.share_of(state).0 * n);
        }
        if !demand || !used || state.since_last_increase < in_window(CLIMB_INTERVAL, window) {
            return None;
        }
        let Some(limit) = self.limit_estimate(state.instance_count) else {
            // Within the first window, the units since the start stand for a whole window's.
            let counted = self
                .age(state)
                .min(window)
                .max(in_window(CLIMB_INTERVAL, window))
                .as_secs_f64();
            let lead_cap = o.lead * self.accepted_share(state) * window.as_secs_f64() / counted;
            let next = (state.rate * (1.0 + o.start_growth)).min(lead_cap);
            return (next > state.rate).then_some(next);
        };
        let hold = limit * (1.0 - o.hold_margin);
        if state.rate < hold * 0.999 && !self.probing {
            let next = match self.ramp_from {
                Some(from) => {
                    let f = state.since_last_decrease_unpaused.as_secs_f64()
                        / o.recovery_time.as_secs_f64();
                    from + (hold - from).max(0.0) * f.min(1.0)
                }
                None => state.rate + ((hold - state.rate) * CLIMB_FRACTION).max(state.rate * 0.005),
            };
            return (next > state.rate).then_some(next.min(hold));
        }
        let held_from = *self.held_from.get_or_insert(state.since_last_decrease);
        let held = state.since_last_decrease.saturating_sub(held_from);
        let wait = if self.ceiling.is_some() {
            self.probe_after.mul_f64(n.sqrt())
        } else {
            self.probe_after.mul_f64(n)
        };
        if held < wait {
            return None;
        }
        self.probing = true;
        let since = (held - wait).as_secs_f64();
        let steps = since / in_window(PROBE_DOUBLING, window).as_secs_f64();
        let mut probe = hold * (1.0 + PROBE_START * (steps.exp2() - 1.0));
        if let Some(c) = self.ceiling {
            let ceiling = c.limit / n;
            let f = (since / o.recovery_time.as_secs_f64()).min(1.0);
            probe = probe.max(hold + (ceiling - hold).max(0.0) * f * f);
            let back = ceiling * (1.0 - o.hold_margin);
            if probe >= back {
                // Back at the limit we had before it fell, without a throttle.
                self.ceiling = None;
                self.probing = false;
                self.held_from = None;
                self.probe_after = o.recovery_probe_after;
                self.firm = c.firm;
                // A firm one is the estimate again; one only our demand ever reached says
                // nothing of the limit above it.
                self.limit = c.firm.then_some(c.limit);
                return (back > state.rate).then_some(back);
            }
        }
        (probe > state.rate).then_some(probe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_fixed_timings_follow_the_quota_window() {
        // The same story told on a 6 s window (a server 10 times faster): every timing is a
        // tenth, so the rates match at the matching times.
        for (window, scale) in [(60u64, 1.0), (6, 0.1)] {
            let w = Duration::from_secs(window);
            let at = |secs: f64| Duration::from_secs_f64(secs * scale);
            let mut c = PacerController::new(PacerControllerOptions {
                probe_after: at(120.0),
                max_probe_after: at(900.0),
                recovery_probe_after: at(40.0),
                recovery_time: at(30.0),
                ..PacerControllerOptions::default()
            })
            .unwrap();
            let mut s = busy(1050.0);
            s.quota_window = w;
            s.accepted_per_minute = 1000.0;
            s.since_last_decrease = at(120.0);
            s.since_last_increase = at(1.0);
            let _ = c.on_throttled(&s);
            // Half a second (of the minute's timings) after the last change: too soon.
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
            let mut fresh = PacerController::default();
            assert_eq!(fresh.on_throttled(&t), 950.0, "{window} s: a long pause");
        }
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
}

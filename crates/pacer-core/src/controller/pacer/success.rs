//! The Pacer controller on a success: the start's growth, the climb back to the hold, the hold,
//! and the probe above it (and back toward a limit that fell).

use super::{
    CLIMB_FRACTION, CLIMB_INTERVAL, PROBE_DOUBLING, PROBE_START, PacerController, UTILISATION,
};
use crate::controller::RateControllerState;

impl PacerController {
    /// [`RateController::on_success`](crate::RateController::on_success): the new rate, if it
    /// moves.
    pub(super) fn climb_hold_or_probe(&mut self, state: &RateControllerState) -> Option<f64> {
        let o = self.options;
        let n = f64::from(state.instance_count.max(1));
        let demand = state.waited || state.queued_units > 0.0;
        let used = state
            .measured_send_rate
            .is_none_or(|m| m >= UTILISATION * state.rate);
        let window = state.quota_window;
        if let Some(s) = self.suspended.filter(|s| self.age(state) >= s.until) {
            // A window of units sent after the pause, and no throttle: the limit came back.
            self.suspended = None;
            if self.limit.is_some_and(|l| l < s.limit) {
                self.limit = Some(s.limit);
                self.firm = s.firm;
                self.held_from = None;
            }
        }
        let jump = self.read_young_throttle(state);
        self.note_demonstrated(
            self.age(state),
            state.instance_count,
            state.quota_window,
            state.accepted_per_minute,
        );
        if let Some(pace) = jump.filter(|&p| demand && p > state.rate) {
            return Some(pace);
        }
        if !demand || !used || state.since_last_increase < self.timing(CLIMB_INTERVAL) {
            return None;
        }
        let Some(limit) = self.limit_estimate(state.instance_count) else {
            // Within the first window, the units since the start stand for a whole window's.
            let counted = self
                .age(state)
                .min(window)
                .max(self.timing(CLIMB_INTERVAL))
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
        let steps = since / self.timing(PROBE_DOUBLING).as_secs_f64();
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
                // Held like any estimate: the next probe after `ProbeAfter`. Probing again after
                // `RecoveryProbeAfter` sent the instances of the quota cut over the limit
                // together soon after they were back. It found more room only because the limit
                // remembered was the lapse's count, a little under the quota; the estimate the
                // lapse set aside (above) is closer to it. (The figures are in
                // docs/research/controllers-experiments.md.)
                self.probe_after = o.probe_after;
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

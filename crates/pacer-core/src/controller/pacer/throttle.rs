//! The Pacer controller on a throttle: what the window held (the estimate), whether the limit
//! fell, the cut, and where the climb back starts.

use super::memory::{Ceiling, Peak, Suspended, Young};
use super::probe::Throttle;
use super::young::young_pace;
use super::{
    AGAIN, CEILING_MEMORY, FALL_BAND, LONG_PAUSE, NEAR_BAND, PEAK_HELD, PacerController,
    STEPPED_FALL_BAND, STEPPED_FALL_STEPS, STEPPED_FALL_WINDOWS, sent_rate,
};
use crate::controller::RateControllerState;
use std::time::Duration;

impl PacerController {
    /// [`RateController::on_throttled`](crate::RateController::on_throttled): the cut rate.
    pub(super) fn cut(&mut self, state: &RateControllerState) -> f64 {
        let o = self.options;
        let n = f64::from(state.instance_count.max(1));
        self.accepted_share(state);
        let last_cut = self.age_at_cut;
        self.age_at_cut += state.since_last_decrease;
        // The instance count changed within a window, before the last cut: it was noticed on a
        // success, which notes it only while there is no estimate (with one, only a throttle
        // does), so the budget had not met the limit when it grew.
        let joined_below = self.instances.is_some_and(|(now, before, at)| {
            now != before
                && at < last_cut
                && self.age_at_cut.saturating_sub(at) < state.quota_window
        });
        self.held_from = None;
        // An estimate a lapse set aside, while its window runs: the limit we had before it.
        let lapsed = self.suspended.take().filter(|s| self.age_at_cut < s.until);
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
        // What was really going out: a rate the demand did not use measures no overload.
        let sent = sent_rate(state.rate, state.measured_send_rate);
        let long_pause = state
            .retry_after
            .is_some_and(|r| r >= self.timing(LONG_PAUSE));
        let mut estimate = if state.accepted_per_minute > 0.0 {
            state.accepted_per_minute
        } else {
            sent
        };
        if let Some(pace) = young_pace(state, self.age_at_cut) {
            estimate = estimate.max(pace);
        }
        // A limit that fell in steps, each under `FALL_BAND` (a crowd that grew a few processes
        // at a time), fell all the same: measured from the highest level a throttle found held,
        // within `STEPPED_FALL_WINDOWS` windows and at least `STEPPED_FALL_STEPS` throttles
        // after the one that ended it (a crowd's units fill the server's window as it comes, a
        // few percent a throttle; a slower slide, or one in a swing or two, is two processes'
        // shares of a bucket trading places). Not from one held before a change of the instance
        // count, nor in `CEILING_MEMORY` after it: a count over a window of the old share, times
        // the new count, is no level the whole budget held.
        let memory = self.timing(CEILING_MEMORY);
        let stepped_span = memory.min(state.quota_window * STEPPED_FALL_WINDOWS);
        let changed = self
            .instances
            .filter(|&(now, before, _)| now != before)
            .map_or(Duration::ZERO, |(_, _, at)| at + memory);
        // The level, while it counts (a run of bare throttles, below, is read against it too).
        let level = self
            .peak
            .filter(|p| p.at >= changed && self.age_at_cut.saturating_sub(p.at) <= stepped_span);
        // A run of bare throttles that took less than a sliding window gives back: the server
        // leaks at its pace, and the window's count held the slack a bucket let through as it
        // filled. Slack, not a limit that fell: no new limit to probe back toward (one
        // remembered from a fall stays: probing back toward it while the quota is still cut
        // meets such runs too). But a pace a fifth or more under a level the limit held for
        // `PEAK_HELD` is no bucket's slack: a bucket does not leak that much slower than it let
        // us send for a minute unless its rate was cut, and a sliding window that a neighbour
        // or a cut filled accepts a fraction of what it let through until it turns over. The
        // estimate is then the run's pace, and a fall is measured below as at any throttle.
        // The level outlives a run within a fifth of it: a neighbour's units fill a window as
        // it comes, and the first run may take most of what the level did, the next far less.
        let slack = match self.bare_pace.take() {
            Some(pace) if pace < estimate => {
                estimate = pace;
                !level.is_some_and(|p| pace * n < p.limit * (1.0 - FALL_BAND))
            }
            _ => false,
        };
        let previous = self.limit_estimate(state.instance_count);
        // The first estimate is what the server's window held then (a bucket that starts full
        // lets a window's quota through on top of its pace): the next throttle that finds less
        // corrects it, no limit that fell to probe back toward every 57 s for 10 minutes. A long
        // Retry-After with either says the limit moved: then it stands as a reference.
        let unconfirmed = std::mem::take(&mut self.unconfirmed) && !long_pause;
        // While the estimate was only our demand (or there was none), the server has shown that
        // it accepts more: a fall is measured from the higher of the two (whole budget). Within
        // a lapse's window, from the estimate it set aside: the lapse's own count was only our
        // hold, a little under it, and remembered as the limit that may come back it would hold
        // the budget that much under the quota once it does (the quota cut, seed 4, 2
        // instances: 2,872 remembered instead of 2,968).
        // Nor, then, is the most the server accepted over a window before it: a bucket's first
        // window shows its whole size on top of its pace.
        let demonstrated = if self.firm || unconfirmed {
            0.0
        } else {
            self.demonstrated
        };
        let set_aside = lapsed.map_or(0.0, |s| s.limit);
        let reference = previous
            .filter(|_| !unconfirmed)
            .map_or(0.0, |l| l * n)
            .max(demonstrated)
            .max(set_aside);
        // A fall in steps is measured from the level only when it is above the reference, one
        // throttle older.
        let peak = level.filter(|p| p.limit > reference).map(|p| Peak {
            steps: p.steps + 1,
            ..p
        });
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
            long_pause,
            fell: !slack
                && (estimate * n < reference * (1.0 - FALL_BAND)
                    || peak.is_some_and(|p| {
                        p.steps >= STEPPED_FALL_STEPS
                            && estimate * n < p.limit * (1.0 - STEPPED_FALL_BAND)
                    })),
            age: self.age_at_cut,
            window: state.quota_window,
        };
        if self
            .ceiling
            .is_some_and(|c| t.age.saturating_sub(c.at) > self.timing(CEILING_MEMORY))
        {
            self.ceiling = None;
        }
        self.probe_after = self.next_probe_after(&t);
        self.confirm_probe_room(&t);
        if t.fell {
            // Remember the higher limit: it may come back.
            let (reference, firm) = match peak {
                Some(p) => (p.limit, true),
                None => (reference, self.firm),
            };
            let firm = match (self.ceiling, lapsed) {
                (Some(c), _) if c.limit > reference => c.firm,
                (_, Some(s)) if s.limit >= reference => s.firm,
                _ => firm,
            };
            let limit = self.ceiling.map_or(reference, |c| c.limit.max(reference));
            self.ceiling = Some(Ceiling {
                limit,
                firm,
                at: t.age,
            });
        }
        self.peak = if t.fell {
            None
        } else if peak.is_some() {
            peak
        } else if slack {
            level
        } else {
            // A firm estimate that a throttle confirmed and that held for `PEAK_HELD`: a young
            // burst's, a bucket's first window's or our demand's is no level the limit fell
            // from, nor one two processes of a bucket trade back and forth between throttles.
            // A first estimate is confirmed by a throttle that finds no fall from it (a
            // bucket's first window, on top of its pace, is found a fifth or more too high):
            // the level is then the lower of the two. The level kept stays if it is higher: a
            // probe's estimate above it is none until it has held a minute (a neighbour that
            // comes within that minute meets the level as it was).
            let held = previous
                .filter(|&l| {
                    self.firm
                        && (!unconfirmed || estimate >= l * (1.0 - FALL_BAND))
                        && state.since_last_decrease >= self.timing(PEAK_HELD)
                })
                .map(|l| Peak {
                    limit: if unconfirmed { l.min(estimate) } else { l } * n,
                    at: t.age,
                    steps: 0,
                });
            match (held, level) {
                (Some(h), Some(l)) if l.limit > h.limit => Some(l),
                (held, level) => held.or(level),
            }
        };
        if let (Some(p), Some(limit)) = (previous, self.limit)
            && t.long_pause
            && !t.probing
            && !t.fell
            && estimate < p
            && state.rate <= p
        {
            // The window held more than the limit by seconds of units, though we sent no faster
            // than the estimate allowed: the limit moved (a neighbour came, the server cut the
            // quota), and the units accepted are only our own hold, a little under the estimate.
            // Taken as the limit, each such throttle would lower the hold by its margin for
            // good. If it stayed down, the next throttle comes within a window of the pause's
            // end (its hole comes round, and the window fills with our units); if none does,
            // the estimate comes back.
            self.suspended = Some(Suspended {
                limit,
                firm: self.firm,
                until: t.age + state.retry_after.unwrap_or_default() + state.quota_window,
            });
        }
        self.unconfirmed = previous.is_none() && !t.long_pause && t.age >= t.window;
        self.limit = Some(estimate * n);
        self.firm = t.probing || t.saturated;
        if self.firm {
            self.demonstrated = 0.0;
        }
        let near = state.rate <= estimate * (1.0 + NEAR_BAND);
        // The budget grew while we were under the limit (a scale-out: one instance's demand,
        // then more instances asking for more than the quota). The server's window still holds
        // units sent at the old, slower pace, and until they leave, the room is only what they
        // free, less than the two shallow cuts leave: the window fills again within seconds,
        // where AIMD, still climbing, is not throttled. A second throttle this soon after a cut
        // says so: cut like AIMD. (docs/controllers.md, the scale-out story, has the figures.)
        let again = joined_below
            && previous.is_some()
            && !t.probing
            && !t.long_pause
            && state.since_last_decrease < self.timing(AGAIN);
        // A throttle without a Retry-After before we are a window old, with the window full of
        // our units: they all came since we started, so none leaves the server's window before
        // we are a window old, and every request until then is refused (a server that sent a
        // Retry-After would have said so). Send as little as we may until the first units
        // leave, then climb back in a line as they do.
        let full_young = state.retry_after.is_none() && t.age < t.window;
        // A second young throttle before a success read the first comes at the rate the first
        // cut to (the minimum): what went out then says nothing of what the server took, and
        // the first one's send rate stands as the cap (a server that counts its refusals too,
        // as HAProxy's stick tables do, refuses a while after a burst).
        let sent_before = self.young.take().map(|y| y.sent);
        self.young = (full_young && !t.age.is_zero()).then(|| {
            let sent = state.measured_send_rate.unwrap_or(state.rate);
            Young {
                accepted: estimate,
                sent: sent_before.map_or(sent, |before| before.max(sent)),
                age: t.age,
                at: None,
                queued: false,
            }
        });
        // A deep cut from a rate the demand did not use may leave the rate above the limit.
        let cut = if full_young {
            state.min_rate
        } else if (t.probing || t.long_pause || near) && !again {
            state.rate.min(estimate) * (1.0 - o.cut_margin)
        } else {
            (sent * o.decrease_factor).min(estimate * (1.0 - o.cut_margin))
        }
        .max(state.min_rate);
        // Someone else's probe or an overload: climb back in a line. After our own probe the
        // window is full of a flat hold: back at once.
        self.ramp_from = (!t.probing).then_some(cut.min(state.rate));
        cut
    }
}

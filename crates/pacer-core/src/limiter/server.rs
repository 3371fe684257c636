//! Header-aware control: while the server says how much quota is left and when it resets, the
//! limiter's rate follows those numbers; when they stop coming, the controller takes over again.

use super::accepted::QuotaWindowMeter;
use super::cost_ceiling::CostCeiling;
use super::refill::Refill;
use super::server_quota::ServerQuota;
use super::slack::Slack;
use super::{Changes, LimiterCore, RateChangeReason};
use crate::{Feedback, Signal, Timestamp};
use std::time::Duration;

/// Room a sliding window holds beyond what it gives back is spread over the window ÷ this
/// ([`LimiterCore::level_pace`]): 6 s of a minute. Chosen over the simulator's sweep (4 instances,
/// the quota cut's 429s against the long Retry-After's share): 2 s left most of the echo, 10 s
/// gave up more of the room a long stop frees; docs/research/controllers-experiments.md has the
/// figures ("The echo of a stop, and the level rule").
const SURPLUS_SPREAD_DIVISOR: f64 = 10.0;

/// A short window's `remaining: 0` with a reset this near is paced through, not held
/// ([`LimiterCore::pace_through_stop`]): whole-second fields say no less.
const THROUGH_STOP_RESET: Duration = Duration::from_secs(1);

/// What following the server's numbers keeps: the numbers while they are fresh, and what its
/// paces read of every response.
#[derive(Debug, Clone)]
pub(super) struct ServerPace {
    /// The last numbers, while the rate follows them.
    following: Option<Following>,
    /// The largest cost of a request lately (the margin of a short window's pace).
    costs: CostCeiling,
    /// The units the server accepted over the last `QuotaWindow` (what a sliding window gives
    /// back).
    accepted: QuotaWindowMeter,
    /// Whether a short window refills as a bucket does, and the room it leaves.
    refill: Refill,
    /// The units a short window's pace keeps free for the way to the server.
    slack: Slack,
}

impl ServerPace {
    /// Counting over `window` from `now`.
    pub(super) fn new(window: Duration, now: Timestamp) -> Self {
        ServerPace {
            following: None,
            costs: CostCeiling::new(window, now),
            accepted: QuotaWindowMeter::new(window, now),
            refill: Refill::new(window, now),
            slack: Slack::default(),
        }
    }

    /// Counts a response at `now`.
    pub(super) fn record(&mut self, feedback: &Feedback, now: Timestamp) {
        self.costs.record(feedback.units, now);
        match feedback.signal {
            Signal::Success => {
                self.accepted.record(feedback.units as f64, now);
                self.refill.accepted(feedback.units, now);
            }
            Signal::Throttled { .. } => {
                self.slack.throttled(feedback.sent_at, now);
            }
            Signal::Neutral => {}
        }
    }

    /// The limiter's `QuotaWindow` is now `window`.
    pub(super) fn set_window(&mut self, window: Duration, now: Timestamp) {
        self.accepted.set_window(window, now);
    }
}

/// The state of following the server's last numbers.
#[derive(Debug, Clone)]
struct Following {
    /// The numbers are stale from this moment (their reset).
    until: Timestamp,
    /// Responses since the numbers came.
    responses: u32,
    /// This process's share of the policy's pace, to hand the rate back to the controller with.
    handover: Option<f64>,
}

impl LimiterCore {
    /// Sets this process's rate from the server's own numbers: `remaining` spread over the time
    /// to the reset, divided by the instance count (the quota is shared), within `[min, max]`.
    /// The reset is taken half a second early (servers round it up to whole seconds), and at
    /// least half a second away.
    ///
    /// - **The bucket** never holds more than this process's part of what is left (a burst of
    ///   `rate × Burst` must not outrun the server's count).
    /// - **A short window** (the policy's window is at most [`ServerQuota::SHORT_WINDOW`]): the
    ///   rate is this process's share of the policy's pace, less the room every process's
    ///   largest recent request could take at once, `limit / window / n × (1 − n × cost /
    ///   limit)`: paced evenly at that, the fleet never overfills a window of any shape, and
    ///   `remaining`, whose reset is whole seconds and a round trip old, does not steer. The
    ///   room kept grows by a unit a process at each throttle met at that pace, at most once a
    ///   window, and shrinks by one after five minutes without one (the way to the server makes
    ///   an even pace arrive uneven). Two exceptions: a server that refills as a bucket does (its `remaining` stays high through
    ///   a whole window of the even pace, which no window shows) has its room above half
    ///   the limit spent on top, and before the limiter is a window old what is left is spread
    ///   until then (a start's burst sits in the window).
    /// - **Nothing left**: every request is held until the reset (capped by `MaxRetryAfter`),
    ///   and the rate after it is this process's share of the policy's pace (`limit / window`) if
    ///   the server gave one of more than 0 units.
    /// - **A sliding window of `QuotaWindow`** (the policy's window is the limiter's
    ///   `QuotaWindow`): the rate is at most the pace that keeps the window level — this
    ///   process's units leaving it, plus its part of `remaining` over a tenth of the window —
    ///   so that room a stop left is not spent in one burst that the window would give back,
    ///   and take away, a window later.
    /// - **While the numbers are fresh** — until their reset, and for fewer than
    ///   [`ServerQuota::STALE_AFTER_RESPONSES`] responses without new ones — successes do not
    ///   reach the controller: the rate is the server's. A throttle still does (it cuts, and
    ///   pauses for the Retry-After) until the next numbers.
    /// - **When they go stale**, the rate is handed back to the controller at this process's
    ///   share of the policy's pace (or left as it is if the server gave no policy).
    ///
    /// Call it with each response's numbers, before [`on_response`](Self::on_response).
    ///
    /// Without `InitialUnitsPerMinute`, numbers are ignored until they say the quota is nearly
    /// spent ([`ServerQuota::is_near_quota`] at the measured send rate): that is a throttle
    /// signal, which starts the rate at the measured send rate before the numbers set it.
    pub fn follow_server(&mut self, quota: ServerQuota, now: Timestamp) -> Changes {
        let mut changes = Changes::default();
        if !self.control.limiting {
            let n = f64::from(self.instance_count.max(1));
            if !quota.is_near_quota(self.meter.per_minute().map(|r| r * n)) {
                return changes;
            }
            self.start_limiting(now, &mut changes);
        }
        let n = f64::from(self.instance_count.max(1));
        // A policy of no units (a server stopped, announcing its quota as 0) says nothing of
        // the pace after the reset: it neither sets the rate then nor is handed to the controller.
        let policy = quota.policy_pace().filter(|p| *p > 0.0).map(|p| p / n);
        let stop = quota.remaining == 0;
        // This process's part of what the server has left.
        let ours = quota.remaining as f64 / n;
        self.server.following = Some(Following {
            until: now + quota.reset_after.max(ServerQuota::MIN_SPREAD),
            responses: 0,
            handover: policy,
        });
        let through = self.pace_through_stop(&quota, now);
        let target = if let Some(pace) = through {
            pace
        } else if stop {
            let until = (now + quota.reset_after).min(now + self.options.max_retry_after);
            self.extend_pause(until, now, &mut changes);
            policy.unwrap_or(self.rate)
        } else if let Some(pace) = self.short_window_pace(&quota, now) {
            pace
        } else {
            self.server.slack.not_pacing();
            let pace = ours * 60.0 / quota.spread().as_secs_f64();
            match quota.window {
                // The meter covers the server's window: what it will give back is known.
                Some(window) if window == self.options.quota_window => {
                    pace.min(self.level_pace(ours, window, now))
                }
                _ => pace,
            }
        };
        self.set_rate_for(target, RateChangeReason::Server, now, &mut changes);
        // Never more in the bucket than this process's part of what the server has left; paced
        // through a stop, the one unit the pace was accruing for its next request (emptied, the
        // bucket would put that request a whole pace interval later at each such stop).
        let kept = if through.is_some() { 1.0 } else { ours };
        self.bucket.cap_level(kept, now);
        if changes.rate.is_some_and(|c| c.rate < c.previous) || changes.paused_until.is_some() {
            self.reject_unreachable(now, &mut changes);
        }
        changes
    }

    /// The pace that keeps a sliding window level: this process's units leaving the server's
    /// window (what it accepted a window ago, which the window now gives back), plus its part of
    /// what is left, `remaining`, spread over a tenth of the window.
    ///
    /// Spread over the half second to the next departure, as the plain rule does, room a stop
    /// left in the window leaves in one burst, which the window gives back a window later as one
    /// burst again, and the gap after it as a gap: an echo every window, whose every edge meets
    /// requests in flight. Spread over a tenth of the window the burst becomes a ramp and the
    /// gaps close; room the window gives back steadily (a larger policy's units leaving) is in
    /// the first term, and used as it comes. Room spent at the limiter's maximum rate (a quota
    /// that doubles) still comes back as a burst every window: docs/research/controllers-record.md
    /// measures it.
    fn level_pace(&self, remaining: f64, window: Duration, now: Timestamp) -> f64 {
        let surplus_spread = window.as_secs_f64() / SURPLUS_SPREAD_DIVISOR;
        self.server.accepted.leaving_per_minute(now) + remaining * 60.0 / surplus_spread
    }

    /// In a window of at most [`ServerQuota::SHORT_WINDOW`], this process's share of the
    /// policy's pace less the room every process's largest request could take at once:
    /// `limit / window / n × (1 − n × (largest cost + slack) / limit)`. Paced evenly at that,
    /// the fleet's units in any window of the policy's length stay within its limit whatever its
    /// shape — sliding, fixed, bucket or GCRA — so no `remaining` is needed to stay under it.
    /// The slack is what the throttles met at this pace taught ([`Slack`]): an even pace reaches
    /// the server uneven when each request takes its own time to get there.
    ///
    /// `remaining` cannot steer in such a window: its reset comes in whole seconds, which is most
    /// of the window, and the numbers are a round trip old, a large part of it. Spreading
    /// `remaining` over the half second a reset of `t = 1` means keeps a sliding window at
    /// `w / (w + 0.5 s)` of its quota (67 % at 1 s). `None` when the window is longer, the
    /// policy is not known, or a request could take a whole share.
    ///
    /// On top: the room a bucket or GCRA shows above half its size ([`Refill`]), spent over a
    /// window. And before the limiter is a window old, at most what is left less the margin,
    /// this process's part, over the time until then: every unit in the window was sent since
    /// the start and none leaves before, so a start's burst would overfill it under the even
    /// pace.
    fn short_window_pace(&mut self, quota: &ServerQuota, now: Timestamp) -> Option<f64> {
        let window = quota.window.filter(|w| *w <= ServerQuota::SHORT_WINDOW)?;
        let limit = quota.limit.filter(|l| *l > 0)?;
        let n = f64::from(self.instance_count.max(1));
        let room = self
            .server
            .refill
            .room(quota.remaining, limit, window, n, now);
        let limit = limit as f64;
        let cost = self.server.costs.largest(now) as f64;
        let slack = self.server.slack.units(limit / n, cost, now);
        let margin = 1.0 - n * (cost + slack) / limit;
        if margin <= 0.0 {
            return None;
        }
        let pace = (limit / n * margin + room) * 60.0 / window.as_secs_f64();
        // Before the limiter is a window old, every unit in the server's window is one sent
        // since the start, none leaves before then: what is left lasts until then.
        let age = now.saturating_duration_since(self.control.created_at());
        self.server.slack.pacing(window, now);
        Some(match window.checked_sub(age) {
            Some(left) if !left.is_zero() => {
                let first = (quota.remaining as f64 - n * cost).max(0.0) / n;
                pace.min(first * 60.0 / left.as_secs_f64())
            }
            _ => pace,
        })
    }

    /// Nothing left in a short window that this process paces evenly, with a reset of a second
    /// or less: the short window's pace, and no hold (`None`: something is left, or hold until
    /// the reset).
    ///
    /// At the even pace the window is never full as the requests leave; it is full as they
    /// arrive when their ways to the server bunch them, and then a unit leaves it within a pace
    /// interval. The reset says no more: whole-second fields round any wait to a second, most of
    /// such a window, and held until it a process lost that second each time
    /// (docs/research/controllers-record.md, "When the way to the server varies"). The bucket
    /// keeps at most one unit, so that what follows goes at the pace and no faster; a window
    /// really spent (a fixed window's boundary further off, another client's burst) answers it
    /// with a throttle and its `Retry-After`, which pauses as any throttle does. A longer reset
    /// is held, and so is a stop before the limiter is a window old (a start's burst fills the
    /// window until then).
    fn pace_through_stop(&mut self, quota: &ServerQuota, now: Timestamp) -> Option<f64> {
        let window = quota.window.filter(|w| *w <= ServerQuota::SHORT_WINDOW)?;
        let age = now.saturating_duration_since(self.control.created_at());
        if quota.remaining > 0 || age < window || quota.reset_after > THROUGH_STOP_RESET {
            return None;
        }
        self.short_window_pace(quota, now)
    }

    /// Whether the rate follows the server's numbers at `now`.
    #[must_use]
    pub fn is_following_server(&self, now: Timestamp) -> bool {
        self.server
            .following
            .as_ref()
            .is_some_and(|f| now < f.until && f.responses < ServerQuota::STALE_AFTER_RESPONSES)
    }

    /// Counts a response against the server's numbers and, once they are stale, hands the rate
    /// back to the controller. Returns whether they are still fresh.
    pub(super) fn follow_or_hand_over(&mut self, now: Timestamp, changes: &mut Changes) -> bool {
        let Some(f) = self.server.following.as_mut() else {
            return false;
        };
        f.responses += 1;
        if self.is_following_server(now) {
            return true;
        }
        let handover = self.server.following.take().and_then(|f| f.handover);
        // The controller's rate from here: its throttles say nothing of a short pace's margin.
        self.server.slack.not_pacing();
        if let Some(rate) = handover {
            self.set_rate_for(rate, RateChangeReason::Server, now, changes);
        }
        self.control.restart_increase_clock(now);
        false
    }
}

#[cfg(test)]
mod tests;

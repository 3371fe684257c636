//! How responses, pauses and new options move the limiter.

use super::control::bounded_cut;
use super::{BarePause, Changes, Feedback, LimiterCore, LimiterOptions, RateChangeReason, Signal};
use crate::Timestamp;
use crate::validation::{InvalidOption, InvalidOptions};
use std::time::Duration;

impl LimiterCore {
    /// Tells the limiter how a request went. Every response counts in the measured send rate,
    /// and a success in the units accepted in the last minute; then:
    ///
    /// - **Success**: unless a pause is on or the rate follows the server's numbers
    ///   ([`follow_server`](Self::follow_server)), the controller may raise the rate. A new rate,
    ///   even the same one, restarts the increase clock and clears the `waited` flag.
    /// - **Throttled**: restarts the increase clock; cuts the rate through the controller if this
    ///   is the first throttle, or the request was sent after the last cut and either
    ///   `DecreaseCooldown` has passed since it or the controller says the cut fell short
    ///   ([`Controller::cuts_again`](crate::Controller::cuts_again)); pauses for `Retry-After`
    ///   (at most `MaxRetryAfter`); for `PauseWithoutRetryAfter` on a `Retry-After: 0`; and on
    ///   none, or one that cannot be read, for `PauseWithoutRetryAfter` or a quarter of the
    ///   server's window if that is shorter (`QuotaWindow`, or
    ///   [`Controller::server_window`](crate::Controller::server_window)).
    ///   Waiting requests that can no longer make their deadline are refused.
    /// - **Neutral**: nothing more.
    ///
    /// Without `InitialUnitsPerMinute`, successes move nothing until the first throttle signal,
    /// and the first throttle starts the rate at the measured send rate before the controller
    /// cuts it (see [`LimiterOptions::initial_units_per_minute`]).
    pub fn on_response(&mut self, feedback: Feedback, now: Timestamp) -> Changes {
        self.respond(feedback, BarePause::Take, now)
    }

    /// [`on_response`](Self::on_response), with whether a throttle without `Retry-After` takes
    /// `PauseWithoutRetryAfter` (not when the response's rate-limit fields said when the quota
    /// is back: the server's own stop holds the endpoint until then).
    pub(crate) fn respond(
        &mut self,
        feedback: Feedback,
        bare: BarePause,
        now: Timestamp,
    ) -> Changes {
        let mut changes = Changes::default();
        self.meter.record(feedback.units as f64, now);
        self.server.record(&feedback, now);
        self.controller.on_response(&feedback, now);
        let following = self.follow_or_hand_over(now, &mut changes);
        match feedback.signal {
            Signal::Neutral => {}
            Signal::Success => {
                self.stats.successes += 1;
                if !following && self.control.limiting {
                    self.on_success(now, &mut changes);
                }
            }
            Signal::Throttled { retry_after } => {
                self.stats.throttled += 1;
                self.start_limiting(now, &mut changes);
                self.on_throttled(feedback.sent_at, retry_after, bare, now, &mut changes);
            }
        }
        changes
    }

    fn on_success(&mut self, now: Timestamp, changes: &mut Changes) {
        if now < self.pause_until {
            return;
        }
        let cx = self.context(now, None);
        let Some(proposed) = self.controller.on_success(&cx) else {
            return;
        };
        self.control.changed(now);
        // A controller of one's own may lower the rate on a success.
        let previous = self.rate;
        let reason = if proposed < previous {
            RateChangeReason::Lowered
        } else {
            RateChangeReason::Increased
        };
        self.set_rate_for(proposed, reason, now, changes);
        if self.rate < previous {
            self.reject_unreachable(now, changes);
        }
    }

    fn on_throttled(
        &mut self,
        sent_at: Timestamp,
        retry_after: Option<Duration>,
        bare: BarePause,
        now: Timestamp,
        changes: &mut Changes,
    ) {
        let retry_after = retry_after.map(|r| r.min(self.options.max_retry_after));
        let cuts = self
            .control
            .may_cut(sent_at, now, self.options.decrease_cooldown)
            || (self.control.sent_after_cut(sent_at) && {
                let cx = self.context(now, retry_after);
                self.controller.cuts_again(&cx, sent_at)
            });
        if cuts {
            let cx = self.context(now, retry_after);
            let proposed = self.controller.on_throttled(&cx);
            let rate = bounded_cut(proposed, self.rate, self.min_rate());
            self.control.cut(self.rate, now);
            if rate != self.rate {
                changes.rate_moved(self.rate, rate, RateChangeReason::Throttled);
                self.set_rate(rate, now);
            }
        }
        self.control.restart_increase_clock(now);
        let window = self
            .controller
            .server_window()
            .filter(|w| !w.is_zero())
            .unwrap_or(self.options.quota_window);
        if let Some(pause) = self.options.throttle_pause(retry_after, bare, window) {
            self.extend_pause(now + pause, now, changes);
        }
        if changes.rate.is_some() || changes.paused_until.is_some() {
            self.reject_unreachable(now, changes);
        }
    }

    /// Holds every request back until `until` (a server-ordered stop learnt another way, such as
    /// `remaining = 0` until the reset). The pause is capped by `MaxRetryAfter` from `now`, and
    /// never shortens one already on. A pause is a throttle signal: it ends an unlimited start.
    pub fn pause_until(&mut self, until: Timestamp, now: Timestamp) -> Changes {
        let mut changes = Changes::default();
        if until > now {
            self.start_limiting(now, &mut changes);
        }
        let until = until.min(now + self.options.max_retry_after);
        self.extend_pause(until, now, &mut changes);
        if changes.paused_until.is_some() {
            self.reject_unreachable(now, &mut changes);
        }
        changes
    }

    pub(super) fn extend_pause(&mut self, until: Timestamp, now: Timestamp, changes: &mut Changes) {
        if until <= self.pause_until || until <= now {
            return;
        }
        self.controller.on_pause(now.max(self.pause_until), until);
        self.pause_until = until;
        // Nothing flows into the bucket during the pause: when it ends, every instance would
        // otherwise release a full burst at the same moment into a window that just drained.
        self.bucket.hold_until(until, now);
        changes.paused_until = Some(until);
    }

    /// Sets this process's rate to `rate` (units per minute) from outside its controller: a fleet
    /// member's share of its fleet's rate ([`FleetMember::share`](crate::FleetMember::share)).
    /// It ends an unlimited start, and stays within this process's share of
    /// `MinUnitsPerMinute` and the whole `MaxUnitsPerMinute` (a member may take more than an even
    /// share). Waiting requests that can no longer make their deadline are refused. A rate that
    /// is not a positive number changes nothing.
    pub fn set_share(&mut self, rate: f64, now: Timestamp) -> Changes {
        let mut changes = Changes::default();
        if rate.is_nan() || rate <= 0.0 {
            return changes;
        }
        let min = self.min_rate();
        let rate = rate.clamp(min, self.options.max_units_per_minute.max(min));
        changes.started_limiting = !self.control.limiting;
        self.control.start(rate, self.instance_count, now);
        let previous = self.rate;
        if rate != previous || changes.started_limiting {
            self.set_rate(rate, now);
            changes.rate_moved(previous, rate, RateChangeReason::Fleet);
            if rate < previous {
                self.reject_unreachable(now, &mut changes);
            }
        }
        changes
    }

    /// Sets the number of processes that share the budget, live: the rate is scaled by
    /// `old / new`, so the rate of the whole budget stays the same, then kept within the new
    /// shares of the minimum and maximum. From then on the `InstanceCount` option no longer
    /// applies.
    pub fn set_instance_count(
        &mut self,
        count: u32,
        now: Timestamp,
    ) -> Result<Changes, InvalidOption> {
        if count == 0 {
            return Err(InvalidOption::new("InstanceCount", 0, "must be at least 1"));
        }
        self.instance_count_is_live = true;
        Ok(self.rescale(count, now))
    }

    /// Replaces the options of a running limiter, as a configuration reload does. The current
    /// rate is kept and only moved into the new `[Min, Max]` if it lies outside; a new
    /// `InitialUnitsPerMinute` has no effect. A changed built-in controller (or its options)
    /// gives a new controller; a controller given in code stays. Invalid options change nothing.
    pub fn update_options(
        &mut self,
        options: LimiterOptions,
        now: Timestamp,
    ) -> Result<Changes, InvalidOptions> {
        options.validate()?;
        let new_controller = !self.controller_is_custom
            && (options.controller != self.options.controller
                || options.aimd != self.options.aimd
                || options.cubic != self.options.cubic
                || options.pacer != self.options.pacer);
        if new_controller {
            self.controller = options.build_controller();
        }
        self.controller.on_options(&options, now);
        let count = if self.instance_count_is_live {
            self.instance_count
        } else {
            options.instance_count
        };
        self.server.set_window(options.quota_window, now);
        self.options = options;
        self.bucket.refill(now);
        Ok(self.rescale(count, now))
    }

    fn rescale(&mut self, count: u32, now: Timestamp) -> Changes {
        let mut changes = Changes::default();
        let previous = self.rate;
        let scaled = self.rate * f64::from(self.instance_count) / f64::from(count);
        self.instance_count = count;
        let rate = if self.control.limiting {
            scaled.clamp(self.min_rate(), self.max_rate())
        } else {
            // Unlimited until the first throttle signal: the new maximum.
            self.max_rate()
        };
        self.set_rate(rate, now);
        // Unlimited, only the maximum moved: nothing is held to it.
        if rate != previous && self.control.limiting {
            changes.rate_moved(previous, rate, RateChangeReason::Reconfigured);
        }
        self.reject_unreachable(now, &mut changes);
        changes
    }
}

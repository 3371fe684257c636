//! A server that counts over a shorter window than `QuotaWindow`, learnt from a young throttle's
//! `Retry-After`, or from the first success after a young throttle without one.

use super::PacerController;
use super::young::short_span;
use crate::Timestamp;
use crate::controller::{ControllerContext, RateControllerState};
use crate::limiter::accepted::QuotaWindowMeter;
use std::time::Duration;

/// The server's window, learnt, and the units accepted over it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Learnt {
    window: Duration,
    accepted: QuotaWindowMeter,
    /// Learnt from the first success after a young throttle without `Retry-After`.
    from_success: bool,
}

impl PacerController {
    /// `cx` as the controller reasons on it: with the window it learnt, if any, for
    /// `QuotaWindow`.
    pub(super) fn seen(&self, cx: &ControllerContext) -> ControllerContext {
        ControllerContext {
            quota_window: self.window_of(cx),
            ..*cx
        }
    }

    /// The window it counts over at `cx`: the one it learnt, or `QuotaWindow`.
    pub(super) fn window_of(&self, cx: &ControllerContext) -> Duration {
        self.learnt_window().unwrap_or(cx.quota_window)
    }

    /// The state at `cx` (as [`seen`](Self::seen)): the units accepted over the window it
    /// counts over.
    pub(super) fn state_at(&self, cx: &ControllerContext) -> RateControllerState {
        let mut state = self.counts.state(cx);
        if let Some(l) = &self.learnt {
            state.accepted_per_minute = l.accepted.per_minute(cx.now);
        }
        state
    }

    /// The units accepted over the window it counts over, per minute.
    pub(super) fn accepted_per_minute(&self, now: Timestamp) -> f64 {
        match &self.learnt {
            Some(l) => l.accepted.per_minute(now),
            None => self.counts.accepted_per_minute(now),
        }
    }

    /// The units accepted since `from` over the window it counts over, per minute.
    pub(super) fn accepted_per_minute_since(&self, from: Timestamp, now: Timestamp) -> f64 {
        match &self.learnt {
            Some(l) => l.accepted.per_minute_since(from, now),
            None => self.counts.accepted_per_minute_since(from, now),
        }
    }

    /// The window it learnt, if any.
    pub(super) fn learnt_window(&self) -> Option<Duration> {
        self.learnt.as_ref().map(|l| l.window)
    }

    /// The window it counts over: the one it learnt, or `QuotaWindow`.
    pub(crate) fn counting_window(&self) -> Duration {
        self.learnt_window()
            .unwrap_or_else(|| self.counts.quota_window())
    }

    /// `units` accepted at `now`, counted over the window learnt.
    pub(super) fn accepted_in_learnt(&mut self, units: f64, now: Timestamp) {
        if let Some(l) = &mut self.learnt {
            l.accepted.record(units, now);
        }
    }

    /// Before a throttle is handled (`cx` as the limiter gave it): a `Retry-After` longer than
    /// the window learnt says the server's window is longer after all (units that fill it are
    /// others', and leave later), and the controller counts over `QuotaWindow` again.
    pub(super) fn unlearn_on(&mut self, cx: &ControllerContext) {
        if self
            .learnt
            .as_ref()
            .is_some_and(|l| cx.retry_after.is_some_and(|r| r > l.window))
        {
            self.learnt = None;
        }
    }

    /// After the first throttle whose span is short ([`short_span`]), handled at `cx`: the
    /// server's window is at most that span, and from then on the controller counts over it
    /// instead of `QuotaWindow` (a per-second quota, for a client that configured nothing). The
    /// units accepted so far were a part of that window, a lower bound of its quota: no
    /// estimate is kept, and the rate grows again from the cut as before any throttle, by
    /// `StartGrowth` and at most `Lead` times what the server accepts, until a throttle
    /// measures a whole window.
    pub(super) fn learn_window(&mut self, cx: &ControllerContext) {
        // The age at this throttle: `on_throttled` has added it.
        let age = self.age_at_cut;
        let Some(window) = short_span(age, cx.retry_after, cx.quota_window)
            .filter(|w| !self.learnt_before && *w < cx.quota_window)
        else {
            return;
        };
        self.learnt_before = true;
        self.learnt = Some(Learnt {
            window,
            accepted: QuotaWindowMeter::new(window, cx.now),
            from_success: false,
        });
        self.limit = None;
        self.firm = false;
        self.unconfirmed = false;
        self.ramp_from = None;
        self.held_from = None;
    }

    /// After a young throttle without a `Retry-After`, on the first success that says the server
    /// counts over a shorter window ([`young_says_shorter`](Self::young_says_shorter)), at `age`:
    /// our first units, sent at the start, have left the server's window, which is therefore at
    /// most `age`. From then on the controller counts over `age` instead of `QuotaWindow`; the
    /// estimate (the young count scaled to the window) stands.
    pub(super) fn learn_young_window(&mut self, cx: &ControllerContext, age: Duration) {
        if self.learnt_before || age.is_zero() || age >= cx.quota_window {
            return;
        }
        self.learnt_before = true;
        self.learnt = Some(Learnt {
            window: age,
            accepted: QuotaWindowMeter::new(age, cx.now),
            from_success: true,
        });
    }

    /// Counts over `window` from `now`, a window an earlier process learnt (as from a first
    /// success: a run of bare throttles that measures a bucket's leak forgets it).
    pub(super) fn recall_window(&mut self, window: Duration, now: Timestamp) {
        if window.is_zero() {
            return;
        }
        self.learnt_before = true;
        self.learnt = Some(Learnt {
            window,
            accepted: QuotaWindowMeter::new(window, now),
            from_success: true,
        });
    }

    /// A run of bare throttles measured a bucket's leak: a window learnt from a success only
    /// said how long the bucket took to fill, and the count is over `QuotaWindow` again.
    pub(super) fn unlearn_for_bucket(&mut self) {
        if self.bare_pace.is_some() && self.learnt.as_ref().is_some_and(|l| l.from_success) {
            self.learnt = None;
        }
    }
}

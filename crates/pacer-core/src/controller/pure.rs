//! A controller written against the pure contract (the whole state in, a rate out), run as a
//! [`Controller`].

use super::paused::PausedTime;
use super::{Controller, ControllerContext, RateController, RateControllerState};
use crate::limiter::accepted::QuotaWindowMeter;
use crate::{Feedback, LimiterOptions, Signal, Timestamp};

/// Runs a [`RateController`] — the .NET adaptive limiter's contract: the whole
/// [`RateControllerState`] in, a rate out — as a [`Controller`]. It keeps the two counts that
/// state has beyond the limiter's own bookkeeping: the units the server accepted over the last
/// `QuotaWindow` ([`accepted_per_minute`]) and the time since the last cut without pauses
/// ([`since_last_decrease_unpaused`]).
///
/// [`accepted_per_minute`]: RateControllerState::accepted_per_minute
/// [`since_last_decrease_unpaused`]: RateControllerState::since_last_decrease_unpaused
///
/// ```
/// use pacer_core::{Limiter, LimiterOptions, PureController, RateController, RateControllerState};
///
/// /// Halves on a throttle, never climbs.
/// #[derive(Debug)]
/// struct Halve;
///
/// impl RateController for Halve {
///     fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
///         state.rate / 2.0
///     }
///     fn on_success(&mut self, _: &RateControllerState) -> Option<f64> {
///         None
///     }
/// }
///
/// let limiter = Limiter::builder(LimiterOptions::default())
///     .controller(Box::new(PureController::new(Halve)))
///     .build()?;
/// # Ok::<(), pacer_core::InvalidOptions>(())
/// ```
#[derive(Debug, Clone)]
pub struct PureController<C> {
    inner: C,
    counts: StateCounts,
}

impl<C: RateController> PureController<C> {
    /// Runs `controller` as a [`Controller`].
    pub fn new(controller: C) -> Self {
        PureController {
            inner: controller,
            counts: StateCounts::default(),
        }
    }

    /// The controller it runs.
    pub fn get_ref(&self) -> &C {
        &self.inner
    }

    /// The controller it runs, to change.
    pub fn get_mut(&mut self) -> &mut C {
        &mut self.inner
    }

    /// The controller it runs, taken out.
    pub fn into_inner(self) -> C {
        self.inner
    }
}

impl<C: RateController> Controller for PureController<C> {
    fn on_options(&mut self, options: &LimiterOptions, now: Timestamp) {
        self.counts.on_options(options, now);
    }

    fn on_response(&mut self, feedback: &Feedback, now: Timestamp) {
        self.counts.on_response(feedback, now);
    }

    fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        self.counts.on_pause(from, until);
    }

    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        let rate = self.inner.on_throttled(&self.counts.state(cx));
        self.counts.on_cut(cx);
        rate
    }

    fn on_success(&mut self, cx: &ControllerContext) -> Option<f64> {
        self.inner.on_success(&self.counts.state(cx))
    }
}

/// What a [`RateControllerState`] holds beyond the limiter's own bookkeeping, counted from the
/// limiter's events: the units accepted over the last `QuotaWindow`, and the time paused since
/// the last cut.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct StateCounts {
    accepted: QuotaWindowMeter,
    paused: PausedTime,
}

impl StateCounts {
    /// The `QuotaWindow` it counts over (the default's before the options are known).
    pub(crate) fn quota_window(&self) -> std::time::Duration {
        self.accepted
            .window()
            .unwrap_or(std::time::Duration::from_secs(60))
    }

    pub(crate) fn on_options(&mut self, options: &LimiterOptions, now: Timestamp) {
        self.accepted.set_window(options.quota_window, now);
    }

    pub(crate) fn on_response(&mut self, feedback: &Feedback, now: Timestamp) {
        if feedback.signal == Signal::Success {
            self.accepted.record(feedback.units as f64, now);
        }
    }

    pub(crate) fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        self.paused.on_pause(from, until);
    }

    /// After a cut at `cx.now` (call it once the controller has answered).
    pub(crate) fn on_cut(&mut self, cx: &ControllerContext) {
        self.paused.on_cut(cx);
    }

    /// The units accepted over the last `QuotaWindow` at `now`, per minute.
    pub(crate) fn accepted_per_minute(&self, now: Timestamp) -> f64 {
        self.accepted.per_minute(now)
    }

    /// The units accepted since `from`, per minute over the window.
    pub(crate) fn accepted_per_minute_since(&self, from: Timestamp, now: Timestamp) -> f64 {
        self.accepted.per_minute_since(from, now)
    }

    /// The whole state at `cx`.
    pub(crate) fn state(&self, cx: &ControllerContext) -> RateControllerState {
        RateControllerState::from_context(
            cx,
            self.paused.unpaused_since_cut(cx),
            self.accepted.per_minute(cx.now),
        )
    }
}

//! The .NET adaptive limiter's contract between the limiter and a rate controller: the whole
//! state in, a rate out.

use super::RateControllerState;
use std::fmt;

/// Decides the next rate from the whole state: the .NET adaptive limiter's `IRateController`.
/// Run one in a limiter through [`PureController`](crate::PureController), which keeps the
/// counts its state needs; a controller that keeps its own implements
/// [`Controller`](crate::Controller) instead. The built-in controllers implement both.
///
/// A controller only returns numbers; the limiter does the rest: the lock, the clock, the minimum
/// and maximum, the instance share, the cooldown, the pause, and the rule that a request sent
/// before the last cut does not cut again. Precisely:
///
/// - [`on_throttled`](Self::on_throttled) returns the new rate. The limiter uses the lower of that
///   rate and the current rate, and keeps it at the minimum or above. It calls `on_throttled` only
///   when it cuts: on the first throttle, and later only after `DecreaseCooldown` has passed since
///   the last cut and for a request sent after the last cut.
/// - [`on_success`](Self::on_success) returns the new rate, or `None` for no change. A `Some`, even
///   of the same rate, restarts the increase clock (`since_last_increase`) and clears the
///   `waited` flag. The limiter keeps the result within `[min_rate, max_rate]`. It does not call
///   `on_success` during a Retry-After pause.
///
/// Methods take `&mut self` so a controller may keep its own state (CUBIC keeps the rate of the
/// last cut); each limiter owns its controller, so there is no sharing to worry about.
///
/// # Example
///
/// A controller that halves on a throttle and climbs a fixed step every 30 s while requests wait
/// (the .NET adaptive limiter's `StepController`):
///
/// ```
/// use pacer_core::{RateController, RateControllerState};
/// use std::time::Duration;
///
/// #[derive(Debug, Clone)]
/// struct StepController {
///     /// Units per minute for the whole budget.
///     step: f64,
/// }
///
/// impl RateController for StepController {
///     fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
///         (state.rate / 2.0).max(state.min_rate)
///     }
///
///     fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
///         if !state.waited || state.since_last_increase < Duration::from_secs(30) {
///             return None;
///         }
///         Some(state.rate + self.step / f64::from(state.instance_count))
///     }
/// }
///
/// let mut c = StepController { step: 30.0 };
/// let mut state = RateControllerState::new(600.0, 60.0, 1200.0);
/// assert_eq!(c.on_throttled(&state), 300.0);
/// state.waited = true;
/// state.since_last_increase = Duration::from_secs(30);
/// assert_eq!(c.on_success(&state), Some(630.0));
/// ```
pub trait RateController: Send + fmt::Debug + 'static {
    /// The new rate after a throttle that cuts.
    fn on_throttled(&mut self, state: &RateControllerState) -> f64;

    /// The new rate after a success, or `None` for no change.
    fn on_success(&mut self, state: &RateControllerState) -> Option<f64>;
}

impl<C: RateController + ?Sized> RateController for Box<C> {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        (**self).on_throttled(state)
    }

    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        (**self).on_success(state)
    }
}

//! The contract between the limiter and a controller that keeps its own state: events in, a
//! rate out (quinn-proto's congestion `Controller`, for a rate of units).

use crate::{Feedback, LimiterOptions, Timestamp};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Moves a limiter's rate. The limiter tells it what happens and asks it for a rate on each
/// throttle that cuts and each success; what the controller needs to remember beyond the
/// limiter's own bookkeeping (a meter, an estimate, the time paused since the last cut) it keeps
/// itself, so a new controller adds nothing to the limiter.
///
/// The limiter calls, in the order things happen:
///
/// - [`on_options`](Self::on_options) when it takes the controller and whenever its options
///   change (a reload);
/// - [`on_response`](Self::on_response) for every response, before it decides anything;
/// - [`on_pause`](Self::on_pause) when a pause starts or grows;
/// - [`on_throttled`](Self::on_throttled) when it cuts: on the first throttle, then only after
///   `DecreaseCooldown` has passed since the last cut and for a request sent after it. It takes
///   the lower of the answer and the current rate, at least the minimum;
/// - [`on_success`](Self::on_success) on a success while it limits, outside a pause and while
///   the rate does not follow the server's numbers. A `Some`, even of the same rate, restarts
///   the increase clock and clears the `waited` flag; the answer is kept within
///   `[min_rate, max_rate]`;
/// - [`server_window`](Self::server_window) on every throttle, after any cut: the window that
///   caps the pause of a throttle with no readable `Retry-After`.
///
/// The built-in controllers ([`Aimd`](crate::Aimd), [`Cubic`](crate::Cubic),
/// [`PacerController`](crate::PacerController)) implement it. A controller written against the
/// .NET adaptive limiter's pure contract — the whole state in, a rate out — implements
/// [`RateController`](crate::RateController) instead and runs in a
/// [`PureController`](crate::PureController), which keeps the counts that contract's state needs.
///
/// # Example
///
/// A controller that halves on a throttle and, after a Retry-After, comes back only once as
/// long again has passed without one:
///
/// ```
/// use pacer_core::{Controller, ControllerContext, Limiter, LimiterOptions, Timestamp};
/// use std::time::Duration;
///
/// #[derive(Debug, Default)]
/// struct Patient {
///     /// No increase before this.
///     quiet_until: Timestamp,
/// }
///
/// impl Controller for Patient {
///     fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
///         let wait = cx.retry_after.unwrap_or(Duration::from_secs(10));
///         self.quiet_until = cx.now + wait * 2;
///         cx.rate / 2.0
///     }
///
///     fn on_success(&mut self, cx: &ControllerContext) -> Option<f64> {
///         (cx.now >= self.quiet_until && cx.waited).then(|| cx.rate * 1.1)
///     }
/// }
///
/// let mut options = LimiterOptions::default();
/// options.initial_units_per_minute = Some(600.0);
/// let limiter = Limiter::builder(options).controller(Box::new(Patient::default())).build()?;
/// assert_eq!(limiter.rate(), 600.0);
/// # Ok::<(), pacer_core::InvalidOptions>(())
/// ```
pub trait Controller: Send + fmt::Debug + 'static {
    /// The limiter's options, when it takes the controller and after every change. A controller
    /// that counts over `QuotaWindow` starts its count again when the window changes.
    fn on_options(&mut self, options: &LimiterOptions, now: Timestamp) {
        let _ = (options, now);
    }

    /// A response at `now`, whatever it means, before the limiter acts on it.
    fn on_response(&mut self, feedback: &Feedback, now: Timestamp) {
        let _ = (feedback, now);
    }

    /// The limiter holds every request from `from` to `until`: a `Retry-After`, or a stop the
    /// server ordered. Only the time not already paused is told.
    fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        let _ = (from, until);
    }

    /// The new rate after a throttle that cuts.
    fn on_throttled(&mut self, cx: &ControllerContext) -> f64;

    /// The new rate after a success, or `None` for no change.
    fn on_success(&mut self, cx: &ControllerContext) -> Option<f64>;

    /// A throttle within `DecreaseCooldown` of the last cut, for a request sent after it:
    /// whether it shows that the cut did not bring the rate under the limit, so that the limiter
    /// cuts again now ([`on_throttled`](Self::on_throttled)). By default never.
    fn cuts_again(&mut self, cx: &ControllerContext, sent_at: Timestamp) -> bool {
        let _ = (cx, sent_at);
        false
    }

    /// The window the server counts over, as far as the controller knows: `None` (the default)
    /// when it knows no more than
    /// [`QuotaWindow`](crate::LimiterOptions::quota_window). The
    /// [`PacerController`](crate::PacerController) learns a shorter one from its first
    /// throttles, and forgets it when they turn out to be a bucket's.
    ///
    /// The limiter asks on every throttle, after any cut (so a window learnt in that
    /// [`on_throttled`](Self::on_throttled) counts), and pauses a throttle with no
    /// `Retry-After`, or one that cannot be read, for at most a quarter of it;
    /// [`PauseWithoutRetryAfter`](crate::LimiterOptions::pause_without_retry_after) is the
    /// longest such pause, and a `Retry-After: 0` takes all of it. `Some` of a zero window is
    /// taken as `None`.
    fn server_window(&self) -> Option<Duration> {
        None
    }

    /// What it learnt of the server that is worth keeping across a restart (its estimate of
    /// the limit, the server's window), free of its clock. Default: nothing; the limiter keeps
    /// its rate anyway ([`LimiterMemory`](crate::LimiterMemory)).
    fn memory(&self) -> crate::ControllerMemory {
        crate::ControllerMemory::default()
    }

    /// Starts from what a controller of an earlier process learnt ([`memory`](Self::memory)),
    /// at `now`. Called on a fresh controller, before any event. Default: nothing.
    fn recall(&mut self, memory: &crate::ControllerMemory, now: Timestamp) {
        let _ = (memory, now);
    }
}

impl<C: Controller + ?Sized> Controller for Box<C> {
    fn on_options(&mut self, options: &LimiterOptions, now: Timestamp) {
        (**self).on_options(options, now);
    }

    fn on_response(&mut self, feedback: &Feedback, now: Timestamp) {
        (**self).on_response(feedback, now);
    }

    fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        (**self).on_pause(from, until);
    }

    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        (**self).on_throttled(cx)
    }

    fn on_success(&mut self, cx: &ControllerContext) -> Option<f64> {
        (**self).on_success(cx)
    }

    fn cuts_again(&mut self, cx: &ControllerContext, sent_at: Timestamp) -> bool {
        (**self).cuts_again(cx, sent_at)
    }

    fn server_window(&self) -> Option<Duration> {
        (**self).server_window()
    }

    fn memory(&self) -> crate::ControllerMemory {
        (**self).memory()
    }

    fn recall(&mut self, memory: &crate::ControllerMemory, now: Timestamp) {
        (**self).recall(memory, now);
    }
}

/// Makes a new controller for each endpoint a limiter meets.
pub type ControllerFactory = Arc<dyn Fn() -> Box<dyn Controller> + Send + Sync>;

/// What the limiter knows when it asks a [`Controller`] for a rate: its rate and bounds, its
/// bookkeeping of cuts and increases, its queue and its meter of what was sent.
///
/// All rates are for **this process**, in **units per minute**: the limiter has already divided
/// the whole-budget options by [`instance_count`](Self::instance_count). The struct is
/// `#[non_exhaustive]` so that fields can be added; [`ControllerContext::new`] builds one for a
/// test.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ControllerContext {
    /// The time of the event.
    pub now: Timestamp,
    /// The current rate.
    pub rate: f64,
    /// This process's share of `MinUnitsPerMinute`.
    pub min_rate: f64,
    /// This process's share of `MaxUnitsPerMinute`.
    pub max_rate: f64,
    /// This process's share of `InitialUnitsPerMinute` (or of the measured send rate the
    /// unlimited start ended at).
    pub initial_rate: f64,
    /// The rate before the last cut. Before the first cut, the initial rate.
    pub rate_before_last_decrease: f64,
    /// The time since the last cut. Before the first cut, the time since the limiter was created.
    pub since_last_decrease: Duration,
    /// The time since the last change from `on_success`, or since the last throttle. After a
    /// pause, it counts from the end of the pause.
    pub since_last_increase: Duration,
    /// True if a request had to wait for units since the last change.
    pub waited: bool,
    /// The number of processes that share the budget. Divide whole-budget steps by it.
    pub instance_count: u32,
    /// The measured send rate: units of responses per half-second period, smoothed with 0.8 (as
    /// the AWS SDK does), in units per minute. `None` until the first half-second has passed.
    pub measured_send_rate: Option<f64>,
    /// On a throttle: the server's `Retry-After`, already clamped by `MaxRetryAfter`.
    pub retry_after: Option<Duration>,
    /// The units of the requests waiting in the queue right now: the demand the rate holds back.
    pub queued_units: f64,
    /// How many times the limiter has cut the rate so far (0 before the first throttle).
    pub decreases: u64,
    /// Until when a pause holds requests back (at or before [`now`](Self::now) when none does).
    pub pause_until: Timestamp,
    /// `QuotaWindow`: the window the server counts its quota over (1 min unless configured).
    pub quota_window: Duration,
}

impl ControllerContext {
    /// A context at `now` with the rate at `rate` within `[min_rate, max_rate]`, as just after
    /// creation with one instance: no cut yet, nothing waited, nothing measured, no pause. Set
    /// other fields as the test needs.
    #[must_use]
    pub fn new(now: Timestamp, rate: f64, min_rate: f64, max_rate: f64) -> Self {
        ControllerContext {
            now,
            rate,
            min_rate,
            max_rate,
            initial_rate: rate,
            rate_before_last_decrease: rate,
            since_last_decrease: Duration::ZERO,
            since_last_increase: Duration::ZERO,
            waited: false,
            instance_count: 1,
            measured_send_rate: None,
            retry_after: None,
            queued_units: 0.0,
            decreases: 0,
            pause_until: Timestamp::ZERO,
            quota_window: Duration::from_secs(60),
        }
    }

    /// The part of a pause still ahead.
    #[must_use]
    pub fn pause_ahead(&self) -> Duration {
        self.pause_until - self.now
    }
}

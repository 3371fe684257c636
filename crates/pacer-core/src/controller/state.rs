//! What the limiter tells a rate controller.

use super::ControllerContext;
use std::time::Duration;

/// The limiter's state, as a rate controller sees it on each throttle and each success.
///
/// All rates are for **this process**, in **units per minute**: the limiter has already divided
/// the whole-budget options by [`instance_count`](Self::instance_count). A controller that adds a
/// whole-budget step must divide it by `instance_count` itself.
///
/// The first eight fields are the .NET adaptive limiter's contract (`RateControllerState` of RateLimiting.Adaptive);
/// the rest are what Pacer's limiter also knows, for controllers that want more (CUBIC needs the
/// measured send rate and the time since the cut without the pause).
///
/// The struct is `#[non_exhaustive]` so that fields can be added; build one for a test with
/// [`RateControllerState::new`] and set the fields you need.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RateControllerState {
    /// The current rate.
    pub rate: f64,
    /// This process's share of `MinUnitsPerMinute`.
    pub min_rate: f64,
    /// This process's share of `MaxUnitsPerMinute`.
    pub max_rate: f64,
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

    /// This process's share of `InitialUnitsPerMinute`.
    pub initial_rate: f64,
    /// [`since_last_decrease`](Self::since_last_decrease) without the time spent in Retry-After
    /// pauses (CUBIC's `t`).
    pub since_last_decrease_unpaused: Duration,
    /// The measured send rate: units of responses per half-second period, smoothed with 0.8 (as
    /// the AWS SDK does), in units per minute. `None` until the first half-second has passed.
    pub measured_send_rate: Option<f64>,
    /// On a throttle: the server's `Retry-After`, already clamped by `MaxRetryAfter`.
    pub retry_after: Option<Duration>,
    /// The units of the requests waiting in the queue right now: the demand the rate holds back.
    pub queued_units: f64,
    /// How many times the limiter has cut the rate so far (0 before the first throttle).
    pub decreases: u64,
    /// The units of the responses classified as success over the last
    /// [`quota_window`](Self::quota_window), in units per minute: the throughput the server
    /// accepted from this process (counted in 60 slots; one-second slots for the default minute).
    /// Before the limiter is a window old, only the units accepted since it started count. On a
    /// throttle after a full window of the server's quota, this is this
    /// process's part of the quota.
    pub accepted_per_minute: f64,
    /// `QuotaWindow`: the window [`accepted_per_minute`](Self::accepted_per_minute) is counted
    /// over (1 min unless configured).
    pub quota_window: Duration,
}

impl RateControllerState {
    /// A state at `rate` within `[min_rate, max_rate]`, as just after creation with one instance:
    /// no cut yet, nothing waited, nothing measured. Set other fields as the test needs.
    ///
    /// ```
    /// use pacer_core::RateControllerState;
    /// use std::time::Duration;
    ///
    /// let mut state = RateControllerState::new(600.0, 60.0, 1200.0);
    /// state.waited = true;
    /// state.since_last_increase = Duration::from_secs(10);
    /// assert_eq!(state.rate_before_last_decrease, 600.0);
    /// ```
    #[must_use]
    pub fn new(rate: f64, min_rate: f64, max_rate: f64) -> Self {
        RateControllerState {
            rate,
            min_rate,
            max_rate,
            rate_before_last_decrease: rate,
            since_last_decrease: Duration::ZERO,
            since_last_increase: Duration::ZERO,
            waited: false,
            instance_count: 1,
            initial_rate: rate,
            since_last_decrease_unpaused: Duration::ZERO,
            measured_send_rate: None,
            retry_after: None,
            queued_units: 0.0,
            decreases: 0,
            accepted_per_minute: 0.0,
            quota_window: Duration::from_secs(60),
        }
    }

    /// The state for `cx`, with the two counts the limiter does not keep: the time since the
    /// last cut without pauses, and the units accepted over the last window per minute.
    pub(crate) fn from_context(
        cx: &ControllerContext,
        since_last_decrease_unpaused: Duration,
        accepted_per_minute: f64,
    ) -> Self {
        RateControllerState {
            rate: cx.rate,
            min_rate: cx.min_rate,
            max_rate: cx.max_rate,
            rate_before_last_decrease: cx.rate_before_last_decrease,
            since_last_decrease: cx.since_last_decrease,
            since_last_increase: cx.since_last_increase,
            waited: cx.waited,
            instance_count: cx.instance_count,
            initial_rate: cx.initial_rate,
            since_last_decrease_unpaused,
            measured_send_rate: cx.measured_send_rate,
            retry_after: cx.retry_after,
            queued_units: cx.queued_units,
            decreases: cx.decreases,
            accepted_per_minute,
            quota_window: cx.quota_window,
        }
    }
}

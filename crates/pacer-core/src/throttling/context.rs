//! [`ThrottlingContext`]: everything an algorithm may look at for one decision.

use std::fmt;
use std::time::Duration;

use super::provider::RateLimitStateProvider;
use crate::RateLimitInfo;

/// The input of one throttling decision for one endpoint.
///
/// * [`info`](Self::info): the endpoint's last [`RateLimitInfo`], **already adjusted** for the
///   time since it was observed (see [`RateLimitInfo::aged`]): its resets count from now.
/// * [`endpoint`](Self::endpoint): the endpoint key.
/// * [`since_last_request`](Self::since_last_request): the time since the last request was sent
///   to this endpoint, `None` when none was; what pacing spaces requests from.
/// * [`since_observed`](Self::since_observed): how old the info is.
/// * [`states`](Self::states): every tracked endpoint, for cross-endpoint algorithms.
///
/// ```
/// use pacer_core::{RateLimitInfo, ThrottlingContext};
/// use std::time::Duration;
///
/// let info = RateLimitInfo::new();
/// let ctx = ThrottlingContext::new(&info, "https://api.example:443")
///     .with_since_last_request(Some(Duration::from_millis(40)));
/// assert_eq!(ctx.endpoint(), "https://api.example:443");
/// assert_eq!(ctx.since_last_request(), Some(Duration::from_millis(40)));
/// assert!(ctx.states().is_none());
/// ```
#[derive(Clone, Copy)]
pub struct ThrottlingContext<'a> {
    info: &'a RateLimitInfo,
    endpoint: &'a str,
    since_observed: Duration,
    since_last_request: Option<Duration>,
    states: Option<&'a dyn RateLimitStateProvider>,
}

impl<'a> ThrottlingContext<'a> {
    /// A context for `endpoint` whose (already adjusted) state is `info`.
    #[must_use]
    pub fn new(info: &'a RateLimitInfo, endpoint: &'a str) -> ThrottlingContext<'a> {
        ThrottlingContext {
            info,
            endpoint,
            since_observed: Duration::ZERO,
            since_last_request: None,
            states: None,
        }
    }

    /// Sets the time since the last request to this endpoint was sent.
    #[must_use]
    pub fn with_since_last_request(mut self, since: Option<Duration>) -> ThrottlingContext<'a> {
        self.since_last_request = since;
        self
    }

    /// Sets how long ago the info was observed.
    #[must_use]
    pub fn with_since_observed(mut self, since: Duration) -> ThrottlingContext<'a> {
        self.since_observed = since;
        self
    }

    /// Lets the algorithm see every tracked endpoint.
    #[must_use]
    pub fn with_states(mut self, states: &'a dyn RateLimitStateProvider) -> ThrottlingContext<'a> {
        self.states = Some(states);
        self
    }

    /// The endpoint's state, adjusted for the time since it was observed.
    #[must_use]
    pub fn info(&self) -> &'a RateLimitInfo {
        self.info
    }

    /// The endpoint key.
    #[must_use]
    pub fn endpoint(&self) -> &'a str {
        self.endpoint
    }

    /// How long ago the info was observed.
    #[must_use]
    pub fn since_observed(&self) -> Duration {
        self.since_observed
    }

    /// The time since the last request to this endpoint was sent; `None` when none was.
    #[must_use]
    pub fn since_last_request(&self) -> Option<Duration> {
        self.since_last_request
    }

    /// Every tracked endpoint, when the caller provides them.
    #[must_use]
    pub fn states(&self) -> Option<&'a dyn RateLimitStateProvider> {
        self.states
    }
}

impl fmt::Debug for ThrottlingContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThrottlingContext")
            .field("info", self.info)
            .field("endpoint", &self.endpoint)
            .field("since_observed", &self.since_observed)
            .field("since_last_request", &self.since_last_request)
            .field("states", &self.states.map(|_| ".."))
            .finish()
    }
}

//! What a response said of the quota, as the limiter follows it: [`ServerQuota`].

use crate::{QuotaUnit, RateLimitInfo};
use std::time::Duration;

/// What a response said of the quota: the units left and when the quota resets (and, when the
/// server says, the policy: its quota and window).
///
/// Build one from parsed headers with [`ServerQuota::from_info`], or by hand:
///
/// ```
/// use pacer_core::ServerQuota;
/// use std::time::Duration;
///
/// let q = ServerQuota::new(50, Duration::from_secs(10)).with_policy(3000, Duration::from_secs(60));
/// assert_eq!(q.pace(), 300.0, "50 units over 10 s: 300 a minute");
/// assert_eq!(q.policy_pace(), Some(3000.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerQuota {
    /// Units left in the quota (for every process that shares it).
    pub remaining: u64,
    /// Time until the quota resets (the most restrictive policy's).
    pub reset_after: Duration,
    /// The policy's quota, if the server said.
    pub limit: Option<u64>,
    /// The policy's window, if the server said.
    pub window: Option<Duration>,
}

impl ServerQuota {
    /// The shortest time `remaining` is spread over: a reset of 0 s (or a few milliseconds)
    /// would otherwise allow any rate at all. Servers send whole seconds anyway.
    pub const MIN_SPREAD: Duration = Duration::from_secs(1);

    /// A policy's window this long or shorter is paced by the policy, not by `remaining`
    /// (see [`LimiterCore::follow_server`](super::LimiterCore::follow_server)): ten of the reset's whole-second steps or fewer.
    pub const SHORT_WINDOW: Duration = Duration::from_secs(10);

    /// After this many responses without the server's numbers, the controller is in charge
    /// again.
    pub const STALE_AFTER_RESPONSES: u32 = 10;

    /// The fraction of the policy's quota under which the quota is nearly spent: 20 %, the
    /// threshold of the RateLimitHeaders library's `AdaptiveDelayAlgorithm`
    /// ([`AdaptiveDelay::DEFAULT_THRESHOLD`](crate::AdaptiveDelay::DEFAULT_THRESHOLD)).
    pub const NEAR_QUOTA_FRACTION: f64 = 0.2;

    /// Whether the numbers say the quota is nearly spent: nothing left; at most
    /// [`NEAR_QUOTA_FRACTION`](Self::NEAR_QUOTA_FRACTION) of the policy's quota left; or, at
    /// `send_rate` (units per minute, for every process that shares the quota), what is left
    /// would run out before the reset. A limiter without `InitialUnitsPerMinute` starts limiting
    /// at such numbers.
    ///
    /// ```
    /// use pacer_core::ServerQuota;
    /// use std::time::Duration;
    ///
    /// let q = ServerQuota::new(900, Duration::from_secs(60)).with_policy(1000, Duration::from_secs(60));
    /// assert!(!q.is_near_quota(Some(600.0)));
    /// assert!(q.is_near_quota(Some(1200.0)), "900 left would run out in 45 s");
    /// assert!(ServerQuota::new(100, Duration::from_secs(60)).with_policy(1000, Duration::from_secs(60)).is_near_quota(None));
    /// ```
    #[must_use]
    pub fn is_near_quota(&self, send_rate: Option<f64>) -> bool {
        let remaining = self.remaining as f64;
        self.remaining == 0
            || self
                .limit
                .is_some_and(|limit| remaining <= limit as f64 * Self::NEAR_QUOTA_FRACTION)
            || send_rate
                .is_some_and(|rate| rate / 60.0 * self.reset_after.as_secs_f64() > remaining)
    }

    /// `remaining` units until `reset_after`.
    #[must_use]
    pub const fn new(remaining: u64, reset_after: Duration) -> Self {
        ServerQuota {
            remaining,
            reset_after,
            limit: None,
            window: None,
        }
    }

    /// With the policy: `limit` units per `window`.
    #[must_use]
    pub const fn with_policy(mut self, limit: u64, window: Duration) -> Self {
        self.limit = Some(limit);
        self.window = Some(window);
        self
    }

    /// The most restrictive policy of `info` that counts requests, when it has a remaining and a
    /// reset (an exhausted policy without a reset resets after its window, else after 1 s, as
    /// [`Policy::effective_reset`](crate::Policy::effective_reset) says).
    ///
    /// A policy in another unit (OpenAI's and Anthropic's tokens, IETF `content-bytes`) never
    /// sets a rate of requests: 1,500 tokens left say nothing of how many requests may go.
    /// [`from_info_in`](Self::from_info_in) reads the policies of another unit.
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy, QuotaUnit, RateLimitInfo, ServerQuota};
    /// use std::time::Duration;
    ///
    /// let info = RateLimitInfo::new()
    ///     .with_policy(Policy::new(Dialect::OpenAi).with_name("requests")
    ///         .with_limit(60).with_remaining(59).with_reset_after(Duration::from_secs(1)))
    ///     .with_policy(Policy::new(Dialect::OpenAi).with_name("tokens").with_unit(QuotaUnit::Tokens)
    ///         .with_limit(150_000).with_remaining(100).with_reset_after(Duration::from_secs(360)));
    /// assert_eq!(info.policy_name(), Some("tokens"), "the scarcer policy");
    /// assert_eq!(ServerQuota::from_info(&info).map(|q| q.remaining), Some(59), "counts requests");
    /// ```
    #[must_use]
    pub fn from_info(info: &RateLimitInfo) -> Option<Self> {
        Self::from_info_in(info, &QuotaUnit::Requests)
    }

    /// The most restrictive policy of `info` that counts `unit`, when it has a remaining and a
    /// reset.
    #[must_use]
    pub fn from_info_in(info: &RateLimitInfo, unit: &QuotaUnit) -> Option<Self> {
        let policy = info.policies().iter().find(|p| p.unit() == unit)?;
        let remaining = policy.remaining()?;
        let reset_after = policy.effective_reset()?;
        Some(ServerQuota {
            remaining,
            reset_after,
            limit: policy.limit(),
            window: policy.window().filter(|w| !w.is_zero()),
        })
    }

    /// The remaining units spread over the time to the reset (at least
    /// [`MIN_SPREAD`](Self::MIN_SPREAD)), in units per minute for the whole budget.
    #[must_use]
    pub fn pace(&self) -> f64 {
        self.remaining as f64 * 60.0 / self.reset_after.max(Self::MIN_SPREAD).as_secs_f64()
    }

    /// The policy's long-run pace, `limit / window`, in units per minute for the whole budget.
    #[must_use]
    pub fn policy_pace(&self) -> Option<f64> {
        let (limit, window) = (self.limit?, self.window?);
        Some(limit as f64 * 60.0 / window.as_secs_f64())
    }

    /// The time to spread `remaining` over. Resets are whole seconds, rounded up (RFC 9110
    /// delay-seconds; draft-11's `t` is an integer): the reset comes on average half a second
    /// before the stated second, so half a second less, and at least half a second.
    pub(super) fn spread(&self) -> Duration {
        self.reset_after
            .saturating_sub(Duration::from_millis(500))
            .max(Duration::from_millis(500))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_quota_from_parsed_headers() {
        use http::HeaderMap;
        let mut h = HeaderMap::new();
        h.insert(
            "ratelimit-policy",
            r#""default";q=3000;w=60"#.parse().unwrap(),
        );
        h.insert("ratelimit", r#""default";r=42;t=7"#.parse().unwrap());
        let info = RateLimitInfo::from_headers(&h, std::time::SystemTime::UNIX_EPOCH);
        assert_eq!(
            ServerQuota::from_info(&info),
            Some(
                ServerQuota::new(42, Duration::from_secs(7))
                    .with_policy(3000, Duration::from_secs(60))
            )
        );
        // Without a remaining there is nothing to follow.
        let mut h = HeaderMap::new();
        h.insert(
            "ratelimit-policy",
            r#""default";q=3000;w=60"#.parse().unwrap(),
        );
        let info = RateLimitInfo::from_headers(&h, std::time::SystemTime::UNIX_EPOCH);
        assert_eq!(ServerQuota::from_info(&info), None);
    }
}

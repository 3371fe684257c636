//! [`RateLimitInfo`]: what a response said about the client's quota.

use std::time::{Duration, SystemTime};

use http::HeaderMap;

use super::bounds::{MAX_RESET_AFTER, MAX_RETRY_AFTER};
use super::policy::{Policy, QuotaUnit};
use super::restrictive::compare;
use super::spare;

/// The rate-limit state a response reported, in any dialect, resolved against a `now`.
///
/// A server may report several limits at once (IETF policies, OpenAI requests and tokens,
/// Anthropic input and output tokens). All are kept in [`policies`](Self::policies), most
/// restrictive first; the top-level accessors ([`limit`](Self::limit),
/// [`remaining`](Self::remaining), [`reset_after`](Self::reset_after), …) describe that most
/// restrictive one. [`retry_after`](Self::retry_after) is the response's `Retry-After`.
///
/// Parsing is total: [`from_headers`](Self::from_headers) never fails and never panics; fields
/// it cannot understand are left out, and absurd durations are clamped to
/// [`MAX_RESET_AFTER`](Self::MAX_RESET_AFTER) and [`MAX_RETRY_AFTER`](Self::MAX_RETRY_AFTER). A
/// policy for which the server sent a field that could not be read, was out of range or
/// contradicted the others is kept but unsound ([`is_sound`](Self::is_sound)).
///
/// ```
/// use http::HeaderMap;
/// use pacer_core::RateLimitInfo;
/// use std::time::{Duration, SystemTime};
///
/// let mut h = HeaderMap::new();
/// h.insert("ratelimit-policy", r#""burst";q=100;w=60,"daily";q=1000;w=86400"#.parse()?);
/// h.insert("ratelimit", r#""burst";r=8;t=30,"daily";r=900;t=43200"#.parse()?);
///
/// let info = RateLimitInfo::from_headers(&h, SystemTime::UNIX_EPOCH);
/// assert_eq!(info.policy_name(), Some("burst"));
/// assert_eq!(info.limit(), Some(100));
/// assert_eq!(info.remaining(), Some(8));
/// assert_eq!(info.reset_after(), Some(Duration::from_secs(30)));
/// assert_eq!(info.window(), Some(Duration::from_secs(60)));
/// assert_eq!(info.policies().len(), 2);
/// # Ok::<(), http::header::InvalidHeaderValue>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RateLimitInfo {
    policies: Vec<Policy>,
    retry_after: Option<Duration>,
}

impl RateLimitInfo {
    /// The longest reset or window kept: 365 days. Later ones are clamped to it.
    pub const MAX_RESET_AFTER: Duration = MAX_RESET_AFTER;

    /// The longest `Retry-After` kept: 30 days. Longer ones are clamped to it; the middleware
    /// applies its own, smaller `MaxRetryAfter`.
    pub const MAX_RETRY_AFTER: Duration = MAX_RETRY_AFTER;

    /// Reads every rate-limit dialect in `headers`, resolving dates and epoch resets against
    /// `now` (the wall clock when the response arrived). See `docs/headers.md` for the dialects
    /// and rules.
    #[must_use]
    pub fn from_headers(headers: &HeaderMap, now: SystemTime) -> RateLimitInfo {
        super::parse::parse(headers, now)
    }

    /// An info that reports nothing: to build one by hand with [`with_policy`](Self::with_policy)
    /// and [`with_retry_after`](Self::with_retry_after).
    #[must_use]
    pub fn new() -> RateLimitInfo {
        RateLimitInfo::default()
    }

    /// Adds a policy, keeping the policies ordered most restrictive first.
    #[must_use]
    pub fn with_policy(mut self, policy: Policy) -> RateLimitInfo {
        self.policies.push(policy);
        self.policies.sort_by(compare);
        self
    }

    /// Sets the Retry-After, clamped to [`MAX_RETRY_AFTER`](Self::MAX_RETRY_AFTER).
    #[must_use]
    pub fn with_retry_after(mut self, retry_after: Duration) -> RateLimitInfo {
        self.retry_after = Some(retry_after.min(MAX_RETRY_AFTER));
        self
    }

    pub(crate) fn from_parts(mut policies: Vec<Policy>, retry_after: Option<Duration>) -> Self {
        policies.sort_by(compare);
        RateLimitInfo {
            policies,
            retry_after: retry_after.map(|r| r.min(MAX_RETRY_AFTER)),
        }
    }

    /// The policies (most restrictive first) and the Retry-After, taken apart.
    pub(crate) fn into_parts(self) -> (Vec<Policy>, Option<Duration>) {
        (self.policies, self.retry_after)
    }

    /// The same info without its Retry-After, its order standing.
    pub(crate) fn without_retry_after(mut self) -> RateLimitInfo {
        self.retry_after = None;
        self
    }

    /// Drops the info, its list of policies kept for the thread's next (see `headers::spare`).
    pub(crate) fn recycle(self) {
        spare::give(self.policies);
    }

    /// Every policy reported, most restrictive first.
    #[must_use]
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// The most restrictive policy, if any was reported.
    #[must_use]
    pub fn policy(&self) -> Option<&Policy> {
        self.policies.first()
    }

    /// The quota of the most restrictive policy.
    #[must_use]
    pub fn limit(&self) -> Option<u64> {
        self.policy().and_then(Policy::limit)
    }

    /// The quota left in the most restrictive policy.
    #[must_use]
    pub fn remaining(&self) -> Option<u64> {
        self.policy().and_then(Policy::remaining)
    }

    /// The time from `now` until the most restrictive policy's quota resets.
    #[must_use]
    pub fn reset_after(&self) -> Option<Duration> {
        self.policy().and_then(Policy::reset_after)
    }

    /// The window of the most restrictive policy.
    #[must_use]
    pub fn window(&self) -> Option<Duration> {
        self.policy().and_then(Policy::window)
    }

    /// The name of the most restrictive policy.
    #[must_use]
    pub fn policy_name(&self) -> Option<&str> {
        self.policy().and_then(Policy::name)
    }

    /// The partition key of the most restrictive policy.
    #[must_use]
    pub fn partition_key(&self) -> Option<&[u8]> {
        self.policy().and_then(Policy::partition_key)
    }

    /// What the most restrictive policy counts.
    #[must_use]
    pub fn quota_unit(&self) -> Option<&QuotaUnit> {
        self.policy().map(Policy::unit)
    }

    /// The time from `now` the server asked the client to wait (`Retry-After`,
    /// `retry-after-ms`), at most [`MAX_RETRY_AFTER`](Self::MAX_RETRY_AFTER). Zero when the
    /// server said "now" or gave a date in the past.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// `true` when a limit or a remaining was understood.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.policies.iter().any(Policy::has_numbers)
    }

    /// `true` when every policy is sound ([`Policy::is_sound`]): nothing the server sent for a
    /// policy was unreadable, out of range or contradictory. An info without policies is sound.
    ///
    /// ```
    /// use http::HeaderMap;
    /// use pacer_core::RateLimitInfo;
    /// use std::time::SystemTime;
    ///
    /// let mut h = HeaderMap::new();
    /// h.insert("x-ratelimit-limit", "100".parse()?);
    /// h.insert("x-ratelimit-remaining", "40".parse()?);
    /// h.insert("x-ratelimit-reset", "soon".parse()?);
    /// let info = RateLimitInfo::from_headers(&h, SystemTime::UNIX_EPOCH);
    /// assert_eq!(info.remaining(), Some(40));
    /// assert!(!info.is_sound());
    /// # Ok::<(), http::header::InvalidHeaderValue>(())
    /// ```
    #[must_use]
    pub fn is_sound(&self) -> bool {
        self.policies.iter().all(Policy::is_sound)
    }

    /// The same info without its unsound policies; the Retry-After is kept.
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy, RateLimitInfo};
    /// use std::time::Duration;
    ///
    /// let info = RateLimitInfo::new()
    ///     .with_policy(Policy::new(Dialect::OpenAi).with_name("requests").with_remaining(9))
    ///     .with_policy(Policy::new(Dialect::OpenAi).with_name("tokens").with_remaining(0).unsound())
    ///     .with_retry_after(Duration::from_secs(2));
    /// let sound = info.without_unsound();
    /// assert_eq!(sound.policies().len(), 1);
    /// assert_eq!(sound.policy_name(), Some("requests"));
    /// assert_eq!(sound.retry_after(), Some(Duration::from_secs(2)));
    /// assert!(sound.is_sound());
    /// ```
    #[must_use]
    pub fn without_unsound(&self) -> RateLimitInfo {
        RateLimitInfo {
            policies: self
                .policies
                .iter()
                .filter(|p| p.is_sound())
                .cloned()
                .collect(),
            retry_after: self.retry_after,
        }
    }

    /// `true` when the most restrictive policy has no quota left (and so at least one has none).
    #[must_use]
    pub fn is_exhausted(&self) -> bool {
        self.policy().is_some_and(Policy::is_exhausted)
    }

    /// `remaining / limit` of the most restrictive policy, in `[0, 1]`.
    #[must_use]
    pub fn remaining_fraction(&self) -> Option<f64> {
        self.policy().and_then(Policy::remaining_fraction)
    }

    /// `true` when the info reports nothing: no policy and no Retry-After.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty() && self.retry_after.is_none()
    }

    /// The same info `elapsed` after it was observed.
    ///
    /// Resets and the Retry-After count down by `elapsed`. A policy whose reset has passed is
    /// dropped: its numbers describe a window that is over. An exhausted policy without a reset
    /// counts down from its window (else 1 s), so a stop it orders does not restart at every
    /// look. A Retry-After that has passed is dropped. When nothing is left the result
    /// [`is_empty`](Self::is_empty): the state is spent.
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy, RateLimitInfo};
    /// use std::time::Duration;
    ///
    /// let info = RateLimitInfo::new().with_policy(
    ///     Policy::new(Dialect::XRateLimit)
    ///         .with_limit(100)
    ///         .with_remaining(3)
    ///         .with_reset_after(Duration::from_secs(30)),
    /// );
    /// assert_eq!(info.aged(Duration::from_secs(10)).reset_after(), Some(Duration::from_secs(20)));
    /// assert!(info.aged(Duration::from_secs(30)).is_empty());
    /// ```
    #[must_use]
    pub fn aged(&self, elapsed: Duration) -> RateLimitInfo {
        if elapsed.is_zero() {
            return self.clone();
        }
        let mut policies = spare::take();
        policies.extend(self.policies.iter().filter_map(|p| p.aged(elapsed)));
        let retry_after = self
            .retry_after
            .and_then(|r| r.checked_sub(elapsed))
            .filter(|r| !r.is_zero());
        RateLimitInfo::from_parts(policies, retry_after)
    }

    /// The same state with the stops it orders bounded: a Retry-After of at most
    /// `max_retry_after`, and the reset of an exhausted policy of at most `max_exhausted`.
    ///
    /// Bound the state when it is recorded, not when it is read: a stop capped at every look
    /// would start again at every look and never end (a `Retry-After: 1000000000000` capped to
    /// 5 minutes from *each* check is a permanent stop); capped once, it counts down and ends.
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy, RateLimitInfo};
    /// use std::time::Duration;
    ///
    /// let min = Duration::from_secs(60);
    /// let info = RateLimitInfo::new()
    ///     .with_retry_after(Duration::from_secs(1_000_000))
    ///     .with_policy(Policy::new(Dialect::XRateLimit).with_limit(10).with_remaining(0)
    ///         .with_reset_after(Duration::from_secs(86_400)));
    /// let bounded = info.bounded(min, min);
    /// assert_eq!(bounded.retry_after(), Some(min));
    /// assert_eq!(bounded.reset_after(), Some(min));
    /// assert!(bounded.aged(min).is_empty(), "and the stop ends");
    /// ```
    #[must_use]
    pub fn bounded(&self, max_retry_after: Duration, max_exhausted: Duration) -> RateLimitInfo {
        self.clone().into_bounded(max_retry_after, max_exhausted)
    }

    /// [`bounded`](Self::bounded), taking the info: only a policy it bounds is copied.
    pub(crate) fn into_bounded(
        self,
        max_retry_after: Duration,
        max_exhausted: Duration,
    ) -> RateLimitInfo {
        let bounds =
            |p: &Policy| p.is_exhausted() && p.reset_after().is_some_and(|r| r > max_exhausted);
        if self.retry_after.is_none_or(|r| r <= max_retry_after)
            && !self.policies.iter().any(bounds)
        {
            // Nothing to bound (most responses): the info as it is, its order standing.
            return self;
        }
        let (mut policies, retry_after) = self.into_parts();
        for p in &mut policies {
            if p.is_exhausted() && p.reset_after().is_some_and(|reset| reset > max_exhausted) {
                *p = p.clone().with_reset_after(max_exhausted);
            }
        }
        RateLimitInfo::from_parts(policies, retry_after.map(|r| r.min(max_retry_after)))
    }

    /// `true` when [`aged`](Self::aged)`(elapsed)` would be empty, decided without cloning.
    pub(crate) fn is_spent_after(&self, elapsed: Duration) -> bool {
        if elapsed.is_zero() {
            return self.is_empty();
        }
        self.policies.iter().all(|p| p.is_spent_after(elapsed))
            && self.retry_after.is_none_or(|r| r <= elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn top_level_accessors_follow_the_most_restrictive_policy() {
        let info = RateLimitInfo::new()
            .with_policy(
                Policy::new(Dialect::OpenAi)
                    .with_name("requests")
                    .with_limit(60)
                    .with_remaining(59)
                    .with_reset_after(secs(1)),
            )
            .with_policy(
                Policy::new(Dialect::OpenAi)
                    .with_name("tokens")
                    .with_limit(150_000)
                    .with_remaining(1_500)
                    .with_reset_after(secs(360))
                    .with_unit(QuotaUnit::Tokens),
            );
        assert_eq!(info.policy_name(), Some("tokens"));
        assert_eq!(info.limit(), Some(150_000));
        assert_eq!(info.remaining(), Some(1_500));
        assert_eq!(info.reset_after(), Some(secs(360)));
        assert_eq!(info.quota_unit(), Some(&QuotaUnit::Tokens));
        assert_eq!(info.remaining_fraction(), Some(0.01));
        assert!(info.is_valid());
        assert!(!info.is_exhausted());
    }

    #[test]
    fn empty_and_retry_after_only() {
        let empty = RateLimitInfo::new();
        assert!(empty.is_empty() && !empty.is_valid() && !empty.is_exhausted());
        let ra = RateLimitInfo::new().with_retry_after(secs(u64::MAX));
        assert_eq!(ra.retry_after(), Some(RateLimitInfo::MAX_RETRY_AFTER));
        assert!(!ra.is_empty() && !ra.is_valid());
    }

    #[test]
    fn ageing_reorders_drops_and_spends() {
        let info = RateLimitInfo::new()
            .with_policy(
                Policy::new(Dialect::IetfStructured)
                    .with_name("burst")
                    .with_limit(100)
                    .with_remaining(5)
                    .with_reset_after(secs(30)),
            )
            .with_policy(
                Policy::new(Dialect::IetfStructured)
                    .with_name("daily")
                    .with_limit(1000)
                    .with_remaining(300)
                    .with_reset_after(secs(3600)),
            )
            .with_retry_after(secs(10));
        assert_eq!(info.aged(Duration::ZERO), info);
        let later = info.aged(secs(20));
        assert_eq!(later.policy_name(), Some("burst"));
        assert_eq!(later.reset_after(), Some(secs(10)));
        assert_eq!(later.retry_after(), None);
        let after_burst = info.aged(secs(30));
        assert_eq!(after_burst.policy_name(), Some("daily"));
        assert_eq!(after_burst.reset_after(), Some(secs(3570)));
        assert!(info.aged(secs(3600)).is_empty());
    }
}

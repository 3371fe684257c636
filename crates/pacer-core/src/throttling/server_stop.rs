//! The server-ordered stop: when the server has said "stop", no algorithm gets a say.
//!
//! A server orders a stop in two ways: a `Retry-After` (which takes precedence over any
//! RateLimit field, draft-11 §"Receiving"), or a quota exhausted until its reset
//! (`remaining == 0`, as GitHub, Kong and SharePoint send). The middleware asks
//! [`ServerStopPolicy`] first, before any strict window and before the proactive algorithm;
//! [`ServerStopPolicy::apply`] does both steps in that order.

use std::time::Duration;

use super::algorithm::ThrottlingAlgorithm;
use super::context::ThrottlingContext;
use super::error::{ThrottlingConfigError, non_zero};
use super::result::ThrottlingResult;
use crate::{Policy, RateLimitInfo};

/// Why a server-ordered stop holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopCause {
    /// The response carried a `Retry-After` (or `retry-after-ms`) that has not passed.
    RetryAfter,
    /// The most restrictive policy has no quota left until its reset.
    Exhausted,
}

/// A stop the server ordered: wait `delay` before the next request to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerStop {
    delay: Duration,
    cause: StopCause,
}

impl ServerStop {
    /// How long to wait, from the instant the info was adjusted to.
    #[must_use]
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Why.
    #[must_use]
    pub fn cause(&self) -> StopCause {
        self.cause
    }
}

impl From<ServerStop> for ThrottlingResult {
    fn from(stop: ServerStop) -> ThrottlingResult {
        let reason = match stop.cause {
            StopCause::RetryAfter => "server ordered a stop: Retry-After",
            StopCause::Exhausted => "server ordered a stop: quota exhausted until reset",
        };
        ThrottlingResult::throttle(stop.delay, reason)
    }
}

/// Finds server-ordered stops in an endpoint's (adjusted) state.
///
/// * A `Retry-After` above zero stops for exactly that long. It is not capped here beyond the
///   parser's 30 days: the middleware compares it with its own `MaxRetryAfter`/`MaxWait` and
///   rejects a request that would wait longer, rather than sending it before the server allows.
/// * Otherwise an exhausted most-restrictive policy stops until its reset; with no reset (or a
///   reset already at zero) for its window `w`, else 1 s; capped by `max_exhausted_delay`
///   (default 5 min, RateLimitHeaders' `DefaultMaxExhaustedDelay`), because a stale
///   `remaining: 0` with a daily reset should not silence an endpoint for hours without a probe.
///
/// ```
/// use pacer_core::{Dialect, Policy, RateLimitInfo, ServerStopPolicy, StopCause};
/// use std::time::Duration;
///
/// let stop = ServerStopPolicy::default();
/// let exhausted = RateLimitInfo::new().with_policy(
///     Policy::new(Dialect::GitHub)
///         .with_limit(5000)
///         .with_remaining(0)
///         .with_reset_after(Duration::from_secs(40)),
/// );
/// let s = stop.evaluate(&exhausted).expect("a stop");
/// assert_eq!((s.delay(), s.cause()), (Duration::from_secs(40), StopCause::Exhausted));
///
/// let told = exhausted.clone().with_retry_after(Duration::from_secs(20));
/// assert_eq!(stop.evaluate(&told).map(|s| s.cause()), Some(StopCause::RetryAfter));
/// assert_eq!(stop.evaluate(&RateLimitInfo::new()), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerStopPolicy {
    max_exhausted_delay: Duration,
}

impl ServerStopPolicy {
    /// The default cap on a stop for an exhausted quota.
    pub const DEFAULT_MAX_EXHAUSTED_DELAY: Duration = Duration::from_secs(300);

    /// A policy that caps stops for an exhausted quota at `max_exhausted_delay`.
    ///
    /// # Errors
    /// [`ThrottlingConfigError::Invalid`] naming `max_exhausted_delay` when it is zero.
    pub fn new(max_exhausted_delay: Duration) -> Result<Self, ThrottlingConfigError> {
        Ok(ServerStopPolicy {
            max_exhausted_delay: non_zero("max_exhausted_delay", max_exhausted_delay)?,
        })
    }

    /// The cap on a stop for an exhausted quota.
    #[must_use]
    pub fn max_exhausted_delay(&self) -> Duration {
        self.max_exhausted_delay
    }

    /// The stop the server ordered in `info` (already adjusted for elapsed time), if any.
    #[must_use]
    pub fn evaluate(&self, info: &RateLimitInfo) -> Option<ServerStop> {
        if let Some(delay) = info.retry_after().filter(|d| !d.is_zero()) {
            return Some(ServerStop {
                delay,
                cause: StopCause::RetryAfter,
            });
        }
        let policy = info.policy().filter(|p| p.is_exhausted())?;
        let delay = policy.effective_reset()?.min(self.max_exhausted_delay);
        (!delay.is_zero()).then_some(ServerStop {
            delay,
            cause: StopCause::Exhausted,
        })
    }

    /// `false` when no state aged from `info` (the same policies, each reset shorter or
    /// passed, the `Retry-After` shorter or passed) orders a stop: `info` has no `Retry-After`
    /// and no exhausted policy.
    pub(crate) fn may_stop(info: &RateLimitInfo) -> bool {
        info.retry_after().is_some_and(|d| !d.is_zero())
            || info.policies().iter().any(Policy::is_exhausted)
    }

    /// The full proactive decision: the server-ordered stop when there is one, else what
    /// `algorithm` decides.
    #[must_use]
    pub fn apply(
        &self,
        algorithm: &dyn ThrottlingAlgorithm,
        ctx: &ThrottlingContext<'_>,
    ) -> ThrottlingResult {
        match self.evaluate(ctx.info()) {
            Some(stop) => stop.into(),
            None => algorithm.evaluate(ctx),
        }
    }
}

impl Default for ServerStopPolicy {
    fn default() -> Self {
        ServerStopPolicy {
            max_exhausted_delay: Self::DEFAULT_MAX_EXHAUSTED_DELAY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Percentage, Policy};

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn policy(remaining: u64) -> Policy {
        Policy::new(Dialect::IetfStructured)
            .with_limit(100)
            .with_remaining(remaining)
    }

    #[test]
    fn stops_and_their_delays() {
        let cases: Vec<(RateLimitInfo, Option<(Duration, StopCause)>)> = vec![
            (RateLimitInfo::new(), None),
            (
                RateLimitInfo::new().with_policy(policy(1).with_reset_after(s(9))),
                None,
            ),
            (
                RateLimitInfo::new().with_retry_after(s(20)),
                Some((s(20), StopCause::RetryAfter)),
            ),
            // Retry-After wins over a longer reset.
            (
                RateLimitInfo::new()
                    .with_policy(policy(0).with_reset_after(s(60)))
                    .with_retry_after(s(20)),
                Some((s(20), StopCause::RetryAfter)),
            ),
            // Retry-After is not capped here; the middleware applies MaxRetryAfter.
            (
                RateLimitInfo::new().with_retry_after(s(3600)),
                Some((s(3600), StopCause::RetryAfter)),
            ),
            // "Retry now" with quota left: no stop.
            (RateLimitInfo::new().with_retry_after(Duration::ZERO), None),
            (
                RateLimitInfo::new().with_policy(policy(0).with_reset_after(s(40))),
                Some((s(40), StopCause::Exhausted)),
            ),
            // No reset: the window, else 1 s; a zero reset the same.
            (
                RateLimitInfo::new().with_policy(policy(0).with_window(s(10))),
                Some((s(10), StopCause::Exhausted)),
            ),
            (
                RateLimitInfo::new().with_policy(policy(0)),
                Some((s(1), StopCause::Exhausted)),
            ),
            (
                RateLimitInfo::new().with_policy(policy(0).with_reset_after(Duration::ZERO)),
                Some((s(1), StopCause::Exhausted)),
            ),
            // Capped at 5 min.
            (
                RateLimitInfo::new().with_policy(policy(0).with_reset_after(s(86_400))),
                Some((s(300), StopCause::Exhausted)),
            ),
        ];
        let stop = ServerStopPolicy::default();
        for (i, (info, want)) in cases.into_iter().enumerate() {
            let got = stop.evaluate(&info).map(|s| (s.delay(), s.cause()));
            assert_eq!(got, want, "case {i}");
        }
    }

    #[test]
    fn the_stop_comes_before_the_algorithm() {
        let stop = ServerStopPolicy::new(s(30)).unwrap();
        let exhausted = RateLimitInfo::new().with_policy(policy(0).with_reset_after(s(3600)));
        let ctx = ThrottlingContext::new(&exhausted, "k");
        let got = stop.apply(&Percentage::default(), &ctx);
        assert_eq!(got.delay(), s(30));
        assert_eq!(
            got.reason(),
            Some("server ordered a stop: quota exhausted until reset")
        );
        let low = RateLimitInfo::new().with_policy(policy(8).with_reset_after(s(30)));
        let got = stop.apply(&Percentage::default(), &ThrottlingContext::new(&low, "k"));
        assert_eq!(got.delay(), Duration::from_millis(600));
        assert!(ServerStopPolicy::new(Duration::ZERO).is_err());
    }
}

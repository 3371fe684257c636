//! [`Pacing`]: spreads what is left of the quota evenly over the time to reset. Suits a steady
//! stream of requests. (The RateLimitHeaders library calls it `TokenBucketAlgorithm`.)

use std::time::Duration;

use super::algorithm::ThrottlingAlgorithm;
use super::context::ThrottlingContext;
use super::result::ThrottlingResult;

/// Spaces requests `reset / (remaining − reserve)` apart, keeping `reserve` requests back.
///
/// The spacing is measured from the **last request sent to the endpoint**: the delay is
/// `spacing − since_last_request`, so a request that comes late anyway does not wait, and the
/// first request (no `since_last_request`) goes at once. Spacing below `min_spacing` is not
/// enforced. At `reserve` or fewer requests left it waits for the whole reset.
///
/// Defaults (the RateLimitHeaders library's `TokenBucketAlgorithm`): reserve 2, min spacing 50 ms. No throttle
/// without a remaining and a reset.
///
/// Concurrent requests to one endpoint all see the same `since_last_request` until one of them
/// is recorded as sent, so pacing is exact for a sequential stream and approximate under
/// concurrency.
///
/// ```
/// use pacer_core::{Dialect, Pacing, Policy, RateLimitInfo, ThrottlingAlgorithm, ThrottlingContext};
/// use std::time::Duration;
///
/// // 12 left, 2 kept back: 10 requests over 5 s, one every 500 ms.
/// let info = RateLimitInfo::new().with_policy(
///     Policy::new(Dialect::XRateLimit)
///         .with_remaining(12)
///         .with_reset_after(Duration::from_secs(5)),
/// );
/// let ctx = ThrottlingContext::new(&info, "api")
///     .with_since_last_request(Some(Duration::from_millis(200)));
/// assert_eq!(Pacing::default().evaluate(&ctx).delay(), Duration::from_millis(300));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    reserve: u64,
    min_spacing: Duration,
}

impl Pacing {
    /// The default number of requests kept back.
    pub const DEFAULT_RESERVE: u64 = 2;
    /// The default smallest spacing worth enforcing.
    pub const DEFAULT_MIN_SPACING: Duration = Duration::from_millis(50);

    /// Pacing that keeps `reserve` requests back, with the default minimum spacing.
    #[must_use]
    pub fn new(reserve: u64) -> Pacing {
        Pacing {
            reserve,
            min_spacing: Self::DEFAULT_MIN_SPACING,
        }
    }

    /// Sets the smallest spacing worth enforcing (any duration; zero enforces every spacing).
    #[must_use]
    pub fn with_min_spacing(mut self, min_spacing: Duration) -> Pacing {
        self.min_spacing = min_spacing;
        self
    }

    /// The number of requests kept back.
    #[must_use]
    pub fn reserve(&self) -> u64 {
        self.reserve
    }

    /// The smallest spacing worth enforcing.
    #[must_use]
    pub fn min_spacing(&self) -> Duration {
        self.min_spacing
    }
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing::new(Self::DEFAULT_RESERVE)
    }
}

impl ThrottlingAlgorithm for Pacing {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        let info = ctx.info();
        let (Some(remaining), Some(reset)) = (info.remaining(), info.reset_after()) else {
            return ThrottlingResult::NO_THROTTLE;
        };
        if remaining <= self.reserve {
            return ThrottlingResult::throttle(
                reset,
                format!(
                    "{remaining} left (reserve {}), waiting for the reset",
                    self.reserve
                ),
            );
        }
        let available = remaining - self.reserve;
        let spacing = reset / u32::try_from(available).unwrap_or(u32::MAX);
        if spacing < self.min_spacing {
            return ThrottlingResult::NO_THROTTLE;
        }
        let wait = match ctx.since_last_request() {
            Some(since) => spacing.saturating_sub(since),
            None => Duration::ZERO,
        };
        ThrottlingResult::throttle(
            wait,
            format!(
                "pacing {available} requests over {:.1} s, one per {} ms",
                reset.as_secs_f64(),
                spacing.as_millis()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Policy, RateLimitInfo};

    fn info(remaining: u64, reset_ms: Option<u64>) -> RateLimitInfo {
        let mut p = Policy::new(Dialect::XRateLimit).with_remaining(remaining);
        if let Some(t) = reset_ms {
            p = p.with_reset_after(Duration::from_millis(t));
        }
        RateLimitInfo::new().with_policy(p)
    }

    #[test]
    fn spacing_relative_to_the_last_send() {
        let ms = Duration::from_millis;
        let cases = [
            // (remaining, reset ms, since last) -> delay
            ((12, Some(5000), Some(ms(200))), ms(300)),
            ((12, Some(5000), Some(ms(500))), Duration::ZERO),
            ((12, Some(5000), Some(ms(900))), Duration::ZERO),
            ((12, Some(5000), None), Duration::ZERO),
            ((12, Some(5000), Some(Duration::ZERO)), ms(500)),
            // 100 over 4 s: 40 ms apart, below 50 ms: not enforced.
            ((102, Some(4000), Some(Duration::ZERO)), Duration::ZERO),
            // At the reserve: the whole reset.
            ((2, Some(5000), Some(ms(10_000))), ms(5000)),
            ((0, Some(700), None), ms(700)),
            ((0, Some(0), None), Duration::ZERO),
            ((5, None, Some(Duration::ZERO)), Duration::ZERO),
        ];
        for ((r, t, since), want) in cases {
            let i = info(r, t);
            let ctx = ThrottlingContext::new(&i, "k").with_since_last_request(since);
            assert_eq!(
                Pacing::default().evaluate(&ctx).delay(),
                want,
                "r={r} t={t:?} since={since:?}"
            );
        }
    }

    #[test]
    fn min_spacing_can_be_lowered() {
        let i = info(102, Some(4000));
        let ctx = ThrottlingContext::new(&i, "k").with_since_last_request(Some(Duration::ZERO));
        let p = Pacing::new(2).with_min_spacing(Duration::ZERO);
        assert_eq!(p.evaluate(&ctx).delay(), Duration::from_millis(40));
    }
}

//! [`FixedThreshold`]: a fixed wait once the remaining count is low. Suits bursty traffic with
//! quiet periods: full speed until the last few requests of the window.

use std::time::Duration;

use super::algorithm::ThrottlingAlgorithm;
use super::context::ThrottlingContext;
use super::error::{ThrottlingConfigError, non_zero};
use super::result::ThrottlingResult;

/// Waits `delay` whenever the remaining quota is `min_remaining` or less.
///
/// Defaults (the RateLimitHeaders library's `FixedThresholdAlgorithm`): min remaining 5, delay 1 s. No throttle when
/// the remaining is unknown.
///
/// ```
/// use pacer_core::{Dialect, FixedThreshold, Policy, RateLimitInfo, ThrottlingAlgorithm, ThrottlingContext};
/// use std::time::Duration;
///
/// let low = RateLimitInfo::new().with_policy(Policy::new(Dialect::XRateLimit).with_remaining(5));
/// let alg = FixedThreshold::default();
/// assert_eq!(alg.evaluate(&ThrottlingContext::new(&low, "api")).delay(), Duration::from_secs(1));
///
/// let strict = FixedThreshold::new(20, Duration::from_millis(250))?;
/// assert_eq!(strict.evaluate(&ThrottlingContext::new(&low, "api")).delay(), Duration::from_millis(250));
/// # Ok::<(), pacer_core::ThrottlingConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedThreshold {
    min_remaining: u64,
    delay: Duration,
}

impl FixedThreshold {
    /// The default count at or below which it throttles.
    pub const DEFAULT_MIN_REMAINING: u64 = 5;
    /// The default wait.
    pub const DEFAULT_DELAY: Duration = Duration::from_secs(1);

    /// Throttles by `delay` (above zero) at `min_remaining` or fewer requests left.
    ///
    /// # Errors
    /// [`ThrottlingConfigError::Invalid`] naming `delay` when it is zero.
    pub fn new(min_remaining: u64, delay: Duration) -> Result<Self, ThrottlingConfigError> {
        Ok(FixedThreshold {
            min_remaining,
            delay: non_zero("delay", delay)?,
        })
    }

    /// The count at or below which it throttles.
    #[must_use]
    pub fn min_remaining(&self) -> u64 {
        self.min_remaining
    }

    /// The wait.
    #[must_use]
    pub fn delay(&self) -> Duration {
        self.delay
    }
}

impl Default for FixedThreshold {
    fn default() -> Self {
        FixedThreshold {
            min_remaining: Self::DEFAULT_MIN_REMAINING,
            delay: Self::DEFAULT_DELAY,
        }
    }
}

impl ThrottlingAlgorithm for FixedThreshold {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        match ctx.info().remaining() {
            Some(r) if r <= self.min_remaining => ThrottlingResult::throttle(
                self.delay,
                format!("only {r} remaining (at most {})", self.min_remaining),
            ),
            _ => ThrottlingResult::NO_THROTTLE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Policy, RateLimitInfo};

    #[test]
    fn throttles_at_or_below_the_count() {
        let cases = [
            (Some(0), true),
            (Some(5), true),
            (Some(6), false),
            (None, false),
        ];
        for (remaining, throttles) in cases {
            let mut p = Policy::new(Dialect::XRateLimit).with_limit(100);
            if let Some(r) = remaining {
                p = p.with_remaining(r);
            }
            let info = RateLimitInfo::new().with_policy(p);
            let got = FixedThreshold::default().evaluate(&ThrottlingContext::new(&info, "k"));
            assert_eq!(got.should_throttle(), throttles, "{remaining:?}");
            if throttles {
                assert_eq!(got.delay(), Duration::from_secs(1));
            }
        }
    }

    #[test]
    fn a_zero_delay_is_rejected() {
        assert!(matches!(
            FixedThreshold::new(5, Duration::ZERO),
            Err(ThrottlingConfigError::Invalid {
                parameter: "delay",
                ..
            })
        ));
    }
}

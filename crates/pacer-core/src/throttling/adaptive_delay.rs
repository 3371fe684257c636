//! [`AdaptiveDelay`]: a delay that grows linearly as the quota runs out. Suits unpredictable
//! load: no wait with plenty left, the minimum at the threshold, the maximum at zero.

use std::time::Duration;

use super::algorithm::ThrottlingAlgorithm;
use super::context::ThrottlingContext;
use super::error::{ThrottlingConfigError, fraction, non_zero};
use super::result::{ThrottlingResult, delay_from_secs};

/// Throttles once the remaining fraction is at or below `threshold`, by
/// `min_delay + (max_delay − min_delay) × (1 − fraction / threshold)`.
///
/// Defaults (the RateLimitHeaders library's `AdaptiveDelayAlgorithm`): threshold 0.2, min delay 100 ms, max delay
/// 10 s. No throttle when the remaining or a non-zero limit is unknown.
///
/// ```
/// use pacer_core::{AdaptiveDelay, Dialect, Policy, RateLimitInfo, ThrottlingAlgorithm, ThrottlingContext};
/// use std::time::Duration;
///
/// let info = RateLimitInfo::new()
///     .with_policy(Policy::new(Dialect::XRateLimit).with_limit(100).with_remaining(10));
/// // Half way from the threshold (20 %) to zero: half way from 100 ms to 10 s.
/// let got = AdaptiveDelay::default().evaluate(&ThrottlingContext::new(&info, "api"));
/// assert_eq!(got.delay(), Duration::from_millis(5050));
///
/// let tight = AdaptiveDelay::builder().threshold(0.3).max_delay(Duration::from_secs(5)).build()?;
/// assert!(tight.evaluate(&ThrottlingContext::new(&info, "api")).should_throttle());
/// # Ok::<(), pacer_core::ThrottlingConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveDelay {
    threshold: f64,
    min_delay: Duration,
    max_delay: Duration,
}

impl AdaptiveDelay {
    /// The default threshold: throttle at or below 20 % left.
    pub const DEFAULT_THRESHOLD: f64 = 0.2;
    /// The default delay at the threshold.
    pub const DEFAULT_MIN_DELAY: Duration = Duration::from_millis(100);
    /// The default delay with nothing left.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(10);

    /// A builder starting from the defaults.
    pub fn builder() -> AdaptiveDelayBuilder {
        AdaptiveDelayBuilder {
            threshold: Self::DEFAULT_THRESHOLD,
            min_delay: Self::DEFAULT_MIN_DELAY,
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }

    /// The remaining fraction at or below which it throttles.
    #[must_use]
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The delay at the threshold.
    #[must_use]
    pub fn min_delay(&self) -> Duration {
        self.min_delay
    }

    /// The delay with nothing left.
    #[must_use]
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }
}

impl Default for AdaptiveDelay {
    fn default() -> Self {
        AdaptiveDelay {
            threshold: Self::DEFAULT_THRESHOLD,
            min_delay: Self::DEFAULT_MIN_DELAY,
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }
}

/// Builds a validated [`AdaptiveDelay`].
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct AdaptiveDelayBuilder {
    threshold: f64,
    min_delay: Duration,
    max_delay: Duration,
}

impl AdaptiveDelayBuilder {
    /// The remaining fraction at or below which to throttle, in `(0, 1]` (default 0.2).
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// The delay at the threshold (default 100 ms).
    pub fn min_delay(mut self, min_delay: Duration) -> Self {
        self.min_delay = min_delay;
        self
    }

    /// The delay with nothing left, above zero and at least `min_delay` (default 10 s).
    pub fn max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// The algorithm, or the first parameter out of range.
    ///
    /// # Errors
    /// [`ThrottlingConfigError::Invalid`] naming `threshold` or `max_delay`.
    pub fn build(self) -> Result<AdaptiveDelay, ThrottlingConfigError> {
        let threshold = fraction("threshold", self.threshold)?;
        let max_delay = non_zero("max_delay", self.max_delay)?;
        if max_delay < self.min_delay {
            return Err(ThrottlingConfigError::Invalid {
                parameter: "max_delay",
                value: format!("{max_delay:?}"),
                expected: "a delay at least min_delay",
            });
        }
        Ok(AdaptiveDelay {
            threshold,
            min_delay: self.min_delay,
            max_delay,
        })
    }
}

impl ThrottlingAlgorithm for AdaptiveDelay {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        let Some(left) = ctx.info().remaining_fraction() else {
            return ThrottlingResult::NO_THROTTLE;
        };
        if left > self.threshold {
            return ThrottlingResult::NO_THROTTLE;
        }
        let severity = 1.0 - left / self.threshold;
        let range = (self.max_delay - self.min_delay).as_secs_f64();
        let delay = self.min_delay + delay_from_secs(range * severity);
        ThrottlingResult::throttle(
            delay,
            format!(
                "quota at {:.0}%, delaying {} ms",
                left * 100.0,
                delay.as_millis()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Policy, RateLimitInfo};

    #[test]
    fn scales_from_min_at_the_threshold_to_max_at_zero() {
        let ms = Duration::from_millis;
        let cases = [
            (21, Duration::ZERO),
            (20, ms(100)),
            (10, ms(5050)),
            (5, ms(7525)),
            (0, ms(10_000)),
        ];
        for (remaining, want) in cases {
            let info = RateLimitInfo::new().with_policy(
                Policy::new(Dialect::XRateLimit)
                    .with_limit(100)
                    .with_remaining(remaining)
                    .with_reset_after(Duration::from_secs(60)),
            );
            let got = AdaptiveDelay::default().evaluate(&ThrottlingContext::new(&info, "k"));
            assert_eq!(got.delay(), want, "{remaining}/100");
        }
    }

    #[test]
    fn no_limit_no_throttle() {
        let info =
            RateLimitInfo::new().with_policy(Policy::new(Dialect::XRateLimit).with_remaining(0));
        let got = AdaptiveDelay::default().evaluate(&ThrottlingContext::new(&info, "k"));
        assert!(!got.should_throttle());
    }

    #[test]
    fn builder_validates() {
        let b = AdaptiveDelay::builder;
        assert_eq!(b().build(), Ok(AdaptiveDelay::default()));
        assert!(b().threshold(f64::NAN).build().is_err());
        assert!(
            b().min_delay(Duration::from_secs(20))
                .build()
                .unwrap_err()
                .to_string()
                .starts_with("invalid max_delay = 10s")
        );
        assert!(
            b().max_delay(Duration::ZERO)
                .min_delay(Duration::ZERO)
                .build()
                .is_err()
        );
    }
}

//! [`Percentage`]: the default algorithm. Waits in proportion to how far the remaining quota has
//! fallen below a threshold and how long the window still runs.

use std::time::Duration;

use super::algorithm::ThrottlingAlgorithm;
use super::context::ThrottlingContext;
use super::error::{ThrottlingConfigError, fraction, non_zero, positive};
use super::result::{ThrottlingResult, delay_from_secs};
use crate::RateLimitInfo;

/// Throttles once the remaining fraction drops below `threshold`:
/// `delay = (threshold − remaining/limit) × reset × factor`, capped at `max_delay`; delays under
/// 10 ms are not worth a wait and give no throttle. No throttle either when the remaining, the
/// limit (or a zero limit) or the reset is unknown.
///
/// Defaults (RateLimitHeaders' `PercentageThrottlingAlgorithm`): threshold 0.1, factor 1.0, max
/// delay 5 s. With them, 8/100 left and a 30 s reset wait 0.6 s; 3/100 wait 2.1 s; 1/100 with a
/// 60 s reset would wait 5.4 s and is capped at 5 s.
///
/// ```
/// use pacer_core::{Dialect, Percentage, Policy, RateLimitInfo, ThrottlingAlgorithm, ThrottlingContext};
/// use std::time::Duration;
///
/// let info = RateLimitInfo::new().with_policy(
///     Policy::new(Dialect::XRateLimit)
///         .with_limit(100)
///         .with_remaining(8)
///         .with_reset_after(Duration::from_secs(30)),
/// );
/// let result = Percentage::default().evaluate(&ThrottlingContext::new(&info, "api"));
/// assert_eq!(result.delay(), Duration::from_millis(600));
///
/// let gentle = Percentage::builder().threshold(0.2).factor(0.5).build()?;
/// assert_eq!(gentle.evaluate(&ThrottlingContext::new(&info, "api")).delay(), Duration::from_millis(1800));
/// # Ok::<(), pacer_core::ThrottlingConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentage {
    threshold: f64,
    factor: f64,
    max_delay: Duration,
}

impl Percentage {
    /// The default threshold: throttle below 10 % of the quota left.
    pub const DEFAULT_THRESHOLD: f64 = 0.1;
    /// The default factor on the delay.
    pub const DEFAULT_FACTOR: f64 = 1.0;
    /// The default cap on one delay.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(5);
    /// Delays shorter than this are not worth a wait.
    pub const MIN_DELAY: Duration = Duration::from_millis(10);

    /// A builder starting from the defaults.
    pub fn builder() -> PercentageBuilder {
        PercentageBuilder {
            threshold: Self::DEFAULT_THRESHOLD,
            factor: Self::DEFAULT_FACTOR,
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }

    /// The remaining fraction below which it throttles.
    #[must_use]
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The factor on the delay.
    #[must_use]
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The cap on one delay.
    #[must_use]
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }
}

impl Default for Percentage {
    fn default() -> Self {
        Percentage {
            threshold: Self::DEFAULT_THRESHOLD,
            factor: Self::DEFAULT_FACTOR,
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }
}

/// Builds a validated [`Percentage`].
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct PercentageBuilder {
    threshold: f64,
    factor: f64,
    max_delay: Duration,
}

impl PercentageBuilder {
    /// The remaining fraction below which to throttle, in `(0, 1]` (default 0.1).
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// A finite factor above 0 on every delay (default 1.0).
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }

    /// The cap on one delay, above zero (default 5 s).
    pub fn max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// The algorithm, or the first parameter out of range.
    ///
    /// # Errors
    /// [`ThrottlingConfigError::Invalid`] naming `threshold`, `factor` or `max_delay`.
    pub fn build(self) -> Result<Percentage, ThrottlingConfigError> {
        Ok(Percentage {
            threshold: fraction("threshold", self.threshold)?,
            factor: positive("factor", self.factor)?,
            max_delay: non_zero("max_delay", self.max_delay)?,
        })
    }
}

impl ThrottlingAlgorithm for Percentage {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        let info = ctx.info();
        let Some(left) = info.remaining_fraction() else {
            return ThrottlingResult::NO_THROTTLE;
        };
        if left >= self.threshold {
            return ThrottlingResult::NO_THROTTLE;
        }
        let reset = info.reset_after().unwrap_or_default().as_secs_f64();
        let secs =
            ((self.threshold - left) * reset * self.factor).min(self.max_delay.as_secs_f64());
        let delay = delay_from_secs(secs);
        if delay < Self::MIN_DELAY {
            return ThrottlingResult::NO_THROTTLE;
        }
        ThrottlingResult::throttle(
            delay,
            format!(
                "quota at {:.1}% (below {:.0}% threshold)",
                left * 100.0,
                self.threshold * 100.0
            ),
        )
    }

    /// Only a policy under the threshold can be the one it delays for: aging changes no
    /// policy's fraction.
    fn may_throttle(&self, info: &RateLimitInfo) -> bool {
        info.policies().iter().any(|p| {
            p.remaining_fraction()
                .is_some_and(|left| left < self.threshold)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Policy, RateLimitInfo};
    use proptest::prelude::*;

    /// Up to three policies, each with or without a remaining, a limit and a reset.
    fn policies() -> impl Strategy<Value = RateLimitInfo> {
        let policy = (
            proptest::option::of(0u64..120),
            proptest::option::of(0u64..120),
            proptest::option::of(0u64..90),
        )
            .prop_map(|(remaining, limit, reset)| {
                let mut p = Policy::new(Dialect::XRateLimit);
                p.set_remaining(remaining);
                p.set_limit(limit);
                p.set_reset_after(reset.map(Duration::from_secs));
                p
            });
        proptest::collection::vec(policy, 0..4).prop_map(|ps| {
            ps.into_iter()
                .fold(RateLimitInfo::new(), RateLimitInfo::with_policy)
        })
    }

    proptest! {
        #[test]
        fn where_it_may_not_throttle_no_age_of_the_state_is_delayed(
            info in policies(),
            threshold in 0.05f64..1.0,
            elapsed in 0u64..100,
        ) {
            let p = Percentage::builder().threshold(threshold).build().unwrap();
            let aged = info.aged(Duration::from_secs(elapsed));
            let result = p.evaluate(&ThrottlingContext::new(&aged, "a"));
            if !p.may_throttle(&info) {
                prop_assert!(!result.should_throttle(), "{:?} after {} s", info, elapsed);
            }
        }
    }

    fn info(remaining: Option<u64>, limit: Option<u64>, reset: Option<u64>) -> RateLimitInfo {
        let mut p = Policy::new(Dialect::XRateLimit);
        if let Some(r) = remaining {
            p = p.with_remaining(r);
        }
        if let Some(l) = limit {
            p = p.with_limit(l);
        }
        if let Some(t) = reset {
            p = p.with_reset_after(Duration::from_secs(t));
        }
        RateLimitInfo::new().with_policy(p)
    }

    #[test]
    fn rate_limit_headers_worked_delays_and_edges() {
        let ms = Duration::from_millis;
        let cases = [
            // (remaining, limit, reset s) -> delay
            ((Some(8), Some(100), Some(30)), ms(600)),
            ((Some(3), Some(100), Some(30)), ms(2100)),
            ((Some(1), Some(100), Some(60)), ms(5000)),
            ((Some(0), Some(100), Some(30)), ms(3000)),
            ((Some(10), Some(100), Some(30)), Duration::ZERO),
            ((Some(50), Some(100), Some(30)), Duration::ZERO),
            // (0.1 − 0.0999) × 60 s = 6 ms: under 10 ms, no wait.
            ((Some(999), Some(10_000), Some(60)), Duration::ZERO),
            ((Some(8), Some(100), None), Duration::ZERO),
            ((Some(8), None, Some(30)), Duration::ZERO),
            ((None, Some(100), Some(30)), Duration::ZERO),
            ((Some(0), Some(0), Some(30)), Duration::ZERO),
        ];
        for ((r, l, t), want) in cases {
            let i = info(r, l, t);
            let got = Percentage::default().evaluate(&ThrottlingContext::new(&i, "k"));
            assert_eq!(got.delay(), want, "{r:?}/{l:?} reset {t:?}");
            assert_eq!(got.should_throttle(), !want.is_zero());
        }
    }

    #[test]
    fn reason_names_the_quota_and_threshold() {
        let i = info(Some(8), Some(100), Some(30));
        let got = Percentage::default().evaluate(&ThrottlingContext::new(&i, "k"));
        assert_eq!(got.reason(), Some("quota at 8.0% (below 10% threshold)"));
    }

    #[test]
    fn builder_validates_each_parameter() {
        let b = Percentage::builder;
        assert_eq!(b().build(), Ok(Percentage::default()));
        let param = |r: Result<Percentage, ThrottlingConfigError>| match r {
            Err(ThrottlingConfigError::Invalid { parameter, .. }) => parameter,
            other => panic!("expected an error, got {other:?}"),
        };
        assert_eq!(param(b().threshold(0.0).build()), "threshold");
        assert_eq!(param(b().factor(-1.0).build()), "factor");
        assert_eq!(param(b().max_delay(Duration::ZERO).build()), "max_delay");
    }
}

//! [`Global`]: throttles every endpoint when any tracked endpoint runs low, for quotas shared
//! across the endpoints of one API.

use std::time::Duration;

use super::algorithm::ThrottlingAlgorithm;
use super::context::ThrottlingContext;
use super::error::{ThrottlingConfigError, fraction, non_zero};
use super::result::{ThrottlingResult, delay_from_secs};
use crate::RateLimitInfo;

/// Looks at the lowest remaining fraction across all tracked endpoints (and this one). At or
/// below `threshold` it waits `longest reset × (1 − lowest / threshold)`, the longest reset
/// taken over the same states; capped at `max_delay`.
///
/// Without a state provider in the context it judges this endpoint alone and waits half its
/// reset once it is at or below the threshold.
///
/// Defaults: threshold 0.15 (the RateLimitHeaders library's `GlobalThrottlingAlgorithm`); max delay 5 min, a cap the
/// RateLimitHeaders library does not have, added so that a daily policy's reset cannot turn into an hours-long wait
/// (it matches the server-ordered stop's cap).
///
/// ```
/// use pacer_core::{Dialect, Global, Policy, RateLimitInfo, ThrottlingAlgorithm, ThrottlingContext};
/// use std::collections::HashMap;
/// use std::time::Duration;
///
/// let state = |remaining, reset| {
///     RateLimitInfo::new().with_policy(
///         Policy::new(Dialect::XRateLimit)
///             .with_limit(100)
///             .with_remaining(remaining)
///             .with_reset_after(Duration::from_secs(reset)),
///     )
/// };
/// let mut all = HashMap::new();
/// all.insert("search".to_owned(), state(3, 60)); // 3 % left somewhere else
/// all.insert("core".to_owned(), state(90, 30));
///
/// let here = state(90, 30);
/// let ctx = ThrottlingContext::new(&here, "core").with_states(&all);
/// // 60 s × (1 − 0.03 / 0.15) = 48 s.
/// assert_eq!(Global::default().evaluate(&ctx).delay(), Duration::from_secs(48));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Global {
    threshold: f64,
    max_delay: Duration,
}

impl Global {
    /// The default threshold: throttle at or below 15 % left anywhere.
    pub const DEFAULT_THRESHOLD: f64 = 0.15;
    /// The default cap on one delay.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(300);

    /// A builder starting from the defaults.
    pub fn builder() -> GlobalBuilder {
        GlobalBuilder {
            threshold: Self::DEFAULT_THRESHOLD,
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }

    /// The remaining fraction at or below which it throttles.
    #[must_use]
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The cap on one delay.
    #[must_use]
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }

    fn single(&self, info: &RateLimitInfo) -> ThrottlingResult {
        match info.remaining_fraction() {
            Some(left) if left <= self.threshold => {
                let half = info.reset_after().unwrap_or_default() / 2;
                ThrottlingResult::throttle(
                    half.min(self.max_delay),
                    format!("endpoint quota at {:.0}%", left * 100.0),
                )
            }
            _ => ThrottlingResult::NO_THROTTLE,
        }
    }
}

impl Default for Global {
    fn default() -> Self {
        Global {
            threshold: Self::DEFAULT_THRESHOLD,
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }
}

/// Builds a validated [`Global`].
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct GlobalBuilder {
    threshold: f64,
    max_delay: Duration,
}

impl GlobalBuilder {
    /// The remaining fraction at or below which to throttle, in `(0, 1]` (default 0.15).
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// The cap on one delay, above zero (default 5 min).
    pub fn max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// The algorithm, or the first parameter out of range.
    ///
    /// # Errors
    /// [`ThrottlingConfigError::Invalid`] naming `threshold` or `max_delay`.
    pub fn build(self) -> Result<Global, ThrottlingConfigError> {
        Ok(Global {
            threshold: fraction("threshold", self.threshold)?,
            max_delay: non_zero("max_delay", self.max_delay)?,
        })
    }
}

impl ThrottlingAlgorithm for Global {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        let Some(states) = ctx.states() else {
            return self.single(ctx.info());
        };
        let mut lowest = f64::INFINITY;
        let mut longest_reset = Duration::ZERO;
        let mut counted = 0usize;
        let mut consider = |info: &RateLimitInfo| {
            if let Some(left) = info.remaining_fraction() {
                lowest = lowest.min(left);
                longest_reset = longest_reset.max(info.reset_after().unwrap_or_default());
                counted += 1;
            }
        };
        consider(ctx.info());
        states.for_each_state(&mut |_, info| consider(info));
        if counted == 0 || lowest > self.threshold {
            return ThrottlingResult::NO_THROTTLE;
        }
        let secs = longest_reset.as_secs_f64() * (1.0 - lowest / self.threshold);
        ThrottlingResult::throttle(
            delay_from_secs(secs).min(self.max_delay),
            format!(
                "global quota at {:.0}% across {counted} states",
                lowest * 100.0
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Policy};
    use std::collections::HashMap;

    fn state(remaining: u64, reset: u64) -> RateLimitInfo {
        RateLimitInfo::new().with_policy(
            Policy::new(Dialect::XRateLimit)
                .with_limit(100)
                .with_remaining(remaining)
                .with_reset_after(Duration::from_secs(reset)),
        )
    }

    #[test]
    fn across_states() {
        let s = Duration::from_secs;
        let cases: Vec<(Vec<(u64, u64)>, Duration)> = vec![
            (vec![(3, 60), (90, 30)], s(48)),
            (vec![(16, 60), (90, 30)], Duration::ZERO),
            (vec![(15, 60)], Duration::ZERO),
            (vec![(0, 20), (90, 600)], s(300)),
            (vec![(0, 20), (90, 100)], s(100)),
            (vec![], Duration::ZERO),
        ];
        for (states, want) in cases {
            let all: HashMap<String, RateLimitInfo> = states
                .iter()
                .enumerate()
                .map(|(i, (r, t))| (i.to_string(), state(*r, *t)))
                .collect();
            let here = RateLimitInfo::new();
            let ctx = ThrottlingContext::new(&here, "k").with_states(&all);
            assert_eq!(Global::default().evaluate(&ctx).delay(), want, "{states:?}");
        }
    }

    #[test]
    fn alone_it_waits_half_the_reset() {
        let low = state(10, 60);
        let got = Global::default().evaluate(&ThrottlingContext::new(&low, "k"));
        assert_eq!(got.delay(), Duration::from_secs(30));
        let fine = state(50, 60);
        assert!(
            !Global::default()
                .evaluate(&ThrottlingContext::new(&fine, "k"))
                .should_throttle()
        );
        assert!(Global::builder().threshold(2.0).build().is_err());
        assert!(Global::builder().max_delay(Duration::ZERO).build().is_err());
    }
}

//! [`Composite`]: several algorithms in order; the first that throttles decides.

use super::algorithm::ThrottlingAlgorithm;
use super::context::ThrottlingContext;
use super::error::ThrottlingConfigError;
use super::result::ThrottlingResult;

/// Asks each algorithm in turn and returns the first throttle; no throttle if none does. Use it
/// for a primary strategy with a conservative fallback.
///
/// ```
/// use pacer_core::{Composite, Dialect, FixedThreshold, Pacing, Percentage, Policy, RateLimitInfo, ThrottlingAlgorithm, ThrottlingContext};
/// use std::time::Duration;
///
/// let alg = Composite::builder()
///     .then(Percentage::default())
///     .then(FixedThreshold::default())
///     .build()?;
/// // 5 of 40 left is 12.5 %: Percentage lets it go, FixedThreshold does not.
/// let info = RateLimitInfo::new()
///     .with_policy(Policy::new(Dialect::XRateLimit).with_limit(40).with_remaining(5));
/// assert_eq!(alg.evaluate(&ThrottlingContext::new(&info, "api")).delay(), Duration::from_secs(1));
/// # Ok::<(), pacer_core::ThrottlingConfigError>(())
/// ```
#[derive(Debug)]
pub struct Composite {
    algorithms: Vec<Box<dyn ThrottlingAlgorithm>>,
}

impl Composite {
    /// A composite of `algorithms`, asked in order.
    ///
    /// # Errors
    /// [`ThrottlingConfigError::EmptyComposite`] when `algorithms` is empty.
    pub fn new(
        algorithms: Vec<Box<dyn ThrottlingAlgorithm>>,
    ) -> Result<Composite, ThrottlingConfigError> {
        if algorithms.is_empty() {
            return Err(ThrottlingConfigError::EmptyComposite);
        }
        Ok(Composite { algorithms })
    }

    /// A builder with no algorithm yet.
    pub fn builder() -> CompositeBuilder {
        CompositeBuilder {
            algorithms: Vec::new(),
        }
    }

    /// The algorithms, in the order they are asked.
    #[must_use]
    pub fn algorithms(&self) -> &[Box<dyn ThrottlingAlgorithm>] {
        &self.algorithms
    }
}

/// Builds a [`Composite`] one algorithm at a time.
#[derive(Debug)]
#[must_use]
pub struct CompositeBuilder {
    algorithms: Vec<Box<dyn ThrottlingAlgorithm>>,
}

impl CompositeBuilder {
    /// Adds `algorithm`, asked after those already added.
    pub fn then(mut self, algorithm: impl ThrottlingAlgorithm + 'static) -> Self {
        self.algorithms.push(Box::new(algorithm));
        self
    }

    /// The composite.
    ///
    /// # Errors
    /// [`ThrottlingConfigError::EmptyComposite`] when no algorithm was added.
    pub fn build(self) -> Result<Composite, ThrottlingConfigError> {
        Composite::new(self.algorithms)
    }
}

impl ThrottlingAlgorithm for Composite {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        self.algorithms
            .iter()
            .map(|a| a.evaluate(ctx))
            .find(ThrottlingResult::should_throttle)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RateLimitInfo, ThrottlingResult};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[derive(Debug)]
    struct Fixed(Duration, &'static AtomicUsize);

    impl ThrottlingAlgorithm for Fixed {
        fn evaluate(&self, _: &ThrottlingContext<'_>) -> ThrottlingResult {
            self.1.fetch_add(1, Ordering::Relaxed);
            ThrottlingResult::throttle(self.0, "fixed")
        }
    }

    #[test]
    fn the_first_throttle_wins_and_later_ones_are_not_asked() {
        static ASKED: AtomicUsize = AtomicUsize::new(0);
        let c = Composite::builder()
            .then(Fixed(Duration::ZERO, &ASKED))
            .then(Fixed(Duration::from_secs(2), &ASKED))
            .then(Fixed(Duration::from_secs(3), &ASKED))
            .build()
            .unwrap();
        let info = RateLimitInfo::new();
        assert_eq!(
            c.evaluate(&ThrottlingContext::new(&info, "k")).delay(),
            Duration::from_secs(2)
        );
        assert_eq!(ASKED.load(Ordering::Relaxed), 2);
        assert_eq!(c.algorithms().len(), 3);
    }

    #[test]
    fn none_throttles_and_empty_is_rejected() {
        static ASKED: AtomicUsize = AtomicUsize::new(0);
        let c = Composite::new(vec![Box::new(Fixed(Duration::ZERO, &ASKED))]).unwrap();
        let info = RateLimitInfo::new();
        assert!(
            !c.evaluate(&ThrottlingContext::new(&info, "k"))
                .should_throttle()
        );
        assert_eq!(
            Composite::builder().build().unwrap_err(),
            ThrottlingConfigError::EmptyComposite
        );
    }
}

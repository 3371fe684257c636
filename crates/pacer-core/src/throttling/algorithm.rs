//! [`ThrottlingAlgorithm`]: the pluggable proactive-throttling decision.

use std::fmt;
use std::sync::Arc;

use super::context::ThrottlingContext;
use super::result::ThrottlingResult;
use crate::RateLimitInfo;

/// Decides, from an endpoint's rate-limit state, whether the next request should wait and for
/// how long: *proactive* throttling, before the server has to refuse.
///
/// One method: most algorithms only read [`ThrottlingContext::info`]; pacing also reads
/// [`ThrottlingContext::since_last_request`], and cross-endpoint algorithms
/// [`ThrottlingContext::states`]. An algorithm is a pure function of the context: it reads no
/// clock and does not sleep. The server-ordered stop ([`crate::ServerStopPolicy`]) is applied
/// above any algorithm, so an algorithm need not handle `Retry-After`.
///
/// Shipped: [`crate::Percentage`] (the default), [`crate::FixedThreshold`],
/// [`crate::AdaptiveDelay`], [`crate::Pacing`], [`crate::Composite`], [`crate::Global`].
///
/// # Example
///
/// Wait a fixed second whenever less than a quarter of the quota is left:
///
/// ```
/// use pacer_core::{
///     Dialect, Policy, RateLimitInfo, ThrottlingAlgorithm, ThrottlingContext, ThrottlingResult,
/// };
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// struct QuarterLeft;
///
/// impl ThrottlingAlgorithm for QuarterLeft {
///     fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
///         match ctx.info().remaining_fraction() {
///             Some(f) if f < 0.25 => {
///                 ThrottlingResult::throttle(Duration::from_secs(1), "under a quarter left")
///             }
///             _ => ThrottlingResult::NO_THROTTLE,
///         }
///     }
/// }
///
/// let info = RateLimitInfo::new()
///     .with_policy(Policy::new(Dialect::XRateLimit).with_limit(100).with_remaining(20));
/// let result = QuarterLeft.evaluate(&ThrottlingContext::new(&info, "api"));
/// assert_eq!(result.delay(), Duration::from_secs(1));
/// ```
pub trait ThrottlingAlgorithm: Send + Sync + fmt::Debug {
    /// The decision for the next request to `ctx.endpoint()`.
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult;

    /// `false` when no context whose state is `info` aged — the same policies, each reset
    /// shorter or passed (a passed one dropped), the `Retry-After` shorter or passed —
    /// could make [`evaluate`](Self::evaluate) delay a request, whatever the context's other
    /// fields. The engine then skips building that context before a send. The default, `true`,
    /// is always right; answer `false` only where it is sure. Called with the endpoint's state
    /// locked: it must be cheap, and must not call into Pacer.
    ///
    /// ```
    /// use pacer_core::{Dialect, Percentage, Policy, RateLimitInfo, ThrottlingAlgorithm};
    ///
    /// let info = |remaining| {
    ///     RateLimitInfo::new()
    ///         .with_policy(Policy::new(Dialect::XRateLimit).with_limit(100).with_remaining(remaining))
    /// };
    /// let percentage = Percentage::default(); // delays below a tenth left
    /// assert!(!percentage.may_throttle(&info(50)));
    /// assert!(percentage.may_throttle(&info(5)));
    /// ```
    fn may_throttle(&self, info: &RateLimitInfo) -> bool {
        let _ = info;
        true
    }
}

impl<A: ThrottlingAlgorithm + ?Sized> ThrottlingAlgorithm for Box<A> {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        (**self).evaluate(ctx)
    }

    fn may_throttle(&self, info: &RateLimitInfo) -> bool {
        (**self).may_throttle(info)
    }
}

impl<A: ThrottlingAlgorithm + ?Sized> ThrottlingAlgorithm for Arc<A> {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        (**self).evaluate(ctx)
    }

    fn may_throttle(&self, info: &RateLimitInfo) -> bool {
        (**self).may_throttle(info)
    }
}

impl<A: ThrottlingAlgorithm + ?Sized> ThrottlingAlgorithm for &A {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        (**self).evaluate(ctx)
    }

    fn may_throttle(&self, info: &RateLimitInfo) -> bool {
        (**self).may_throttle(info)
    }
}

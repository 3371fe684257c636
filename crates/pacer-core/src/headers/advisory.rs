//! What a response that is not a throttle can tell: advice on the pace, never an order to stop.
//!
//! RFC 9110 §10.2.3 gives `Retry-After` its force on a `503` (and RFC 6585 on a `429`); on a
//! `1xx`, `2xx` or `3xx` it is a hint (a `202 Accepted`'s polling interval, a redirect's).
//! A server that stopped the client would not have answered the request. So the rate-limit
//! state of a response the classifier did not call a throttle is read as advice: it may hold an
//! endpoint as long as the policy it describes can mean, never longer.

use std::time::Duration;

use super::info::RateLimitInfo;
use super::policy::Policy;

/// The shortest pace interval an exhausted policy on a non-throttle is given: a reset of zero
/// would mean "unknown" (see [`Policy::effective_reset`]).
const MIN_INTERVAL: Duration = Duration::from_millis(1);

impl RateLimitInfo {
    /// The state as a response that was **not a throttle** can mean it: advice on the pace,
    /// never a stop.
    ///
    /// - The `Retry-After` is dropped (RFC 9110 §10.2.3: outside `429` and `503` it is a hint,
    ///   a `202`'s polling interval or a redirect's).
    /// - A policy whose fields contradict themselves is dropped whole
    ///   ([`Policy::is_sound`]).
    /// - An exhausted policy (`remaining == 0`) holds the endpoint no longer than the policy
    ///   itself can mean: until its reset, but at most one `window` when the server sends one
    ///   (a fixed window that is used up opens again within a window), else at most one unit's
    ///   interval at the policy's pace, `reset / limit`. Without a limit above zero and a window
    ///   or reset it cannot be bounded and is dropped. A throttle on the next request then stops
    ///   as the server says.
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy, RateLimitInfo};
    /// use std::time::Duration;
    ///
    /// let info = RateLimitInfo::new()
    ///     .with_retry_after(Duration::from_secs(120))
    ///     .with_policy(
    ///         Policy::new(Dialect::XRateLimit)
    ///             .with_limit(120)
    ///             .with_remaining(0)
    ///             .with_reset_after(Duration::from_secs(3600))
    ///             .with_window(Duration::from_secs(10)),
    ///     );
    /// let advice = info.into_advisory();
    /// assert_eq!(advice.retry_after(), None);
    /// // 120 per 10 s: the window opens again within 10 s, whatever the reset says.
    /// assert_eq!(advice.reset_after(), Some(Duration::from_secs(10)));
    /// ```
    #[must_use]
    pub fn into_advisory(self) -> RateLimitInfo {
        if self
            .policies()
            .iter()
            .all(|p| p.is_sound() && !p.is_exhausted())
        {
            // Nothing to change but the Retry-After: the order stands.
            return self.without_retry_after();
        }
        let (policies, _) = self.into_parts();
        let policies = policies
            .into_iter()
            .filter(Policy::is_sound)
            .filter_map(paced)
            .collect();
        RateLimitInfo::from_parts(policies, None)
    }
}

/// The policy as advice: unchanged when not exhausted; exhausted, its reset bounded by its
/// window (else by one unit's interval, `reset / limit`), or `None` when it cannot be bounded.
fn paced(p: Policy) -> Option<Policy> {
    if !p.is_exhausted() {
        return Some(p);
    }
    let limit = p.limit().filter(|l| *l > 0)?;
    let reset = p.reset_after().filter(|r| !r.is_zero());
    let bound = match p.window().filter(|w| !w.is_zero()) {
        Some(window) => window,
        None => {
            let nanos = reset?.as_nanos() / u128::from(limit);
            Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)).max(MIN_INTERVAL)
        }
    };
    Some(
        p.clone()
            .with_reset_after(reset.map_or(bound, |r| r.min(bound))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn exhausted() -> Policy {
        Policy::new(Dialect::XRateLimit).with_remaining(0)
    }

    #[test]
    fn a_retry_after_on_a_non_throttle_is_dropped() {
        let info = RateLimitInfo::new().with_retry_after(secs(120));
        assert!(info.into_advisory().is_empty());
    }

    #[test]
    fn an_exhausted_policy_holds_no_longer_than_it_can_mean() {
        let cases = [
            // (limit, reset, window) -> reset as advice
            // A fixed window used up: its own reset, which is within the window.
            (Some(120), Some(secs(8)), Some(secs(10)), secs(8)),
            // A reset past the window: the window.
            (Some(120), Some(secs(3600)), Some(secs(10)), secs(10)),
            // No reset: the window (what a throttle would wait too).
            (Some(120), None, Some(secs(10)), secs(10)),
            // GitHub: no window, one unit's interval: 30 min / 5000 = 360 ms.
            (
                Some(5000),
                Some(secs(1800)),
                None,
                Duration::from_millis(360),
            ),
            // A limit so large the interval rounds to nothing: 1 ms, never zero.
            (Some(u64::MAX), Some(secs(1)), None, MIN_INTERVAL),
        ];
        for (limit, reset, window, want) in cases {
            let mut p = exhausted();
            if let Some(l) = limit {
                p = p.with_limit(l);
            }
            if let Some(r) = reset {
                p = p.with_reset_after(r);
            }
            if let Some(w) = window {
                p = p.with_window(w);
            }
            let advice = RateLimitInfo::new().with_policy(p).into_advisory();
            assert_eq!(
                advice.reset_after(),
                Some(want),
                "{limit:?} {reset:?} {window:?}"
            );
        }
    }

    #[test]
    fn an_exhausted_policy_without_a_pace_is_dropped() {
        for p in [
            exhausted(),
            exhausted().with_reset_after(secs(30)),
            exhausted().with_limit(0).with_window(secs(10)),
            exhausted().with_limit(10),
        ] {
            assert!(
                RateLimitInfo::new()
                    .with_policy(p.clone())
                    .into_advisory()
                    .is_empty(),
                "{p:?}"
            );
        }
    }

    #[test]
    fn a_policy_that_contradicts_itself_is_dropped_whole() {
        let p = Policy::new(Dialect::XRateLimit)
            .with_limit(100)
            .with_remaining(3)
            .with_reset_after(secs(30));
        let info = RateLimitInfo::new()
            .with_policy(p.clone().unsound())
            .with_policy(p.clone().with_remaining(50));
        assert_eq!(info.into_advisory().policies(), [p.with_remaining(50)]);
    }

    #[test]
    fn other_policies_are_kept_as_they_are() {
        let p = Policy::new(Dialect::XRateLimit)
            .with_limit(100)
            .with_remaining(3)
            .with_reset_after(secs(30));
        let info = RateLimitInfo::new().with_policy(p.clone());
        assert_eq!(info.clone().into_advisory(), info);
    }
}

//! [`RateLimitStateProvider`]: a read-only view of every tracked endpoint, for algorithms that
//! decide across endpoints (a quota shared by several endpoints of one API).

use std::collections::HashMap;

use crate::RateLimitInfo;

/// Every endpoint's current rate-limit state, as seen at one instant.
///
/// States are already adjusted for the time since they were observed, and spent states (whose
/// reset has passed) are left out. [`crate::EndpointStore::at`] provides one; a plain
/// `HashMap<String, RateLimitInfo>` is one too, handy in tests.
///
/// Only [`for_each_state`](Self::for_each_state) is required; the other methods are built on it
/// and can be overridden when the provider can answer them faster.
///
/// ```
/// use pacer_core::{Dialect, Policy, RateLimitInfo, RateLimitStateProvider};
///
/// /// Two fixed endpoints.
/// struct Pair {
///     a: RateLimitInfo,
///     b: RateLimitInfo,
/// }
///
/// impl RateLimitStateProvider for Pair {
///     fn for_each_state(&self, visit: &mut dyn FnMut(&str, &RateLimitInfo)) {
///         visit("https://a.example:443", &self.a);
///         visit("https://b.example:443", &self.b);
///     }
/// }
///
/// let low = RateLimitInfo::new()
///     .with_policy(Policy::new(Dialect::XRateLimit).with_limit(100).with_remaining(3));
/// let pair = Pair { a: RateLimitInfo::new(), b: low.clone() };
/// assert_eq!(pair.tracked_endpoints(), ["https://a.example:443", "https://b.example:443"]);
/// assert_eq!(pair.state("https://b.example:443"), Some(low));
/// assert_eq!(pair.all_states().len(), 2);
/// ```
pub trait RateLimitStateProvider {
    /// Calls `visit` with the key and state of every tracked endpoint.
    fn for_each_state(&self, visit: &mut dyn FnMut(&str, &RateLimitInfo));

    /// The state of `endpoint`, if it is tracked and not spent.
    fn state(&self, endpoint: &str) -> Option<RateLimitInfo> {
        let mut found = None;
        self.for_each_state(&mut |key, info| {
            if found.is_none() && key == endpoint {
                found = Some(info.clone());
            }
        });
        found
    }

    /// The keys of every tracked endpoint.
    fn tracked_endpoints(&self) -> Vec<String> {
        let mut keys = Vec::new();
        self.for_each_state(&mut |key, _| keys.push(key.to_owned()));
        keys
    }

    /// Every tracked state.
    fn all_states(&self) -> Vec<RateLimitInfo> {
        let mut states = Vec::new();
        self.for_each_state(&mut |_, info| states.push(info.clone()));
        states
    }
}

impl<S: std::hash::BuildHasher> RateLimitStateProvider for HashMap<String, RateLimitInfo, S> {
    fn for_each_state(&self, visit: &mut dyn FnMut(&str, &RateLimitInfo)) {
        for (key, info) in self {
            visit(key, info);
        }
    }

    fn state(&self, endpoint: &str) -> Option<RateLimitInfo> {
        self.get(endpoint).cloned()
    }
}

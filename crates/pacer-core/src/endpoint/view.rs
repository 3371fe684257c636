//! Read-only views of the endpoint store: one endpoint ([`EndpointSnapshot`]) or all of them
//! ([`EndpointView`], the store's [`RateLimitStateProvider`]).

use std::time::Duration;

use super::store::EndpointStore;
use crate::{RateLimitInfo, RateLimitStateProvider, Timestamp};

/// What the store knows about one endpoint at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSnapshot {
    info: Option<RateLimitInfo>,
    since_observed: Duration,
    since_last_request: Option<Duration>,
}

impl EndpointSnapshot {
    pub(crate) fn new(
        info: Option<RateLimitInfo>,
        since_observed: Duration,
        since_last_request: Option<Duration>,
    ) -> EndpointSnapshot {
        EndpointSnapshot {
            info,
            since_observed,
            since_last_request,
        }
    }

    /// Drops the snapshot, its info's list of policies kept for the thread's next.
    pub(crate) fn recycle(self) {
        if let Some(info) = self.info {
            info.recycle();
        }
    }

    /// The info adjusted to the snapshot's instant; `None` when spent or never observed.
    #[must_use]
    pub fn info(&self) -> Option<&RateLimitInfo> {
        self.info.as_ref()
    }

    /// The time since the info was observed (or, before any, since the first send).
    #[must_use]
    pub fn since_observed(&self) -> Duration {
        self.since_observed
    }

    /// The time since the last recorded send; `None` when none was recorded.
    #[must_use]
    pub fn since_last_request(&self) -> Option<Duration> {
        self.since_last_request
    }
}

/// Every state in an [`EndpointStore`] as of one instant: the store's
/// [`RateLimitStateProvider`]. States are adjusted to that instant; spent ones are left out.
/// Shards are read one at a time, so the view is not one atomic snapshot across endpoints.
#[derive(Debug, Clone, Copy)]
pub struct EndpointView<'a> {
    store: &'a EndpointStore,
    now: Timestamp,
}

impl<'a> EndpointView<'a> {
    pub(crate) fn new(store: &'a EndpointStore, now: Timestamp) -> EndpointView<'a> {
        EndpointView { store, now }
    }

    /// The instant the view adjusts states to.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.now
    }
}

impl RateLimitStateProvider for EndpointView<'_> {
    fn for_each_state(&self, visit: &mut dyn FnMut(&str, &RateLimitInfo)) {
        self.store.for_each_current(self.now, visit);
    }

    fn state(&self, endpoint: &str) -> Option<RateLimitInfo> {
        self.store.get(endpoint, self.now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Global, Policy, ThrottlingAlgorithm, ThrottlingContext};

    #[test]
    fn the_view_lists_current_states_only() {
        let store = EndpointStore::new();
        let t = |s| Timestamp::from_duration(Duration::from_secs(s));
        let info = |r, reset| {
            RateLimitInfo::new().with_policy(
                Policy::new(Dialect::XRateLimit)
                    .with_limit(100)
                    .with_remaining(r)
                    .with_reset_after(Duration::from_secs(reset)),
            )
        };
        store.observe("search", info(3, 60), t(0));
        store.observe("core", info(90, 5), t(0));
        store.record_send("fresh", t(0));
        let view = store.at(t(10));
        let mut keys = view.tracked_endpoints();
        keys.sort();
        assert_eq!(keys, ["search"], "core is spent, fresh has no info");
        assert_eq!(
            view.state("search").and_then(|i| i.reset_after()),
            Some(Duration::from_secs(50))
        );
        assert_eq!(view.all_states().len(), 1);
        // Global sees the low endpoint from another one: 50 s × (1 − 0.03/0.15) = 40 s.
        let here = RateLimitInfo::new();
        let ctx = ThrottlingContext::new(&here, "core").with_states(&view);
        assert_eq!(
            Global::default().evaluate(&ctx).delay(),
            Duration::from_secs(40)
        );
        assert_eq!(view.now(), t(10));
    }
}

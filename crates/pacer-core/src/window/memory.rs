//! The in-memory window store: the frame ring behind a mutex, for one process.
//!
//! Its clock is an injected [`Clock`]. Times are microseconds since the Unix epoch, read as the
//! clock's wall time once at construction and then advanced by its *monotonic* time, so a wall
//! clock that steps does not move this store's windows (the ring would survive it anyway). With a
//! `ManualClock` the store's time equals the manual clock's `system_now`.
//!
//! Memory stays bounded: a key is dropped once every event in it has left the window, on access,
//! and by a sweep that runs after as many operations as there are keys (amortised O(1)).

use super::{
    EtaOutcome, EventsOutcome, FillOutcome, TryOutcome, WindowError, WindowFuture, WindowGeometry,
    WindowStore, WindowTime,
};
use super::{ops, ring};
use crate::{Clock, Timestamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Strict windows in this process's memory.
///
/// ```
/// use pacer_core::{MemoryWindowStore, RealClock, WindowGeometry, WindowStore};
/// use std::time::Duration;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryWindowStore::new(RealClock::new());
/// // At most 2 per second, in 10 frames of 100 ms.
/// let g = WindowGeometry::for_limit(2, Duration::from_secs(1), 10)?;
/// assert_eq!(store.try_take("k", g, 2, 2).await?.taken, 2);
/// let denied = store.try_take("k", g, 2, 1).await?;
/// assert_eq!(denied.taken, 0);
/// // The pair leaves when the frame ten frames after theirs ends: at most 1.1 s from now.
/// assert!(!denied.wait().is_zero());
/// assert!(denied.wait() <= Duration::from_millis(1_100));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct MemoryWindowStore {
    clock: Arc<dyn Clock>,
    origin: Timestamp,
    origin_us: u64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    keys: HashMap<String, Entry>,
    ops_since_sweep: usize,
}

struct Entry {
    data: Vec<u8>,
    expires_at_us: u64,
}

/// Operations between two sweeps, at least.
const MIN_SWEEP_INTERVAL: usize = 64;

impl MemoryWindowStore {
    /// A store on `clock`.
    #[must_use]
    pub fn new<C: Clock>(clock: C) -> Self {
        Self::with_shared_clock(Arc::new(clock))
    }

    /// A store on a shared clock.
    #[must_use]
    pub fn with_shared_clock(clock: Arc<dyn Clock>) -> Self {
        let origin = clock.now();
        let origin_us = WindowTime::from_system_time(clock.system_now()).as_micros();
        MemoryWindowStore {
            clock,
            origin,
            origin_us,
            state: Mutex::new(State::default()),
        }
    }

    /// The store's time: the wall time at construction plus the monotonic time since.
    fn now_time(&self) -> WindowTime {
        let since = self.clock.now().saturating_duration_since(self.origin);
        let since = u64::try_from(since.as_micros()).unwrap_or(u64::MAX);
        WindowTime::from_micros(self.origin_us.saturating_add(since))
    }

    /// The number of keys held (expired ones included until they are dropped).
    #[must_use]
    pub fn len(&self) -> usize {
        self.state.lock().keys.len()
    }

    /// True when no key is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every key whose events have all left the window.
    pub fn sweep(&self) {
        let now = self.now_time().as_micros();
        let mut state = self.state.lock();
        state.keys.retain(|_, e| e.expires_at_us > now);
        state.ops_since_sweep = 0;
    }

    /// The raw bytes of a key (the layout of the Redis store), for tests that compare the two.
    #[cfg(any(test, feature = "test-util"))]
    #[doc(hidden)]
    #[must_use]
    pub fn raw(&self, key: &str) -> Option<Vec<u8>> {
        self.state.lock().keys.get(key).map(|e| e.data.clone())
    }

    /// Runs `op` on the bytes of `key` (empty if missing or expired) at the store's time, and
    /// keeps them if `op` wrote.
    fn with_key<T>(
        &self,
        key: &str,
        g: &WindowGeometry,
        op: impl FnOnce(&mut Vec<u8>, WindowTime) -> Result<(T, bool), WindowError>,
    ) -> Result<T, WindowError> {
        let now = self.now_time();
        let now_us = now.as_micros();
        let mut state = self.state.lock();
        state.ops_since_sweep += 1;
        if state.ops_since_sweep >= state.keys.len().max(MIN_SWEEP_INTERVAL) {
            state.keys.retain(|_, e| e.expires_at_us > now_us);
            state.ops_since_sweep = 0;
        }
        let expires_at_us = ring::expires_at_us(g, g.frame_of(now));
        match state.keys.get_mut(key) {
            Some(e) if e.expires_at_us > now_us => {
                let (value, wrote) = op(&mut e.data, now)?;
                if wrote {
                    e.expires_at_us = expires_at_us;
                }
                Ok(value)
            }
            stale => {
                if stale.is_some() {
                    state.keys.remove(key);
                }
                let mut data = Vec::new();
                let (value, wrote) = op(&mut data, now)?;
                if wrote {
                    let entry = Entry {
                        data,
                        expires_at_us,
                    };
                    state.keys.insert(key.to_owned(), entry);
                }
                Ok(value)
            }
        }
    }
}

impl fmt::Debug for MemoryWindowStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryWindowStore")
            .field("clock", &self.clock)
            .field("keys", &self.len())
            .finish()
    }
}

impl Default for MemoryWindowStore {
    /// A store on the real clock.
    fn default() -> Self {
        MemoryWindowStore::new(crate::RealClock::new())
    }
}

impl WindowStore for MemoryWindowStore {
    fn try_take<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, TryOutcome> {
        Box::pin(async move {
            self.with_key(key, &geometry, |data, now| {
                ops::try_take(&geometry, data, now, limit, count)
            })
        })
    }

    fn fill<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, FillOutcome> {
        Box::pin(async move {
            self.with_key(key, &geometry, |data, now| {
                ops::fill(&geometry, data, now, limit, count)
            })
        })
    }

    fn events<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        count: u64,
    ) -> WindowFuture<'a, EventsOutcome> {
        Box::pin(async move {
            self.with_key(key, &geometry, |data, now| {
                ops::events(&geometry, data, now, count)
            })
        })
    }

    fn eta<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, EtaOutcome> {
        Box::pin(async move {
            self.with_key(key, &geometry, |data, now| {
                Ok((ops::eta(&geometry, data, now, limit, count)?, false))
            })
        })
    }

    fn now(&self) -> WindowFuture<'_, WindowTime> {
        Box::pin(async move { Ok(self.now_time()) })
    }

    fn clear<'a>(&'a self, key: &'a str) -> WindowFuture<'a, ()> {
        Box::pin(async move {
            self.state.lock().keys.remove(key);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;
    use crate::conformance::model::{Time, check_plan, plans};
    use crate::conformance::{BoxFuture, Fixture};
    use proptest::prelude::*;
    use std::time::Duration;

    struct Memory {
        clock: ManualClock,
        store: MemoryWindowStore,
    }

    impl Fixture for Memory {
        fn store(&self) -> &dyn WindowStore {
            &self.store
        }
        fn clock(&self) -> &ManualClock {
            &self.clock
        }
        fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
            Box::pin(async move { self.store.raw(key).is_some() })
        }
    }

    fn memory() -> Memory {
        let clock = ManualClock::new();
        Memory {
            store: MemoryWindowStore::new(clock.clone()),
            clock,
        }
    }

    mod conformance {
        use super::memory;
        crate::window_conformance_tests!(async { memory() });
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Random operations on one key never break the sliding-log bounds.
        #[test]
        fn random_plans_keep_the_sliding_log_bounds(plan in plans(12, 1..=5_000, 60)) {
            let m = memory();
            block_on(check_plan(&m.store, Time::Manual(&m.clock), "k", &plan));
        }
    }

    #[test]
    fn the_store_time_follows_the_monotonic_clock() {
        let clock = ManualClock::new();
        clock.advance(Duration::from_secs(5));
        let store = MemoryWindowStore::new(clock.clone());
        let t0 = store.now_time();
        assert_eq!(t0, WindowTime::from_system_time(clock.system_now()));
        clock.advance(Duration::from_micros(7));
        assert_eq!(store.now_time().as_micros() - t0.as_micros(), 7);
    }

    #[tokio::test]
    async fn expired_keys_are_dropped_on_access_and_by_the_sweep() {
        let m = memory();
        let g = WindowGeometry::new(4, Duration::from_millis(1), 8).unwrap();
        for i in 0..1_000 {
            m.store.events(&format!("k{i}"), g, 1).await.unwrap();
        }
        assert_eq!(m.store.len(), 1_000);
        m.store.sweep();
        assert_eq!(m.store.len(), 1_000, "nothing has expired yet");
        m.clock.advance(Duration::from_millis(5));
        m.store.events("k0", g, 0).await.unwrap();
        assert_eq!(m.store.len(), 999, "an expired key read is dropped");
        // The sweep runs once there have been as many operations as keys.
        for _ in 0..997 {
            m.store.eta("other", g, 1, 1).await.unwrap();
        }
        assert_eq!(m.store.len(), 999);
        m.store.eta("other", g, 1, 1).await.unwrap();
        assert_eq!(m.store.len(), 0, "the amortised sweep ran");
        m.store.events("live", g, 1).await.unwrap();
        m.store.sweep();
        assert_eq!(m.store.len(), 1, "a live key survives a sweep");
    }

    #[tokio::test]
    async fn a_failed_call_keeps_the_key() {
        let m = memory();
        let g = WindowGeometry::new(4, Duration::from_millis(1), 4).unwrap();
        m.store.events("k", g, 15).await.unwrap();
        let before = m.store.raw("k");
        assert!(m.store.events("k", g, 1).await.is_err());
        let other = WindowGeometry::new(5, Duration::from_millis(1), 4).unwrap();
        assert!(m.store.try_take("k", other, 1, 1).await.is_err());
        assert_eq!(m.store.raw("k"), before);
    }
}

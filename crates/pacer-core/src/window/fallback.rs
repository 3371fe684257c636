//! A building block for "use another store when the shared one is down".
//!
//! Whether to fail open, fail closed or fall back is the middleware's policy; this type only does
//! the falling back, so that policy can be one line. Each call tries the primary store and, only
//! when it reports [`WindowError::Unavailable`], runs the same call on the fallback store. Every
//! other error (a geometry mismatch, `Never`) is the caller's to see. Results carry the `now` of
//! the store that answered, so waits stay consistent even though the two clocks differ.

use super::{
    EtaOutcome, EventsOutcome, FillOutcome, TryOutcome, WindowError, WindowFuture, WindowGeometry,
    WindowStore, WindowTime,
};
use std::future::Future;

/// A primary store with a fallback for when it is unavailable.
///
/// ```
/// use pacer_core::{FallbackWindowStore, MemoryWindowStore, RealClock, WindowGeometry, WindowStore};
/// use std::time::Duration;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // In production the primary is a `pacer_redis::RedisWindowStore`.
/// let primary = MemoryWindowStore::new(RealClock::new());
/// let store = FallbackWindowStore::new(primary, MemoryWindowStore::new(RealClock::new()));
/// let g = WindowGeometry::for_limit(5, Duration::from_secs(1), 10)?;
/// assert_eq!(store.try_take("k", g, 5, 1).await?.taken, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct FallbackWindowStore<P, F> {
    primary: P,
    fallback: F,
}

impl<P: WindowStore, F: WindowStore> FallbackWindowStore<P, F> {
    /// `primary`, and `fallback` for when it is unavailable.
    #[must_use]
    pub fn new(primary: P, fallback: F) -> Self {
        FallbackWindowStore { primary, fallback }
    }

    /// The primary store.
    pub fn primary(&self) -> &P {
        &self.primary
    }

    /// The fallback store.
    pub fn fallback(&self) -> &F {
        &self.fallback
    }
}

async fn either<T, A, B>(primary: A, fallback: impl FnOnce() -> B) -> Result<T, WindowError>
where
    A: Future<Output = Result<T, WindowError>>,
    B: Future<Output = Result<T, WindowError>>,
{
    match primary.await {
        Err(e) if e.is_unavailable() => fallback().await,
        other => other,
    }
}

impl<P: WindowStore, F: WindowStore> WindowStore for FallbackWindowStore<P, F> {
    fn try_take<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, TryOutcome> {
        Box::pin(either(
            self.primary.try_take(key, geometry, limit, count),
            move || self.fallback.try_take(key, geometry, limit, count),
        ))
    }

    fn fill<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, FillOutcome> {
        Box::pin(either(
            self.primary.fill(key, geometry, limit, count),
            move || self.fallback.fill(key, geometry, limit, count),
        ))
    }

    fn events<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        count: u64,
    ) -> WindowFuture<'a, EventsOutcome> {
        Box::pin(either(
            self.primary.events(key, geometry, count),
            move || self.fallback.events(key, geometry, count),
        ))
    }

    fn eta<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, EtaOutcome> {
        Box::pin(either(
            self.primary.eta(key, geometry, limit, count),
            move || self.fallback.eta(key, geometry, limit, count),
        ))
    }

    fn now(&self) -> WindowFuture<'_, WindowTime> {
        Box::pin(either(self.primary.now(), move || self.fallback.now()))
    }

    fn clear<'a>(&'a self, key: &'a str) -> WindowFuture<'a, ()> {
        Box::pin(async move {
            // Clear both: a key may have been written to either.
            let fallback = self.fallback.clear(key).await;
            self.primary.clear(key).await.and(fallback)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ManualClock, MemoryWindowStore};
    use std::time::Duration;

    /// A store that is always down, or always answers with a configuration error.
    #[derive(Debug)]
    struct Broken {
        unavailable: bool,
    }

    impl Broken {
        fn fail<'a, T: Send + 'a>(&self) -> WindowFuture<'a, T> {
            let unavailable = self.unavailable;
            Box::pin(async move {
                Err(if unavailable {
                    WindowError::Unavailable {
                        source: "down".into(),
                    }
                } else {
                    WindowError::Backend {
                        source: "bad reply".into(),
                    }
                })
            })
        }
    }

    impl WindowStore for Broken {
        fn try_take<'a>(
            &'a self,
            _: &'a str,
            _: WindowGeometry,
            _: u64,
            _: u64,
        ) -> WindowFuture<'a, TryOutcome> {
            self.fail()
        }
        fn fill<'a>(
            &'a self,
            _: &'a str,
            _: WindowGeometry,
            _: u64,
            _: u64,
        ) -> WindowFuture<'a, FillOutcome> {
            self.fail()
        }
        fn events<'a>(
            &'a self,
            _: &'a str,
            _: WindowGeometry,
            _: u64,
        ) -> WindowFuture<'a, EventsOutcome> {
            self.fail()
        }
        fn eta<'a>(
            &'a self,
            _: &'a str,
            _: WindowGeometry,
            _: u64,
            _: u64,
        ) -> WindowFuture<'a, EtaOutcome> {
            self.fail()
        }
        fn now(&self) -> WindowFuture<'_, WindowTime> {
            self.fail()
        }
        fn clear<'a>(&'a self, _: &'a str) -> WindowFuture<'a, ()> {
            self.fail()
        }
    }

    fn geometry() -> WindowGeometry {
        WindowGeometry::new(10, Duration::from_millis(10), 8).unwrap()
    }

    #[tokio::test]
    async fn an_unavailable_primary_falls_back() {
        let clock = ManualClock::new();
        let store = FallbackWindowStore::new(
            Broken { unavailable: true },
            MemoryWindowStore::new(clock.clone()),
        );
        let g = geometry();
        assert_eq!(store.try_take("k", g, 3, 2).await.unwrap().taken, 2);
        assert_eq!(store.fill("k", g, 3, 2).await.unwrap().taken, 1);
        assert_eq!(store.events("k", g, 1).await.unwrap().total, 4);
        assert!(store.eta("k", g, 3, 1).await.unwrap().eta.unwrap() > clock_now(&store).await);
        assert!(
            store.clear("k").await.is_err(),
            "the primary's clear failed"
        );
        assert_eq!(store.fallback().len(), 0, "but the fallback was cleared");
    }

    async fn clock_now<S: WindowStore>(s: &S) -> WindowTime {
        s.now().await.unwrap()
    }

    #[tokio::test]
    async fn other_errors_are_not_hidden() {
        let store = FallbackWindowStore::new(
            Broken { unavailable: false },
            MemoryWindowStore::new(ManualClock::new()),
        );
        let e = store.try_take("k", geometry(), 3, 1).await.unwrap_err();
        assert!(matches!(e, WindowError::Backend { .. }));
        assert!(store.fallback().is_empty());
    }
}

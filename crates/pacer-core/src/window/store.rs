//! The window store contract: five atomic operations on one key, and `clear`.
//!
//! The trait is narrow on purpose: a store only makes each operation atomic and reads its own
//! clock. What the operations mean is fixed here and checked by one conformance suite that runs
//! against every store (`pacer_core::conformance`, feature `test-util`).
//!
//! The futures are boxed so that the trait is object-safe: the middleware holds an
//! `Arc<dyn WindowStore>` and picks the store at run time. One allocation per call is nothing next
//! to a Redis round trip, and a hand-written boxed future needs no proc-macro crate.

use super::{
    EtaOutcome, EventsOutcome, FillOutcome, TryOutcome, WindowError, WindowGeometry, WindowTime,
};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future a [`WindowStore`] operation returns.
pub type WindowFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, WindowError>> + Send + 'a>>;

/// A place where strict windows live: in memory, or in Redis shared by many processes.
///
/// Every operation on a key is atomic, reads the store's own clock once, and returns that `now`
/// with its result. The semantics, identical for every store:
///
/// * A key holds one window of a given [`WindowGeometry`]; the geometry is passed with every
///   call and checked against the key ([`WindowError::GeometryMismatch`] if it differs).
/// * An event recorded in frame `f` counts until frame `f + N` ends: at most `limit` events in any
///   span of `N` frames, at most one frame of extra delay.
/// * `limit` may change from call to call; it must not exceed
///   [`WindowGeometry::capacity`] ([`WindowError::LimitAboveCapacity`]).
/// * `count > limit` can never fit: [`WindowError::Never`] from `try_take` and `fill`, `None`
///   from `eta`.
/// * A call with `count == 0` never writes and never creates a key.
/// * ETAs are absolute times on the store's clock, never earlier than an exact sliding log of
///   span `N` frames would allow, and at most one frame later than one of span `N + 1` frames.
///
/// # Example
///
/// A store that counts the events it grants, around any other store:
///
/// ```
/// use pacer_core::{
///     EtaOutcome, EventsOutcome, FillOutcome, MemoryWindowStore, RealClock, TryOutcome,
///     WindowFuture, WindowGeometry, WindowStore, WindowTime,
/// };
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[derive(Debug)]
/// struct Counted<S> {
///     inner: S,
///     granted: AtomicU64,
/// }
///
/// impl<S: WindowStore> WindowStore for Counted<S> {
///     fn try_take<'a>(
///         &'a self,
///         key: &'a str,
///         geometry: WindowGeometry,
///         limit: u64,
///         count: u64,
///     ) -> WindowFuture<'a, TryOutcome> {
///         Box::pin(async move {
///             let outcome = self.inner.try_take(key, geometry, limit, count).await?;
///             self.granted.fetch_add(outcome.taken, Ordering::Relaxed);
///             Ok(outcome)
///         })
///     }
///     fn fill<'a>(
///         &'a self,
///         key: &'a str,
///         geometry: WindowGeometry,
///         limit: u64,
///         count: u64,
///     ) -> WindowFuture<'a, FillOutcome> {
///         Box::pin(async move {
///             let outcome = self.inner.fill(key, geometry, limit, count).await?;
///             self.granted.fetch_add(outcome.taken, Ordering::Relaxed);
///             Ok(outcome)
///         })
///     }
///     fn events<'a>(
///         &'a self,
///         key: &'a str,
///         geometry: WindowGeometry,
///         count: u64,
///     ) -> WindowFuture<'a, EventsOutcome> {
///         self.inner.events(key, geometry, count)
///     }
///     fn eta<'a>(
///         &'a self,
///         key: &'a str,
///         geometry: WindowGeometry,
///         limit: u64,
///         count: u64,
///     ) -> WindowFuture<'a, EtaOutcome> {
///         self.inner.eta(key, geometry, limit, count)
///     }
///     fn now(&self) -> WindowFuture<'_, WindowTime> {
///         self.inner.now()
///     }
///     fn clear<'a>(&'a self, key: &'a str) -> WindowFuture<'a, ()> {
///         self.inner.clear(key)
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = Counted { inner: MemoryWindowStore::new(RealClock::new()), granted: AtomicU64::new(0) };
/// let g = WindowGeometry::for_limit(10, std::time::Duration::from_secs(1), 10)?;
/// let outcome = store.try_take("api.example.com", g, 10, 3).await?;
/// assert_eq!(outcome.taken, 3);
/// assert_eq!(store.granted.load(Ordering::Relaxed), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait WindowStore: Send + Sync + fmt::Debug {
    /// Records `count` events if they all fit under `limit`, else none; either way returns the
    /// ETA of `count`.
    fn try_take<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, TryOutcome>;

    /// Records the largest part of `count` that fits under `limit` and returns the ETA of the
    /// rest.
    fn fill<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, FillOutcome>;

    /// Records `count` events without a limit (events that happened anyway) and returns the
    /// window total. Refuses with [`WindowError::Overflow`] a total above the capacity.
    fn events<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        count: u64,
    ) -> WindowFuture<'a, EventsOutcome>;

    /// When `count` events would fit under `limit`, without writing anything.
    fn eta<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> WindowFuture<'a, EtaOutcome>;

    /// The store's clock.
    fn now(&self) -> WindowFuture<'_, WindowTime>;

    /// Deletes the key (its events and its geometry). Deleting a missing key is not an error.
    fn clear<'a>(&'a self, key: &'a str) -> WindowFuture<'a, ()>;
}

macro_rules! forward_store {
    ($ty:ty) => {
        impl<S: WindowStore + ?Sized> WindowStore for $ty {
            fn try_take<'a>(
                &'a self,
                key: &'a str,
                geometry: WindowGeometry,
                limit: u64,
                count: u64,
            ) -> WindowFuture<'a, TryOutcome> {
                (**self).try_take(key, geometry, limit, count)
            }
            fn fill<'a>(
                &'a self,
                key: &'a str,
                geometry: WindowGeometry,
                limit: u64,
                count: u64,
            ) -> WindowFuture<'a, FillOutcome> {
                (**self).fill(key, geometry, limit, count)
            }
            fn events<'a>(
                &'a self,
                key: &'a str,
                geometry: WindowGeometry,
                count: u64,
            ) -> WindowFuture<'a, EventsOutcome> {
                (**self).events(key, geometry, count)
            }
            fn eta<'a>(
                &'a self,
                key: &'a str,
                geometry: WindowGeometry,
                limit: u64,
                count: u64,
            ) -> WindowFuture<'a, EtaOutcome> {
                (**self).eta(key, geometry, limit, count)
            }
            fn now(&self) -> WindowFuture<'_, WindowTime> {
                (**self).now()
            }
            fn clear<'a>(&'a self, key: &'a str) -> WindowFuture<'a, ()> {
                (**self).clear(key)
            }
        }
    };
}

forward_store!(Arc<S>);
forward_store!(Box<S>);
forward_store!(&S);

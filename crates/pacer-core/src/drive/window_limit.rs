//! A strict window as the drivers run it: its limit in its store, and what to do when the store
//! cannot be reached (a fallback in memory, sending without it, or a refusal that outlasts the
//! outage by a window's length).

use crate::{
    Clock, GeometryError, MemoryWindowStore, Refusal, RejectReason, StoreFailure, Timestamp,
    WindowAnswer, WindowError, WindowFuture, WindowGeometry, WindowStore,
};
use parking_lot::Mutex;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The number of frames a window made with [`WindowLimit::new`] has.
pub const DEFAULT_FRAMES: u32 = 10;

/// At most `limit` units in any span of the window's length, per key, in every process that
/// shares its store; and what a request does when the store cannot be reached
/// ([`StoreFailure`]). Cheap to clone: clones share the store, the fallback and the outage.
///
/// A driver keys each request (the middleware's `StrictWindow` adds how), then asks
/// [`eta`](Self::eta) before it waits and [`take`](Self::take) to take the units.
///
/// ```
/// use pacer_core::{Clock, MemoryWindowStore, RealClock, WindowAnswer, WindowLimit};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let real = RealClock::new();
/// let store = MemoryWindowStore::new(real.clone());
/// let window = WindowLimit::new("per-minute", 2, Duration::from_secs(60), store).unwrap();
/// let clock: Arc<dyn Clock> = Arc::new(real);
/// for _ in 0..2 {
///     assert_eq!(window.take("api", 1, &clock, 1).await, Ok(WindowAnswer::Go));
/// }
/// assert!(matches!(window.take("api", 1, &clock, 1).await, Ok(WindowAnswer::Wait(_))));
/// # }
/// ```
#[derive(Clone)]
pub struct WindowLimit {
    name: Arc<str>,
    limit: u64,
    geometry: WindowGeometry,
    store: Arc<dyn WindowStore>,
    on_failure: StoreFailure,
    /// The in-memory window used while the store is down (`Fallback`), made on first need.
    fallback: Arc<OnceLock<MemoryWindowStore>>,
    /// Whether the store is known to be down (to log an outage once).
    outage: Arc<AtomicBool>,
    /// Under `FailClosed`, refuse until then.
    quarantine_until: Arc<Mutex<Timestamp>>,
}

/// Where one call goes: the window's store, or the fallback with its share of the limit.
struct Target<'a> {
    store: &'a dyn WindowStore,
    limit: u64,
}

impl WindowLimit {
    /// A window of `limit` units per `per`, with [`DEFAULT_FRAMES`] frames.
    ///
    /// # Errors
    ///
    /// When no geometry holds `limit` over `per` (see [`WindowGeometry::for_limit`]).
    pub fn new(
        name: impl Into<Arc<str>>,
        limit: u64,
        per: Duration,
        store: impl WindowStore + 'static,
    ) -> Result<Self, GeometryError> {
        let geometry = WindowGeometry::for_limit(limit, per, DEFAULT_FRAMES)?;
        Ok(WindowLimit::with_geometry(
            name,
            limit,
            geometry,
            Arc::new(store),
        ))
    }

    /// A window with a geometry of one's own (more frames, a shared store).
    pub fn with_geometry(
        name: impl Into<Arc<str>>,
        limit: u64,
        geometry: WindowGeometry,
        store: Arc<dyn WindowStore>,
    ) -> Self {
        WindowLimit {
            name: name.into(),
            limit,
            geometry,
            store,
            on_failure: StoreFailure::default(),
            fallback: Arc::default(),
            outage: Arc::default(),
            quarantine_until: Arc::new(Mutex::new(Timestamp::ZERO)),
        }
    }

    /// What to do when the store cannot be reached. Default [`StoreFailure::Fallback`].
    #[must_use]
    pub fn on_store_failure(mut self, policy: StoreFailure) -> Self {
        self.on_failure = policy;
        self
    }

    /// The window's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its limit.
    #[must_use]
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Its geometry.
    #[must_use]
    pub fn geometry(&self) -> WindowGeometry {
        self.geometry
    }

    /// The store it counts in.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn WindowStore> {
        &self.store
    }

    /// What it does when the store cannot be reached.
    #[must_use]
    pub fn store_failure(&self) -> StoreFailure {
        self.on_failure
    }

    /// When `units` would fit under `key`, without taking them. `instance_count` shares the
    /// limit of the in-memory fallback.
    ///
    /// # Errors
    ///
    /// [`Refusal::Rejected`] when they could never fit; [`Refusal::Store`] when
    /// the store failed and the window does not send without it (or is still quarantined after
    /// an outage).
    pub async fn eta<'a>(
        &'a self,
        key: &'a str,
        units: u64,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
    ) -> Result<WindowAnswer, Refusal> {
        self.check_quarantine(clock)?;
        let geometry = self.geometry;
        let eta = |store: &'a dyn WindowStore, limit| store.eta(key, geometry, limit, units);
        let Some(outcome) = self.call(clock, instance_count, units, eta).await? else {
            return Ok(WindowAnswer::Go);
        };
        match outcome.wait() {
            None => Err(self.never(units, self.limit)),
            Some(wait) if wait.is_zero() => Ok(WindowAnswer::Go),
            Some(wait) => Ok(WindowAnswer::Wait(wait)),
        }
    }

    /// Takes `units` under `key` if they fit now ([`WindowAnswer::Go`]), else says how long
    /// until they may.
    ///
    /// # Errors
    ///
    /// As [`eta`](Self::eta).
    pub async fn take<'a>(
        &'a self,
        key: &'a str,
        units: u64,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
    ) -> Result<WindowAnswer, Refusal> {
        let geometry = self.geometry;
        let take = |store: &'a dyn WindowStore, limit| store.try_take(key, geometry, limit, units);
        let Some(outcome) = self.call(clock, instance_count, units, take).await? else {
            return Ok(WindowAnswer::Go);
        };
        if outcome.is_acquired() {
            Ok(WindowAnswer::Go)
        } else {
            Ok(WindowAnswer::Wait(outcome.wait()))
        }
    }

    /// One call to the store (`op`, given a store and the limit there), and, when the store is
    /// unavailable, to the fallback instead. `None`: send without the window.
    async fn call<'a, T>(
        &'a self,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        units: u64,
        op: impl Fn(&'a dyn WindowStore, u64) -> WindowFuture<'a, T>,
    ) -> Result<Option<T>, Refusal> {
        let primary = op(&*self.store, self.limit).await;
        match self.on(primary, clock, instance_count, units)? {
            Ok(outcome) => Ok(Some(outcome)),
            Err(None) => Ok(None),
            Err(Some(t)) => op(t.store, t.limit)
                .await
                .map(Some)
                .map_err(|e| self.failed(&e, units, t.limit)),
        }
    }

    /// The store's answer, or where to go instead when it is unavailable: `Err(Some(target))`
    /// for the fallback, `Err(None)` to send without the window.
    #[allow(clippy::type_complexity)]
    fn on<T>(
        &self,
        result: Result<T, WindowError>,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        units: u64,
    ) -> Result<Result<T, Option<Target<'_>>>, Refusal> {
        match result {
            Ok(outcome) => {
                self.recovered();
                Ok(Ok(outcome))
            }
            Err(e) if e.is_unavailable() => match self.fallback(clock, instance_count, &e) {
                Some((store, limit)) => Ok(Err(Some(Target { store, limit }))),
                None if self.on_failure == StoreFailure::FailOpen => Ok(Err(None)),
                None => Err(self.failed(&e, units, self.limit)),
            },
            Err(e) => Err(self.failed(&e, units, self.limit)),
        }
    }

    /// The in-memory window and its share of the limit while the store is down, under
    /// `Fallback`; `None` under the other policies. Under `FailClosed`, the window refuses for
    /// one window's length after the last failure (a store that restarted may have lost the
    /// events of the window that spans the outage). An outage is logged once.
    fn fallback(
        &self,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        error: &WindowError,
    ) -> Option<(&dyn WindowStore, u64)> {
        if self.on_failure == StoreFailure::FailClosed {
            let until = clock.now() + self.geometry.window();
            let mut q = self.quarantine_until.lock();
            *q = (*q).max(until);
        }
        if !self.outage.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                window = %self.name,
                policy = self.on_failure.as_str(),
                "strict window store unavailable: {error}"
            );
        }
        match self.on_failure {
            StoreFailure::Fallback => {
                let store = self
                    .fallback
                    .get_or_init(|| MemoryWindowStore::with_shared_clock(Arc::clone(clock)));
                let limit = (self.limit / u64::from(instance_count.max(1))).max(1);
                Some((store, limit))
            }
            StoreFailure::FailOpen | StoreFailure::FailClosed => None,
        }
    }

    /// Under `FailClosed`, how long the window still refuses after an outage of its store.
    fn quarantined(&self, now: Timestamp) -> Option<Duration> {
        let until = *self.quarantine_until.lock();
        (until > now).then(|| until - now)
    }

    /// The store answered: the outage, if any, is over.
    fn recovered(&self) {
        if self.outage.swap(false, Ordering::Relaxed) {
            tracing::info!(window = %self.name, "strict window store reachable again");
        }
    }

    fn check_quarantine(&self, clock: &Arc<dyn Clock>) -> Result<(), Refusal> {
        match self.quarantined(clock.now()) {
            Some(left) => Err(Refusal::Store {
                message: format!(
                    "window {:?} refuses for {:.3} s more after an outage of its store, so that \
                     no span of the window can exceed its limit",
                    &*self.name,
                    left.as_secs_f64()
                ),
            }),
            None => Ok(()),
        }
    }

    fn failed(&self, e: &WindowError, units: u64, limit: u64) -> Refusal {
        if e.is_never() {
            return self.never(units, limit);
        }
        Refusal::Store {
            message: format!("window {:?}: {e}", &*self.name),
        }
    }

    fn never(&self, units: u64, limit: u64) -> Refusal {
        Refusal::Rejected(RejectReason::AboveWindowLimit {
            window: self.name.to_string(),
            limit,
            units,
        })
    }
}

impl fmt::Debug for WindowLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowLimit")
            .field("name", &self.name)
            .field("limit", &self.limit)
            .field("geometry", &self.geometry)
            .field("store", &self.store)
            .field("on_failure", &self.on_failure)
            .finish()
    }
}

//! Strict "no more than X per T" windows on a limiter, shared by many processes through a store.

use pacer_core::{
    Clock, GeometryError, MemoryWindowStore, StoreFailure, Timestamp, WindowError, WindowGeometry,
    WindowStore,
};
use parking_lot::Mutex;
use reqwest::Request;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Derives a window key from a request; `None` leaves the request out of the window.
pub type WindowKeyFn = Arc<dyn Fn(&Request) -> Option<String> + Send + Sync>;

/// A strict window: at most `limit` units in any span of its length, for each key, in every
/// process that shares the store. Its wait counts against the request's `MaxWait`.
///
/// ```
/// use pacer_core::{ManualClock, MemoryWindowStore};
/// use reqwest_pacer::StrictWindow;
/// use std::time::Duration;
///
/// // 30 messages per 10 minutes per user, in 10 frames of a minute.
/// let store = MemoryWindowStore::new(ManualClock::new());
/// let window = StrictWindow::new("messages", 30, Duration::from_secs(600), store)
///     .unwrap()
///     .keyed_by(|r| r.headers().get("x-user").and_then(|v| v.to_str().ok()).map(String::from));
/// assert_eq!(window.limit(), 30);
/// ```
#[derive(Clone)]
pub struct StrictWindow {
    pub(crate) name: Arc<str>,
    pub(crate) limit: u64,
    pub(crate) geometry: WindowGeometry,
    pub(crate) store: Arc<dyn WindowStore>,
    pub(crate) key: Option<WindowKeyFn>,
    pub(crate) on_failure: StoreFailure,
    fallback: Arc<OnceLock<MemoryWindowStore>>,
    outage: Arc<AtomicBool>,
    /// Under `FailClosed`: refuse until then (one window after the last failure).
    quarantine_until: Arc<Mutex<Timestamp>>,
}

/// Frames a window gets when only its length is given: the extra delay is at most a tenth of it.
pub const DEFAULT_FRAMES: u32 = 10;

impl StrictWindow {
    /// At most `limit` units per `per`, in [`DEFAULT_FRAMES`] frames, kept in `store`, keyed by
    /// the request's endpoint key.
    pub fn new(
        name: impl Into<Arc<str>>,
        limit: u64,
        per: Duration,
        store: impl WindowStore + 'static,
    ) -> Result<Self, GeometryError> {
        let geometry = WindowGeometry::for_limit(limit, per, DEFAULT_FRAMES)?;
        Ok(StrictWindow::with_geometry(
            name,
            limit,
            geometry,
            Arc::new(store),
        ))
    }

    /// A window with a geometry of your choice (frames, frame length, counter width).
    pub fn with_geometry(
        name: impl Into<Arc<str>>,
        limit: u64,
        geometry: WindowGeometry,
        store: Arc<dyn WindowStore>,
    ) -> Self {
        StrictWindow {
            name: name.into(),
            limit,
            geometry,
            store,
            key: None,
            on_failure: StoreFailure::default(),
            fallback: Arc::default(),
            outage: Arc::default(),
            quarantine_until: Arc::new(Mutex::new(Timestamp::ZERO)),
        }
    }

    /// Keys the window by what `key` derives from the request (a user id, a tenant) instead of
    /// the endpoint key; a request for which it returns `None` is not counted.
    #[must_use]
    pub fn keyed_by<F>(mut self, key: F) -> Self
    where
        F: Fn(&Request) -> Option<String> + Send + Sync + 'static,
    {
        self.key = Some(Arc::new(key));
        self
    }

    /// What to do when the store cannot be reached. Default [`StoreFailure::Fallback`].
    #[must_use]
    pub fn on_store_failure(mut self, policy: StoreFailure) -> Self {
        self.on_failure = policy;
        self
    }

    /// The window's name (part of its keys in the store).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The most units in any span of the window.
    #[must_use]
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The window's geometry.
    #[must_use]
    pub fn geometry(&self) -> WindowGeometry {
        self.geometry
    }

    /// The key of `request` in this window, from its endpoint key unless keyed otherwise.
    pub(crate) fn key_of(&self, request: &Request, endpoint: &str) -> Option<String> {
        let key = match &self.key {
            Some(f) => f(request)?,
            None => endpoint.to_owned(),
        };
        Some(format!("{}:{key}", self.name))
    }

    /// The store to use for a call that found the main store unavailable, and the limit there;
    /// `None` to go without the window.
    pub(crate) fn fallback(
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
            // FailOpen, FailClosed (and any policy added later): no fallback store.
            _ => None,
        }
    }

    /// Under `FailClosed`, how long the window still refuses after an outage of its store.
    pub(crate) fn quarantined(&self, now: Timestamp) -> Option<Duration> {
        let until = *self.quarantine_until.lock();
        (until > now).then(|| until - now)
    }

    /// Marks the store reachable again (logged once).
    pub(crate) fn recovered(&self) {
        if self.outage.swap(false, Ordering::Relaxed) {
            tracing::info!(window = %self.name, "strict window store reachable again");
        }
    }
}

impl fmt::Debug for StrictWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrictWindow")
            .field("name", &self.name)
            .field("limit", &self.limit)
            .field("geometry", &self.geometry)
            .field("store", &self.store)
            .field("custom_key", &self.key.is_some())
            .field("on_failure", &self.on_failure)
            .finish()
    }
}

//! Strict "no more than X per T" windows on a limiter, shared by many processes through a store:
//! the core's [`WindowLimit`] (the limit, the store, what to do when it is down), and how a
//! reqwest request is keyed in it.

use pacer_core::{GeometryError, StoreFailure, WindowGeometry, WindowLimit, WindowStore};
use reqwest::Request;
use std::fmt;
use std::sync::Arc;
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
    pub(crate) window: WindowLimit,
    pub(crate) key: Option<WindowKeyFn>,
}

impl StrictWindow {
    /// At most `limit` units per `per`, in [`DEFAULT_FRAMES`](pacer_core::DEFAULT_FRAMES) frames, kept in `store`, keyed by
    /// the request's endpoint key.
    ///
    /// # Errors
    ///
    /// When no geometry holds `limit` over `per`.
    pub fn new(
        name: impl Into<Arc<str>>,
        limit: u64,
        per: Duration,
        store: impl WindowStore + 'static,
    ) -> Result<Self, GeometryError> {
        Ok(StrictWindow::from(WindowLimit::new(
            name, limit, per, store,
        )?))
    }

    /// A window with a geometry of your choice (frames, frame length, counter width).
    pub fn with_geometry(
        name: impl Into<Arc<str>>,
        limit: u64,
        geometry: WindowGeometry,
        store: Arc<dyn WindowStore>,
    ) -> Self {
        StrictWindow::from(WindowLimit::with_geometry(name, limit, geometry, store))
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
        self.window = self.window.on_store_failure(policy);
        self
    }

    /// The window's name (part of its keys in the store).
    #[must_use]
    pub fn name(&self) -> &str {
        self.window.name()
    }

    /// The most units in any span of the window.
    #[must_use]
    pub fn limit(&self) -> u64 {
        self.window.limit()
    }

    /// The window's geometry.
    #[must_use]
    pub fn geometry(&self) -> WindowGeometry {
        self.window.geometry()
    }

    /// The window as the engine runs it, without its key.
    #[must_use]
    pub fn window_limit(&self) -> &WindowLimit {
        &self.window
    }

    /// The key of `request` in this window, from its endpoint key unless keyed otherwise.
    pub(crate) fn key_of(&self, request: &Request, endpoint: &str) -> Option<String> {
        let key = match &self.key {
            Some(f) => f(request)?,
            None => endpoint.to_owned(),
        };
        Some(format!("{}:{key}", self.window.name()))
    }
}

impl From<WindowLimit> for StrictWindow {
    /// The window keyed by the request's endpoint key.
    fn from(window: WindowLimit) -> Self {
        StrictWindow { window, key: None }
    }
}

impl fmt::Debug for StrictWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrictWindow")
            .field("name", &self.window.name())
            .field("limit", &self.window.limit())
            .field("geometry", &self.window.geometry())
            .field("store", self.window.store())
            .field("custom_key", &self.key.is_some())
            .field("on_failure", &self.window.store_failure())
            .finish()
    }
}

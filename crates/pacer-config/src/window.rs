//! A limiter's strict windows (`Windows`: a list), and turning them into the engine's
//! [`WindowLimit`]s (and the middleware's `StrictWindow`s).

use crate::error::ProblemKind;
use crate::reader::{At, Collector};
use pacer_core::{MemoryWindowStore, RealClock, StoreFailure, WindowGeometry, WindowLimit};
#[cfg(feature = "reqwest")]
use reqwest_pacer::StrictWindow;
use std::sync::Arc;
use std::time::Duration;

const WINDOW_KEYS: &[&str] = &[
    "Name",
    "Limit",
    "Per",
    "Frames",
    "Store",
    "KeyPrefix",
    "OnStoreFailure",
];
const FAILURE_NAMES: [&str; 3] = ["FailClosed", "FailOpen", "Fallback"];
const FAILURES: [StoreFailure; 3] = [
    StoreFailure::FailClosed,
    StoreFailure::FailOpen,
    StoreFailure::Fallback,
];

/// Where a window's events are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WindowStoreSettings {
    /// In this process (`Store = "Memory"`, the default): strict for this process only.
    Memory,
    /// In Redis (`Store = "redis://…"` or `"rediss://…"`), shared by every process that uses the
    /// same URL and key prefix. Needs the `redis` feature.
    Redis {
        /// The URL (it may hold a password; it is never logged).
        url: String,
        /// The prefix of the window's keys (`KeyPrefix`); Pacer's default when `None`.
        key_prefix: Option<String>,
    },
}

/// One strict window of a limiter: at most `limit` units in any span of `per`, per endpoint key,
/// in `frames` frames (the extra delay is at most one frame).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WindowSettings {
    /// `Name`: part of the window's keys and its logs. Default `window-<index>`.
    pub name: String,
    /// `Limit`: the most units in any span of the window; at least 1.
    pub limit: u64,
    /// `Per`: the window's length.
    pub per: Duration,
    /// `Frames`: how many frames the window is cut into. Default 10.
    pub frames: u32,
    /// `Store`: `Memory` or a Redis URL. Default `Memory`.
    pub store: WindowStoreSettings,
    /// `OnStoreFailure`: `FailClosed`, `FailOpen` or `Fallback` (the default).
    pub on_store_failure: StoreFailure,
}

impl WindowSettings {
    /// The window as the engine runs it ([`WindowLimit`]), keyed by the endpoint key: what
    /// tower-pacer's `PacerLayer::from_settings` takes. A Redis store connects on its first use,
    /// so a process can start while Redis is down (its store-failure policy applies meanwhile).
    ///
    /// # Errors
    ///
    /// A message when the geometry is impossible, the Redis URL is invalid, or the window is kept
    /// in Redis without the `redis` feature; [`crate::ConfigLoader::load`] checks all of these
    /// already.
    pub fn to_window_limit(&self) -> Result<WindowLimit, String> {
        let geometry = WindowGeometry::for_limit(self.limit, self.per, self.frames)
            .map_err(|e| e.to_string())?;
        let store: Arc<dyn pacer_core::WindowStore> = match &self.store {
            WindowStoreSettings::Memory => Arc::new(MemoryWindowStore::new(RealClock::new())),
            WindowStoreSettings::Redis { url, key_prefix } => {
                redis_store(url, key_prefix.as_deref())?
            }
        };
        Ok(
            WindowLimit::with_geometry(self.name.as_str(), self.limit, geometry, store)
                .on_store_failure(self.on_store_failure),
        )
    }

    /// The middleware's window ([`to_window_limit`](Self::to_window_limit), keyed by the
    /// endpoint key).
    ///
    /// # Errors
    ///
    /// As [`to_window_limit`](Self::to_window_limit).
    #[cfg(feature = "reqwest")]
    pub fn to_strict_window(&self) -> Result<StrictWindow, String> {
        self.to_window_limit().map(StrictWindow::from)
    }
}

#[cfg(feature = "redis")]
fn redis_store(
    url: &str,
    key_prefix: Option<&str>,
) -> Result<Arc<dyn pacer_core::WindowStore>, String> {
    let mut builder = pacer_redis::RedisWindowStore::builder();
    if let Some(prefix) = key_prefix {
        builder = builder.key_prefix(prefix);
    }
    let store = builder.connect_lazy(url).map_err(|e| e.to_string())?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "redis"))]
fn redis_store(
    _url: &str,
    _key_prefix: Option<&str>,
) -> Result<Arc<dyn pacer_core::WindowStore>, String> {
    Err(NEEDS_REDIS.to_owned())
}

const NEEDS_REDIS: &str = "a window kept in Redis needs Pacer's `redis` feature";

/// Whether a store's value names Redis (`redis://…` or `rediss://…`), whatever else it holds.
pub(crate) fn is_redis_url(s: &str) -> bool {
    s.starts_with("redis://") || s.starts_with("rediss://")
}

/// Reads `Windows`: a list of tables (or, from environment variables, a table indexed 0, 1, …).
pub(crate) fn read(p: &mut Collector, at: &At<'_>) -> Vec<WindowSettings> {
    let Some(items) = at.list(p) else {
        return Vec::new();
    };
    let mut windows: Vec<WindowSettings> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(w) = read_one(p, item, i) else {
            continue;
        };
        if windows.iter().any(|o| o.name == w.name) {
            p.push(
                format!("{}.Name", item.path),
                Some(w.name.clone()),
                "a window of this name is already configured for the limiter",
                ProblemKind::Duplicate,
            );
            continue;
        }
        windows.push(w);
    }
    windows
}

fn read_one(p: &mut Collector, at: &At<'_>, index: usize) -> Option<WindowSettings> {
    let before = p.count();
    let mut t = at.table(p)?;
    let name = match t.get(p, "Name") {
        Some(f) => f.text(p).unwrap_or_default(),
        None => format!("window-{index}"),
    };
    let limit = match t.get(p, "Limit") {
        Some(f) => match f.uint(p, u64::MAX) {
            Some(0) => {
                p.push(
                    f.path.clone(),
                    Some(f.shown()),
                    "must be at least 1",
                    ProblemKind::OutOfRange,
                );
                None
            }
            other => other,
        },
        None => {
            p.push(
                t.path_of("Limit"),
                None,
                "a window needs a limit",
                ProblemKind::Missing,
            );
            None
        }
    };
    let per = match t.get(p, "Per") {
        Some(f) => f.duration(p),
        None => {
            p.push(
                t.path_of("Per"),
                None,
                "a window needs its length",
                ProblemKind::Missing,
            );
            None
        }
    };
    let frames = match t.get(p, "Frames") {
        Some(f) => f.uint(p, u64::from(u32::MAX)).map(|n| n as u32),
        None => Some(10),
    };
    let mut key_prefix = None;
    let key_prefix_at = t.get(p, "KeyPrefix");
    if let Some(f) = &key_prefix_at {
        key_prefix = f.text(p);
    }
    let store = match t.get(p, "Store") {
        None => WindowStoreSettings::Memory,
        Some(f) => match f.text(p) {
            Some(s) if s.trim().eq_ignore_ascii_case("memory") => WindowStoreSettings::Memory,
            Some(s) if is_redis_url(&s) => {
                if cfg!(not(feature = "redis")) {
                    p.push(f.path.clone(), None, NEEDS_REDIS, ProblemKind::NotSupported);
                }
                WindowStoreSettings::Redis {
                    url: s,
                    key_prefix: key_prefix.clone(),
                }
            }
            Some(_) => {
                // The value may be a URL with a password: never repeat it.
                p.push(
                    f.path.clone(),
                    None,
                    "expected Memory or a Redis URL (redis://… or rediss://…)",
                    ProblemKind::WrongType,
                );
                WindowStoreSettings::Memory
            }
            None => WindowStoreSettings::Memory,
        },
    };
    let mut on_store_failure = StoreFailure::default();
    if let Some(f) = t.get(p, "OnStoreFailure")
        && let Some(i) = f.choice(p, "store-failure policy", &FAILURE_NAMES)
    {
        on_store_failure = FAILURES[i];
    }
    if let (Some(limit), Some(per), Some(frames)) = (limit, per, frames) {
        match WindowGeometry::for_limit(limit, per, frames) {
            Err(e) => p.push(
                t.path().to_owned(),
                None,
                format!("impossible window: {e}"),
                ProblemKind::OutOfRange,
            ),
            // A frame is a whole number of microseconds: a `Per` shorter than a microsecond a
            // frame would be counted over `Frames` µs, another window than the one written.
            Ok(g) if per < Duration::from_micros(u64::from(frames)) => p.push(
                t.path().to_owned(),
                None,
                format!(
                    "Per ({per:?}) cut into {frames} Frames makes frames shorter than 1 µs, the \
                     shortest a window counts: it would be counted over {:?}; use at most {} \
                     frames or a longer Per",
                    g.window(),
                    per.as_micros().max(1)
                ),
                ProblemKind::OutOfRange,
            ),
            Ok(_) => {}
        }
    }
    t.finish(p, WINDOW_KEYS);
    let settings = WindowSettings {
        name,
        limit: limit?,
        per: per?,
        frames: frames?,
        store,
        on_store_failure,
    };
    if let WindowStoreSettings::Redis { url, .. } = &settings.store
        && let Err(e) = check_redis_url(url)
    {
        p.push(
            format!("{}.Store", at.path),
            None,
            e,
            ProblemKind::WrongType,
        );
    }
    if let (Some(f), Some(prefix)) = (&key_prefix_at, &key_prefix) {
        let problem = match &settings.store {
            WindowStoreSettings::Memory => {
                Some("applies only to a window kept in Redis (Store = \"redis://…\")".to_owned())
            }
            WindowStoreSettings::Redis { .. } => check_key_prefix(prefix).err(),
        };
        if let Some(message) = problem {
            p.push(
                f.path.clone(),
                Some(f.shown()),
                message,
                ProblemKind::OutOfRange,
            );
        }
    }
    (p.count() == before).then_some(settings)
}

/// Whether `url` parses as a Redis URL, without connecting (and without repeating it: it may hold
/// a password).
#[cfg(feature = "redis")]
pub(crate) fn check_redis_url(url: &str) -> Result<(), String> {
    // The client's message says why (a URL that does not parse, `rediss://` in a build without
    // TLS) and never repeats the URL, which may hold a password.
    redis::Client::open(url)
        .map(|_| ())
        .map_err(|e| format!("not a valid Redis URL: {e}"))
}

#[cfg(not(feature = "redis"))]
pub(crate) fn check_redis_url(_url: &str) -> Result<(), String> {
    Ok(())
}

/// The Redis store's own rules for a key prefix ([`pacer_redis::KeyFormat::new`]: at most
/// [`pacer_redis::MAX_PREFIX_BYTES`] bytes, no `{` or `}`), so that a prefix the store would
/// refuse when the middleware is built is refused when the file is loaded.
#[cfg(feature = "redis")]
pub(crate) fn check_key_prefix(prefix: &str) -> Result<(), String> {
    match pacer_redis::KeyFormat::new(prefix) {
        Ok(_) => Ok(()),
        Err(pacer_redis::RedisWindowError::Config(message)) => Err(message
            .strip_prefix("the key prefix ")
            .unwrap_or(&message)
            .to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// Without the `redis` feature a Redis window is refused anyway.
#[cfg(not(feature = "redis"))]
pub(crate) fn check_key_prefix(_prefix: &str) -> Result<(), String> {
    Ok(())
}

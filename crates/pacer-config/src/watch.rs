//! Reload: an opt-in watcher that applies a changed file to running limiters.
//!
//! **Why polling.** The watcher reads the files every interval (1 s by default) on its own
//! thread and reloads when their bytes change. Polling a few small files costs next to nothing,
//! needs no async runtime (it works the same inside and outside tokio), behaves the same on every
//! platform and file system (network mounts, containers), and sees every way a file is replaced:
//! editors that write a new file and rename it over the old one, and Kubernetes ConfigMaps that
//! swap a symlink — cases where file-system events need care per platform. The price is up to
//! one interval of delay, which suits configuration.
//!
//! **What a reload does** (as the .NET adaptive limiter does): for each limiter present both in the
//! running middleware and in the new file, [`PacerMiddleware::update_config`] applies the new
//! settings; every endpoint keeps its current rate, moved only into the new
//! `[MinUnitsPerMinute, MaxUnitsPerMinute]`; a new `InitialUnitsPerMinute` has no effect on a
//! running limiter. An invalid new file, or one with a strict window that cannot be built, is
//! logged (`tracing::warn!`, every problem), returned, and changes nothing. A limiter added to or
//! removed from the file, a changed `DefaultLimiter`, and a changed `MaxEndpoints` or
//! `EndpointIdleTtl` need a restart: they are logged, listed in the [`Reload`], and ignored. A
//! limiter that changed is described by the file alone: pieces given to it in code (a controller
//! of your own, a cost estimator) are replaced.

use crate::error::ConfigError;
use crate::loader::ConfigLoader;
use crate::settings::PacerSettings;
use reqwest_pacer::PacerMiddleware;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What one reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reload {
    /// Limiters whose new settings were applied.
    pub updated: Vec<String>,
    /// Limiters whose settings did not change.
    pub unchanged: Vec<String>,
    /// Limiters in the file that the middleware does not have (ignored: need a restart).
    pub added: Vec<String>,
    /// Limiters that were loaded before and are no longer in the file (they keep running with
    /// their settings until a restart).
    pub removed: Vec<String>,
    /// Changed settings that need a restart and were not applied: `<limiter>.MaxEndpoints`,
    /// `<limiter>.EndpointIdleTtl`, `DefaultLimiter`.
    pub needs_restart: Vec<String>,
}

/// Re-reads a configuration and applies it to a running middleware, on demand
/// ([`reload`](Self::reload)) or whenever the files change ([`start`](Self::start)).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("pacer.toml");
/// # std::fs::write(&path, "[adaptive_rate_limiting.limiters.api]\nmax_units_per_minute = 1200\n")?;
/// use pacer_config::{ConfigLoader, ConfigWatcher};
/// use std::time::Duration;
///
/// let loader = ConfigLoader::new().file(&path);
/// let pacer = loader.build()?;
/// let handle = ConfigWatcher::new(loader, pacer.clone())
///     .interval(Duration::from_millis(500))
///     .start()?;
/// // ... the watcher applies each change to `pacer` until `handle` is dropped.
/// drop(handle);
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use]
pub struct ConfigWatcher {
    loader: ConfigLoader,
    middleware: PacerMiddleware,
    interval: Duration,
    last: Option<PacerSettings>,
    fingerprint: Vec<Option<u64>>,
}

/// The default interval between two looks at the files.
pub const DEFAULT_WATCH_INTERVAL: Duration = Duration::from_secs(1);

impl ConfigWatcher {
    /// A watcher of `loader`'s files that applies them to `middleware`. What the files hold now is
    /// taken as what the middleware runs with: only later changes are applied.
    pub fn new(loader: ConfigLoader, middleware: PacerMiddleware) -> Self {
        let fingerprint = fingerprint(&loader);
        let last = loader.load().ok();
        ConfigWatcher {
            loader,
            middleware,
            interval: DEFAULT_WATCH_INTERVAL,
            last,
            fingerprint,
        }
    }

    /// How often to look at the files. Default [`DEFAULT_WATCH_INTERVAL`] (1 s).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Loads the configuration now and applies it. An invalid configuration is logged and
    /// returned, and changes nothing.
    ///
    /// # Errors
    /// The configuration could not be loaded; nothing changed.
    pub fn reload(&mut self) -> Result<Reload, ConfigError> {
        let new = match self.loader.load() {
            Ok(new) => new,
            Err(e) => {
                tracing::warn!(
                    errors = %e,
                    "invalid configuration; the limiters keep their settings"
                );
                return Err(e);
            }
        };
        // Every limiter's middleware settings first: a window that cannot be built refuses the
        // whole reload, and the running limiters keep theirs.
        let configs = match new.limiter_configs() {
            Ok(configs) => configs,
            Err(e) => {
                tracing::warn!(
                    errors = %e,
                    "invalid configuration; the limiters keep their settings"
                );
                return Err(e);
            }
        };
        let mut report = Reload::default();
        let running = self.middleware.limiter_names();
        for ((name, settings), (_, config)) in new.limiters().zip(configs) {
            if !running.contains(&name) {
                tracing::warn!(
                    limiter = name,
                    "a limiter added to the configuration needs a restart; ignored"
                );
                report.added.push(name.to_owned());
                continue;
            }
            let before = self.last.as_ref().and_then(|l| l.limiter(name));
            if before == Some(settings) {
                report.unchanged.push(name.to_owned());
                continue;
            }
            if let Some(before) = before {
                for (key, changed) in [
                    (
                        "MaxEndpoints",
                        before.max_endpoints != settings.max_endpoints,
                    ),
                    (
                        "EndpointIdleTtl",
                        before.endpoint_idle_ttl != settings.endpoint_idle_ttl,
                    ),
                ] {
                    if changed {
                        tracing::warn!(
                            limiter = name,
                            key,
                            "a change that needs a restart; ignored"
                        );
                        report.needs_restart.push(format!("{name}.{key}"));
                    }
                }
            }
            match self.middleware.update_config(name, config) {
                Ok(()) => {
                    tracing::info!(limiter = name, options = %settings.options, "configuration applied");
                    report.updated.push(name.to_owned());
                }
                Err(e) => {
                    tracing::warn!(limiter = name, error = %e, "configuration not applied");
                }
            }
        }
        if let Some(last) = &self.last {
            for name in last.names() {
                if new.limiter(name).is_none() {
                    tracing::warn!(
                        limiter = name,
                        "a limiter removed from the configuration keeps running until a restart"
                    );
                    report.removed.push(name.to_owned());
                }
            }
            if last.default_limiter() != new.default_limiter() {
                tracing::warn!(
                    default_limiter = new.default_limiter(),
                    "a new DefaultLimiter needs a restart; ignored"
                );
                report.needs_restart.push("DefaultLimiter".to_owned());
            }
        }
        self.last = Some(new);
        Ok(report)
    }

    /// Reloads if the files' bytes changed since the last look; `None` if they did not.
    fn poll(&mut self) -> Option<Result<Reload, ConfigError>> {
        let now = fingerprint(&self.loader);
        if now == self.fingerprint {
            return None;
        }
        self.fingerprint = now;
        Some(self.reload())
    }

    /// Starts watching on a thread of its own; the watcher stops when the handle is dropped.
    ///
    /// # Errors
    /// A file of the loader does not exist or cannot be read now (the error names it), the
    /// loader reads no file at all (there would be nothing to watch), or the thread could not be
    /// started.
    pub fn start(mut self) -> std::io::Result<WatchHandle> {
        let files = self.loader.files();
        if files.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "nothing to watch: the configuration loader reads no file",
            ));
        }
        for path in files {
            if let Err(e) = std::fs::File::open(path) {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("{}: cannot be watched: {e}", path.display()),
                ));
            }
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let interval = self.interval;
        let thread = std::thread::Builder::new()
            .name("pacer-config-watch".into())
            .spawn(move || {
                // The channel is the sleep: a message or a dropped sender ends the loop.
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    let _ = self.poll();
                }
            })?;
        Ok(WatchHandle {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// A hash of each file's bytes (`None` for a file that cannot be read now).
fn fingerprint(loader: &ConfigLoader) -> Vec<Option<u64>> {
    loader
        .files()
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(path).ok()?;
            let mut h = DefaultHasher::new();
            bytes.hash(&mut h);
            Some(h.finish())
        })
        .collect()
}

/// A running watcher; dropping it (or [`stop`](Self::stop)) stops it.
#[derive(Debug)]
pub struct WatchHandle {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl WatchHandle {
    /// Stops the watcher and waits for its thread to end.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Watches one configuration file (format by extension, the default section, no environment
/// overrides) and applies its changes to `middleware`, checking once a second.
///
/// # Errors
/// As [`ConfigWatcher::start`]: the file does not exist or cannot be read (the error names
/// it), or the watcher's thread could not be started.
pub fn watch(path: impl AsRef<Path>, middleware: &PacerMiddleware) -> std::io::Result<WatchHandle> {
    ConfigWatcher::new(ConfigLoader::new().file(path), middleware.clone()).start()
}

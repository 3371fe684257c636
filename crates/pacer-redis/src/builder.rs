//! Configuration of a [`RedisWindowStore`]: key prefix, timeouts, reconnection.

use crate::backend::Backend;
use crate::circuit::{Circuit, DEFAULT_DOWN_BACKOFF, DEFAULT_MAX_DOWN_BACKOFF};
use crate::conn::RedisConnection;
use crate::library::Library;
use crate::{DEFAULT_KEY_PREFIX, KeyFormat, RedisWindowError, RedisWindowStore};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// Builds a [`RedisWindowStore`].
///
/// ```no_run
/// use pacer_redis::RedisWindowStore;
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), pacer_redis::RedisWindowError> {
/// let store = RedisWindowStore::builder()
///     .key_prefix("myapp:pacer:")
///     .response_timeout(Duration::from_millis(200))
///     .connect("redis://127.0.0.1:6379")
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisWindowStoreBuilder {
    prefix: String,
    connection_timeout: Duration,
    response_timeout: Duration,
    reconnect_retries: usize,
    down_backoff: (Duration, Duration),
    #[cfg(feature = "test-util")]
    clock: Option<std::sync::Arc<dyn pacer_core::Clock>>,
}

impl Default for RedisWindowStoreBuilder {
    fn default() -> Self {
        RedisWindowStoreBuilder {
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            connection_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_millis(500),
            reconnect_retries: 0,
            down_backoff: (DEFAULT_DOWN_BACKOFF, DEFAULT_MAX_DOWN_BACKOFF),
            #[cfg(feature = "test-util")]
            clock: None,
        }
    }
}

impl RedisWindowStoreBuilder {
    /// The prefix of every Redis key (default `pacer:w:`; at most 64 bytes, no braces).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one connection attempt may take (default 1 s).
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long Redis may take to answer one call (default 500 ms). A call that takes longer
    /// fails as unavailable.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How many times a failed (re)connection is retried, with backoff from 100 ms, before a
    /// call fails (default 0: a refused connection fails the call at once, and the store's own
    /// backoff, [`down_backoff`](Self::down_backoff), decides when Redis is asked again).
    pub fn reconnect_retries(mut self, retries: usize) -> Self {
        self.reconnect_retries = retries;
        self
    }

    /// How long calls fail at once, without asking Redis, after a call found it unreachable
    /// (refused, reset, timed out): `initial` after the first failure, doubled after each failed
    /// try up to `max` (defaults [`DEFAULT_DOWN_BACKOFF`](crate::DEFAULT_DOWN_BACKOFF), 100 ms,
    /// and [`DEFAULT_MAX_DOWN_BACKOFF`](crate::DEFAULT_MAX_DOWN_BACKOFF), 2 s). After each wait
    /// one call asks Redis; its success ends the outage. `Duration::ZERO` asks Redis on every call
    /// as before.
    pub fn down_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.down_backoff = (initial, max);
        self
    }

    /// Runs the windows on `clock` instead of Redis `TIME`, through a test build of the library
    /// (`pacer_window_v1_testclock`) that takes the time as an argument, and times the
    /// [`down_backoff`](Self::down_backoff) on it. For deterministic tests only: processes on
    /// different clocks would not share windows correctly.
    #[cfg(feature = "test-util")]
    pub fn test_clock(mut self, clock: std::sync::Arc<dyn pacer_core::Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    fn manager_config(&self) -> ConnectionManagerConfig {
        ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connection_timeout))
            .set_response_timeout(Some(self.response_timeout))
            .set_number_of_retries(self.reconnect_retries)
            .set_max_delay(Duration::from_secs(2))
    }

    /// Connects to `url` now.
    ///
    /// # Errors
    ///
    /// [`RedisWindowError::Config`] for a bad prefix; [`RedisWindowError::Redis`] for a bad URL
    /// or an unreachable server (then [`RedisWindowError::is_unavailable`] is true).
    pub async fn connect(self, url: &str) -> Result<RedisWindowStore, RedisWindowError> {
        let client = redis::Client::open(url)?;
        let address = client.get_connection_info().addr().to_string();
        let conn = ConnectionManager::new_with_config(client, self.manager_config())
            .await
            .map_err(|e| RedisWindowError::from(e).naming(&address))?;
        self.assemble(RedisConnection::Single(conn), address, Some(url))
    }

    /// A store that connects on its first call, so that a process can start while Redis is
    /// down.
    ///
    /// # Errors
    ///
    /// As [`RedisWindowStoreBuilder::connect`], except for reachability.
    pub fn connect_lazy(self, url: &str) -> Result<RedisWindowStore, RedisWindowError> {
        let client = redis::Client::open(url)?;
        let address = client.get_connection_info().addr().to_string();
        let conn = ConnectionManager::new_lazy_with_config(client, self.manager_config())?;
        self.assemble(RedisConnection::Single(conn), address, Some(url))
    }

    /// Connects to a Redis Cluster through any of its nodes (`redis://host:port` each; the
    /// others are found from them). Each call goes to the primary of its key's slot (a
    /// window's key, or a fleet's three keys, which share one hash tag); the function library
    /// is loaded on every primary.
    ///
    /// # Errors
    ///
    /// As [`RedisWindowStoreBuilder::connect`].
    pub async fn connect_cluster<S: AsRef<str>>(
        self,
        nodes: &[S],
    ) -> Result<RedisWindowStore, RedisWindowError> {
        let urls: Vec<&str> = nodes.iter().map(AsRef::as_ref).collect();
        let client = redis::cluster::ClusterClient::builder(urls.clone())
            .connection_timeout(self.connection_timeout)
            .response_timeout(self.response_timeout)
            .retries(u32::try_from(self.reconnect_retries).unwrap_or(u32::MAX))
            .build()?;
        let address = urls
            .first()
            .and_then(|u| redis::Client::open(*u).ok())
            .map_or_else(
                || "cluster".to_owned(),
                |c| c.get_connection_info().addr().to_string(),
            );
        let conn = client
            .get_async_connection()
            .await
            .map_err(|e| RedisWindowError::from(e).naming(&address))?;
        self.assemble(
            RedisConnection::Cluster(conn),
            address,
            urls.first().copied(),
        )
    }

    /// A store on a connection manager configured elsewhere (its timeouts apply; this
    /// builder's do not).
    ///
    /// # Errors
    ///
    /// [`RedisWindowError::Config`] for a bad prefix.
    pub fn with_connection(
        self,
        conn: ConnectionManager,
    ) -> Result<RedisWindowStore, RedisWindowError> {
        self.assemble(RedisConnection::Single(conn), "unknown".to_owned(), None)
    }

    fn assemble(
        self,
        conn: RedisConnection,
        address: String,
        url: Option<&str>,
    ) -> Result<RedisWindowStore, RedisWindowError> {
        let keys = KeyFormat::new(self.prefix)?;
        let circuit = Circuit::new(self.down_backoff.0, self.down_backoff.1);
        let clock: Option<std::sync::Arc<dyn pacer_core::Clock>> = {
            #[cfg(feature = "test-util")]
            {
                self.clock
            }
            #[cfg(not(feature = "test-util"))]
            {
                None
            }
        };
        let circuit_clock = clock
            .clone()
            .unwrap_or_else(|| std::sync::Arc::new(pacer_core::RealClock::new()));
        let backend = std::sync::Arc::new(Backend::new(
            conn,
            circuit,
            circuit_clock,
            address,
            url.map(str::to_owned),
        ));
        let library = if clock.is_some() {
            #[cfg(feature = "test-util")]
            {
                Library::test_clock()
            }
            #[cfg(not(feature = "test-util"))]
            {
                Library::real()
            }
        } else {
            Library::real()
        };
        Ok(RedisWindowStore::assemble(backend, keys, library, clock))
    }
}

//! The Redis window store: each operation one `FCALL` of Pacer's function library.

use crate::circuit::{Admit, Circuit, Failure};
use crate::error::{is_missing_function, window_error};
use crate::library::Library;
use crate::{KeyFormat, RedisWindowError, RedisWindowStoreBuilder};
use pacer_core::{
    Clock, EtaOutcome, EventsOutcome, FillOutcome, TryOutcome, WindowError, WindowFuture,
    WindowGeometry, WindowStore, WindowTime, check_limit, check_limited_call,
};
use redis::aio::ConnectionManager;
use redis::{Cmd, Value};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Strict windows in Redis, shared by every process that uses the same Redis and key prefix.
///
/// Each operation is one atomic `FCALL` (`FCALL_RO` for `eta` and `now`) of the
/// `pacer_window_v1` library on the Redis server's clock. The library is loaded with
/// `FUNCTION LOAD REPLACE` on the first call, and again whenever Redis answers that a function
/// is missing (after a restart or a `FUNCTION FLUSH`); the call is then retried once. The
/// connection is a `redis` [`ConnectionManager`]: one multiplexed connection that reconnects by
/// itself. An unreachable Redis gives [`WindowError::Unavailable`] within the configured
/// timeouts (a refused connection at once).
///
/// **While Redis is down, it is not asked on every call.** A call that finds it unreachable
/// (refused, reset, timed out) opens the store's circuit: for the next 100 ms every call fails at
/// once with [`RedisWindowError::Down`] (an [`WindowError::Unavailable`], so the store-failure
/// policies apply as before) without touching the network. Then one call asks Redis again; if it
/// fails, the wait doubles, up to 2 s
/// ([`RedisWindowStoreBuilder::down_backoff`]); its success closes the circuit. A server that
/// answers, but not as Redis, gives [`RedisWindowError::NotRedis`] the same way: a
/// [`WindowError::Backend`] naming its address, which no policy hides.
///
/// ```no_run
/// use pacer_core::{WindowGeometry, WindowStore};
/// use pacer_redis::RedisWindowStore;
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisWindowStore::connect("redis://127.0.0.1:6379").await?;
/// let g = WindowGeometry::for_limit(30, Duration::from_secs(600), 10)?;
/// let outcome = store.try_take("api.example.com:443", g, 30, 1).await?;
/// if outcome.taken == 0 {
///     tokio::time::sleep(outcome.wait()).await; // eta − now, both on the Redis clock
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RedisWindowStore {
    conn: ConnectionManager,
    keys: KeyFormat,
    library: Arc<Library>,
    loaded: AtomicBool,
    clock: Option<Arc<dyn Clock>>,
    circuit: Circuit,
    /// Monotonic time for the circuit's backoff.
    circuit_clock: Arc<dyn Clock>,
    /// `host:port`, never a password.
    address: String,
}

impl RedisWindowStore {
    /// Connects to `url` with the default configuration.
    ///
    /// # Errors
    ///
    /// As [`RedisWindowStoreBuilder::connect`].
    pub async fn connect(url: &str) -> Result<Self, RedisWindowError> {
        RedisWindowStoreBuilder::default().connect(url).await
    }

    /// A builder for a store with another prefix, other timeouts, or an existing connection.
    pub fn builder() -> RedisWindowStoreBuilder {
        RedisWindowStoreBuilder::default()
    }

    pub(crate) fn assemble(
        conn: ConnectionManager,
        keys: KeyFormat,
        library: Library,
        clock: Option<Arc<dyn Clock>>,
        circuit: Circuit,
        address: String,
    ) -> Self {
        let circuit_clock = clock
            .clone()
            .unwrap_or_else(|| Arc::new(pacer_core::RealClock::new()));
        RedisWindowStore {
            conn,
            keys,
            library: Arc::new(library),
            loaded: AtomicBool::new(false),
            clock,
            circuit,
            circuit_clock,
            address,
        }
    }

    /// The server's address, `host:port` (never a password), as errors name it; `unknown` for a
    /// store made on a connection.
    #[must_use]
    pub fn address(&self) -> &str {
        &self.address
    }

    /// True while the store takes Redis for down and fails calls at once (see
    /// [`RedisWindowError::Down`]).
    #[must_use]
    pub fn is_down(&self) -> bool {
        self.circuit.open_for() == Some(Failure::Unreachable)
    }

    /// Runs `call` through the circuit: at once [`RedisWindowError::Down`] (or `NotRedis`) while
    /// it is open, else the call, whose failure or success moves the circuit.
    ///
    /// A probe that finds the transport failed tries once more at once: the connection manager
    /// keeps the last failed connection attempt for the first call after it, and starts a fresh
    /// one only then.
    async fn guarded<T, F>(&self, call: impl Fn() -> F) -> Result<T, RedisWindowError>
    where
        F: Future<Output = Result<T, RedisWindowError>>,
    {
        let now = self.circuit_clock.now();
        let probe = match self.circuit.admit(now) {
            Admit::Closed => false,
            Admit::Probe => true,
            Admit::Refuse { retry_in, why } => {
                return Err(match why {
                    Failure::Unreachable => RedisWindowError::Down {
                        address: self.address.clone(),
                        retry_in,
                    },
                    Failure::NotRedis => RedisWindowError::NotRedis {
                        address: self.address.clone(),
                        source: redis::RedisError::from((
                            redis::ErrorKind::Parse,
                            "an earlier reply was not Redis's",
                        )),
                    },
                });
            }
        };
        // A probe dropped before it ends lets the next call probe.
        let mut guard = ProbeGuard {
            circuit: probe.then_some(&self.circuit),
        };
        let mut result = call().await;
        if probe
            && let Err(e) = &result
            && e.transport_failure() == Some(Failure::Unreachable)
        {
            result = call().await;
        }
        let result = result.map_err(|e| e.naming(&self.address));
        guard.circuit = None;
        match result
            .as_ref()
            .err()
            .and_then(RedisWindowError::transport_failure)
        {
            Some(why) => {
                if let Some(backoff) = self.circuit.failed(self.circuit_clock.now(), why, probe) {
                    tracing::warn!(
                        address = %self.address,
                        backoff_ms = backoff.as_millis() as u64,
                        reason = ?why,
                        "Redis window store unreachable: calls fail at once until one gets through"
                    );
                }
            }
            None => {
                if self.circuit.succeeded() {
                    tracing::info!(address = %self.address, "Redis window store reachable again");
                }
            }
        }
        result
    }

    /// The Redis key that holds the window of `key`.
    #[must_use]
    pub fn redis_key(&self, key: &str) -> String {
        self.keys.redis_key(key)
    }

    /// The connection (a cheap clone of the manager).
    #[must_use]
    pub fn connection(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// The name of the function library this store calls.
    #[must_use]
    pub fn library_name(&self) -> &str {
        &self.library.name
    }

    /// Loads the function library (`FUNCTION LOAD REPLACE`). Calls do it by themselves; this is
    /// for checking a server at start-up.
    ///
    /// # Errors
    ///
    /// [`RedisWindowError::Load`] when Redis refuses (older than 7.0, no permission) or cannot
    /// be reached.
    pub async fn load_library(&self) -> Result<(), RedisWindowError> {
        self.guarded(|| self.load("requested")).await
    }

    async fn load(&self, reason: &'static str) -> Result<(), RedisWindowError> {
        let mut conn = self.conn.clone();
        redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(&self.library.source)
            .query_async::<String>(&mut conn)
            .await
            .map_err(|source| RedisWindowError::Load {
                library: self.library.name.clone(),
                source,
            })?;
        self.loaded.store(true, Ordering::Release);
        tracing::debug!(library = %self.library.name, reason, "loaded the window function library");
        Ok(())
    }

    /// Calls `function` on `key` with `args` (and the test clock's time, if any), loading the
    /// library first if needed and once more if Redis lost it.
    async fn fcall(
        &self,
        function: &str,
        read_only: bool,
        key: Option<&str>,
        args: &[u64],
    ) -> Result<Vec<i64>, RedisWindowError> {
        self.guarded(|| self.fcall_unguarded(function, read_only, key, args))
            .await
    }

    async fn fcall_unguarded(
        &self,
        function: &str,
        read_only: bool,
        key: Option<&str>,
        args: &[u64],
    ) -> Result<Vec<i64>, RedisWindowError> {
        let mut cmd = redis::cmd(if read_only { "FCALL_RO" } else { "FCALL" });
        cmd.arg(function);
        match key {
            Some(key) => cmd.arg(1).arg(self.keys.redis_key(key)),
            None => cmd.arg(0),
        };
        cmd.arg(args);
        if let Some(clock) = &self.clock {
            cmd.arg(WindowTime::from_system_time(clock.system_now()).as_micros());
        }
        if !self.loaded.load(Ordering::Acquire) {
            self.load("first use").await?;
        }
        let reply = match self.query(&cmd).await {
            Err(RedisWindowError::Redis(e)) if is_missing_function(&e) => {
                self.loaded.store(false, Ordering::Release);
                self.load("function missing").await?;
                self.query(&cmd).await?
            }
            other => other?,
        };
        integers(&reply).ok_or_else(|| RedisWindowError::Reply {
            function: function.to_owned(),
            reply: format!("{reply:?}"),
        })
    }

    async fn query(&self, cmd: &Cmd) -> Result<Value, RedisWindowError> {
        let mut conn = self.conn.clone();
        Ok(cmd.query_async::<Value>(&mut conn).await?)
    }

    fn geometry_args(g: &WindowGeometry) -> [u64; 3] {
        [
            u64::from(g.frames()),
            g.frame_length_us(),
            u64::from(g.counter_width_bits()),
        ]
    }

    async fn limited(
        &self,
        function: &str,
        read_only: bool,
        key: &str,
        g: WindowGeometry,
        limit: u64,
        count: u64,
    ) -> Result<(i64, i64, i64), WindowError> {
        let [n, l, w] = Self::geometry_args(&g);
        let reply = self
            .fcall(function, read_only, Some(key), &[n, l, w, limit, count])
            .await
            .map_err(|e| window_error(e, Some(g)))?;
        match reply[..] {
            [a, b, c] => Ok((a, b, c)),
            [a, b] => Ok((a, b, 0)),
            _ => Err(bad_reply(function, &reply)),
        }
    }
}

/// Ends the probe if the call that carried it is dropped before it ends.
struct ProbeGuard<'a> {
    circuit: Option<&'a Circuit>,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if let Some(circuit) = self.circuit {
            circuit.probe_ended();
        }
    }
}

fn integers(v: &Value) -> Option<Vec<i64>> {
    match v {
        Value::Int(n) => Some(vec![*n]),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Int(n) => Some(*n),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn bad_reply(function: &str, reply: &[i64]) -> WindowError {
    WindowError::Backend {
        source: Box::new(RedisWindowError::Reply {
            function: function.to_owned(),
            reply: format!("{reply:?}"),
        }),
    }
}

fn time(function: &str, us: i64) -> Result<WindowTime, WindowError> {
    u64::try_from(us)
        .map(WindowTime::from_micros)
        .map_err(|_| bad_reply(function, &[us]))
}

fn count(function: &str, n: i64) -> Result<u64, WindowError> {
    u64::try_from(n).map_err(|_| bad_reply(function, &[n]))
}

impl WindowStore for RedisWindowStore {
    fn try_take<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        n: u64,
    ) -> WindowFuture<'a, TryOutcome> {
        Box::pin(async move {
            check_limited_call(&geometry, limit, n)?;
            let f = &self.library.try_take;
            let (taken, eta, now) = self.limited(f, false, key, geometry, limit, n).await?;
            Ok(TryOutcome {
                taken: count(f, taken)?,
                eta: time(f, eta)?,
                now: time(f, now)?,
            })
        })
    }

    fn fill<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        n: u64,
    ) -> WindowFuture<'a, FillOutcome> {
        Box::pin(async move {
            check_limited_call(&geometry, limit, n)?;
            let f = &self.library.fill;
            let (taken, eta, now) = self.limited(f, false, key, geometry, limit, n).await?;
            Ok(FillOutcome {
                taken: count(f, taken)?,
                eta: time(f, eta)?,
                now: time(f, now)?,
            })
        })
    }

    fn events<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        n: u64,
    ) -> WindowFuture<'a, EventsOutcome> {
        Box::pin(async move {
            let f = &self.library.events;
            let [fr, l, w] = Self::geometry_args(&geometry);
            // Any count above the capacity overflows; the Lua takes integers below 2^53 only.
            let sent = n.min(geometry.capacity() + 1);
            let reply = self
                .fcall(f, false, Some(key), &[fr, l, w, sent])
                .await
                .map_err(|e| match window_error(e, Some(geometry)) {
                    WindowError::Overflow {
                        total, capacity, ..
                    } => WindowError::Overflow {
                        total,
                        count: n,
                        capacity,
                    },
                    other => other,
                })?;
            let [total, expired, now] = reply[..] else {
                return Err(bad_reply(f, &reply));
            };
            Ok(EventsOutcome {
                total: count(f, total)?,
                expired: count(f, expired)?,
                now: time(f, now)?,
            })
        })
    }

    fn eta<'a>(
        &'a self,
        key: &'a str,
        geometry: WindowGeometry,
        limit: u64,
        n: u64,
    ) -> WindowFuture<'a, EtaOutcome> {
        Box::pin(async move {
            check_limit(&geometry, limit)?;
            let f = &self.library.eta;
            // Any count above the limit is "never"; the Lua takes integers below 2^53 only.
            let sent = n.min(limit + 1);
            let (eta, now, _) = self.limited(f, true, key, geometry, limit, sent).await?;
            Ok(EtaOutcome {
                eta: if eta < 0 { None } else { Some(time(f, eta)?) },
                now: time(f, now)?,
            })
        })
    }

    fn now(&self) -> WindowFuture<'_, WindowTime> {
        Box::pin(async move {
            let f = &self.library.now;
            let reply = self.fcall(f, true, None, &[]).await?;
            match reply[..] {
                [now] => time(f, now),
                _ => Err(bad_reply(f, &reply)),
            }
        })
    }

    fn clear<'a>(&'a self, key: &'a str) -> WindowFuture<'a, ()> {
        Box::pin(async move {
            let del = redis::cmd("DEL").arg(self.keys.redis_key(key)).clone();
            self.guarded(|| async {
                let mut conn = self.conn.clone();
                Ok(del.query_async::<i64>(&mut conn).await?)
            })
            .await?;
            Ok(())
        })
    }
}

//! The Redis window store: each operation one `FCALL` of Pacer's function library.

use crate::backend::{Backend, Loadable};
use crate::conn::RedisConnection;
use crate::error::window_error;
use crate::library::Library;
use crate::{KeyFormat, RedisWindowError, RedisWindowStoreBuilder};
use pacer_core::{
    Clock, EtaOutcome, EventsOutcome, FillOutcome, TryOutcome, WindowError, WindowFuture,
    WindowGeometry, WindowStore, WindowTime, check_limit, check_limited_call,
};
use redis::Value;
use std::sync::Arc;

/// Strict windows in Redis, shared by every process that uses the same Redis and key prefix.
///
/// Each operation is one atomic `FCALL` (`FCALL_RO` for `eta` and `now`) of the
/// `pacer_window_v1` library on the Redis server's clock. The library is loaded with
/// `FUNCTION LOAD REPLACE` on the first call, and again whenever Redis answers that a function
/// is missing (after a restart or a `FUNCTION FLUSH`); the call is then retried once. The
/// connection is a [`RedisConnection`]: to one Redis, a `redis` connection manager (one
/// multiplexed connection that reconnects by itself); to a Redis Cluster
/// ([`RedisWindowStoreBuilder::connect_cluster`]), the `redis` crate's cluster connection,
/// which sends each call to its key's slot. An unreachable Redis gives
/// [`WindowError::Unavailable`] within the configured timeouts (a refused connection at once).
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
    backend: Arc<Backend>,
    keys: KeyFormat,
    library: Arc<Library>,
    loadable: Arc<Loadable>,
    clock: Option<Arc<dyn Clock>>,
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
        backend: Arc<Backend>,
        keys: KeyFormat,
        library: Library,
        clock: Option<Arc<dyn Clock>>,
    ) -> Self {
        let loadable = Arc::new(Loadable::new(library.name.clone(), library.source.clone()));
        RedisWindowStore {
            backend,
            keys,
            library: Arc::new(library),
            loadable,
            clock,
        }
    }

    /// The connection, the circuit and the test clock, for a fleet store on the same Redis.
    pub(crate) fn parts(&self) -> (Arc<Backend>, Option<Arc<dyn Clock>>) {
        (Arc::clone(&self.backend), self.clock.clone())
    }

    /// The server's address, `host:port` (never a password), as errors name it; `unknown` for a
    /// store made on a connection.
    #[must_use]
    pub fn address(&self) -> &str {
        &self.backend.address
    }

    /// True while the store takes Redis for down and fails calls at once (see
    /// [`RedisWindowError::Down`]).
    #[must_use]
    pub fn is_down(&self) -> bool {
        self.backend.is_down()
    }

    /// The connection (a cheap clone), for commands of one's own.
    #[must_use]
    pub fn connection(&self) -> RedisConnection {
        self.backend.conn.clone()
    }

    /// The Redis key that holds the window of `key`.
    #[must_use]
    pub fn redis_key(&self, key: &str) -> String {
        self.keys.redis_key(key)
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
        self.backend
            .guarded(|| self.backend.load(&self.loadable, "requested"))
            .await
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
        let reply = self
            .backend
            .guarded(|| self.backend.fcall(&self.loadable, &cmd))
            .await?;
        integers(&reply).ok_or_else(|| RedisWindowError::Reply {
            function: function.to_owned(),
            reply: format!("{reply:?}"),
        })
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
            self.backend.guarded(|| self.backend.query(&del)).await?;
            Ok(())
        })
    }
}

//! The Redis fleet store: each call one `FCALL` of Pacer's fleet library, and the news of urgent
//! commits through pub/sub.

use crate::backend::{Backend, Loadable};
use crate::library::FleetLibrary;
use crate::{KeyFormat, RedisWindowError, RedisWindowStore};
use pacer_core::{
    Clock, CommitReply, CommitRequest, DrawReply, DrawRequest, FleetError, FleetFuture, FleetStore,
    Gauges, NewsFuture, SyncReply, SyncRequest, TickData, Timestamp, WindowTime,
};
use parking_lot::Mutex;
use redis::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// The prefix of a fleet's keys unless set.
pub const DEFAULT_FLEET_PREFIX: &str = "pacer:f:";

/// How long the news subscriber waits before it connects again after its connection failed.
const NEWS_RECONNECT: Duration = Duration::from_secs(1);

/// Fleets in Redis (or Valkey, or a Redis Cluster): every process that uses the same Redis and
/// key prefix shares each fleet's members, gauges and state
/// ([`FleetStore`]'s rules). Each call is one atomic `FCALL` of the `pacer_fleet_v2` library on
/// the Redis server's clock, loaded by itself as the window library is; a fleet's three keys
/// share one hash tag (`pacer:f:{limiter:endpoint}:m`, `:g`, `:s`), so a cluster keeps them in
/// one slot. An urgent commit (a cut, a stop) is published on the fleet's channel
/// (`pacer:f:{…}:news`), which the store follows with one pub/sub connection of its own, so
/// members hear of it at once.
///
/// A fleet store shares its connection, timeouts and circuit with the window store it is made
/// from ([`RedisFleetStore::on`]): while Redis is down, a call fails at once.
///
/// ```no_run
/// use pacer_core::{FleetStore, SyncRequest};
/// use pacer_redis::RedisFleetStore;
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = RedisFleetStore::connect("redis://127.0.0.1:6379").await?;
/// let reply = store
///     .sync("orders-api:https://api.example.com", &SyncRequest::new("host-1", Duration::from_secs(3), 0))
///     .await?;
/// println!("{} members", reply.members);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisFleetStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    backend: Arc<Backend>,
    keys: KeyFormat,
    library: FleetLibrary,
    loadable: Loadable,
    clock: Option<Arc<dyn Clock>>,
    news: Arc<News>,
}

/// The fleets' news: one subscriber for every fleet of this store, and who waits on which.
struct News {
    url: Option<String>,
    pattern: String,
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
    started: AtomicBool,
}

// By hand: the URL may hold a password, and is never shown.
impl std::fmt::Debug for News {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("News")
            .field("pattern", &self.pattern)
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

impl RedisFleetStore {
    /// Connects to `url` with the window store's default configuration.
    ///
    /// # Errors
    ///
    /// As [`RedisWindowStoreBuilder::connect`](crate::RedisWindowStoreBuilder::connect).
    pub async fn connect(url: &str) -> Result<Self, RedisWindowError> {
        let windows = RedisWindowStore::connect(url).await?;
        Ok(RedisFleetStore::on(&windows))
    }

    /// A fleet store on the connection of `windows` (its timeouts, circuit and test clock),
    /// with the key prefix [`DEFAULT_FLEET_PREFIX`].
    #[must_use]
    pub fn on(windows: &RedisWindowStore) -> Self {
        RedisFleetStore::with_prefix(windows, DEFAULT_FLEET_PREFIX)
            .expect("the default prefix is valid")
    }

    /// [`on`](Self::on) with another key prefix (at most 64 bytes, no braces).
    ///
    /// # Errors
    ///
    /// [`RedisWindowError::Config`] for a bad prefix.
    pub fn with_prefix(windows: &RedisWindowStore, prefix: &str) -> Result<Self, RedisWindowError> {
        let (backend, clock) = windows.parts();
        let keys = KeyFormat::new(prefix)?;
        let library = if clock.is_some() {
            test_library()
        } else {
            FleetLibrary::real()
        };
        let loadable = Loadable::new(library.name.clone(), library.source.clone());
        let news = Arc::new(News {
            url: backend.url.clone(),
            pattern: format!("{}*:news", glob_escape(prefix)),
            waiters: Mutex::new(HashMap::new()),
            started: AtomicBool::new(false),
        });
        Ok(RedisFleetStore {
            inner: Arc::new(Inner {
                backend,
                keys,
                library,
                loadable,
                clock,
                news,
            }),
        })
    }

    /// The Redis keys of fleet `key`: its members, their gauges, its state, and its channel.
    #[must_use]
    pub fn redis_keys(&self, key: &str) -> [String; 4] {
        let tagged = self.inner.keys.redis_key(key);
        ["m", "g", "s", "news"].map(|part| format!("{tagged}:{part}"))
    }

    async fn call(
        &self,
        function: &str,
        keys: &[&str],
        args: Vec<String>,
    ) -> Result<Value, FleetError> {
        let inner = &self.inner;
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(function).arg(keys.len()).arg(keys).arg(args);
        if let Some(clock) = &inner.clock {
            cmd.arg(WindowTime::from_system_time(clock.system_now()).as_micros());
        }
        inner
            .backend
            .guarded(|| inner.backend.fcall(&inner.loadable, &cmd))
            .await
            .map_err(|e| {
                if e.is_unavailable() {
                    FleetError::unavailable(e)
                } else {
                    FleetError::backend(e)
                }
            })
    }

    /// Starts the subscriber of the fleets' news, once.
    fn follow_news(&self) {
        let news = &self.inner.news;
        if news.url.is_none() || news.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(news);
        tokio::spawn(subscribe(weak));
    }
}

#[cfg(any(test, feature = "test-util"))]
fn test_library() -> FleetLibrary {
    FleetLibrary::test_clock()
}

#[cfg(not(any(test, feature = "test-util")))]
fn test_library() -> FleetLibrary {
    FleetLibrary::real()
}

/// A prefix as a glob pattern matches it: `*`, `?`, `[` and `\` escaped.
fn glob_escape(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Follows every fleet channel of the store with one pub/sub connection, waking the members that
/// wait on a channel when a message comes; connects again after a failure, until the store is
/// dropped.
async fn subscribe(news: Weak<News>) {
    loop {
        let Some(strong) = news.upgrade() else {
            return;
        };
        let (url, pattern) = (strong.url.clone(), strong.pattern.clone());
        drop(strong);
        let Some(url) = url else {
            return;
        };
        if let Err(e) = listen(&news, &url, &pattern).await {
            tracing::debug!(error = %e, "fleet news: the subscription ended; connecting again");
        }
        tokio::time::sleep(NEWS_RECONNECT).await;
    }
}

async fn listen(news: &Weak<News>, url: &str, pattern: &str) -> redis::RedisResult<()> {
    use futures_util::StreamExt;
    let client = redis::Client::open(url)?;
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.psubscribe(pattern).await?;
    let mut messages = pubsub.into_on_message();
    while let Some(message) = messages.next().await {
        let Some(news) = news.upgrade() else {
            return Ok(());
        };
        let waiting = news.waiters.lock().get(message.get_channel_name()).cloned();
        if let Some(notify) = waiting {
            notify.notify_waiters();
        }
    }
    Ok(())
}

fn bad(function: &str, reply: &Value) -> FleetError {
    FleetError::backend(RedisWindowError::Reply {
        function: function.to_owned(),
        reply: format!("{reply:?}"),
    })
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::Int(n) => Some(*n as f64),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::Double(d) => Some(*d),
        _ => None,
    }
}

fn bytes(v: &Value) -> Option<Option<Vec<u8>>> {
    match v {
        Value::Nil => Some(None),
        Value::BulkString(b) => Some(Some(b.clone())),
        _ => None,
    }
}

/// One member's gauges as the Lua keeps them: "demand measured queued waited".
fn gauges(text: &[u8]) -> Option<Gauges> {
    let text = std::str::from_utf8(text).ok()?;
    let mut parts = text.split(' ');
    let mut next = || parts.next()?.parse::<f64>().ok();
    let (demand, measured, queued, waited) = (next()?, next()?, next()?, next()?);
    let mut g = Gauges::new(measured, queued, waited != 0.0);
    g.demand = demand;
    Some(g)
}

/// A Lua-safe decimal for a float: finite, no exponent Lua cannot read.
fn decimal(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "0".to_owned()
    }
}

fn micros(d: Duration) -> String {
    d.as_micros().to_string()
}

impl FleetStore for RedisFleetStore {
    fn sync<'a>(&'a self, key: &'a str, request: &'a SyncRequest) -> FleetFuture<'a, SyncReply> {
        Box::pin(async move {
            let [m, g, s, _] = self.redis_keys(key);
            let gauge = request.gauges;
            let args = vec![
                request.member.clone(),
                micros(request.lease),
                request.known_version.to_string(),
                decimal(gauge.demand),
                decimal(gauge.measured),
                decimal(gauge.queued),
                u8::from(gauge.waited).to_string(),
                decimal(request.accepted.max(0.0)),
                micros(request.claim),
            ];
            let f = &self.inner.library.sync;
            let reply = self.call(f, &[&m, &g, &s], args).await?;
            let Value::Array(items) = &reply else {
                return Err(bad(f, &reply));
            };
            let [now, members, version, state, accepted, tick, all] = &items[..] else {
                return Err(bad(f, &reply));
            };
            let now = int(now).and_then(|us| u64::try_from(us).ok());
            let members = int(members).and_then(|n| u32::try_from(n).ok());
            let version = int(version).and_then(|v| u64::try_from(v).ok());
            let (Some(now), Some(members), Some(version), Some(state), Some(accepted), Some(tick)) = (
                now,
                members,
                version,
                bytes(state),
                float(accepted),
                int(tick),
            ) else {
                return Err(bad(f, &reply));
            };
            let tick = if tick == 1 {
                let Value::Array(list) = all else {
                    return Err(bad(f, &reply));
                };
                let gauges: Option<Vec<Gauges>> = list
                    .iter()
                    .map(|v| match v {
                        Value::BulkString(b) => gauges(b),
                        _ => None,
                    })
                    .collect();
                let mut data = TickData::default();
                data.gauges = gauges.ok_or_else(|| bad(f, &reply))?;
                Some(data)
            } else {
                None
            };
            let mut answer = SyncReply::new(
                Timestamp::from_nanos(now.saturating_mul(1_000)),
                members,
                version,
            );
            answer.state = state;
            answer.accepted = accepted;
            answer.tick = tick;
            Ok(answer)
        })
    }

    fn commit<'a>(
        &'a self,
        key: &'a str,
        request: &'a CommitRequest,
    ) -> FleetFuture<'a, CommitReply> {
        Box::pin(async move {
            let [_, _, s, channel] = self.redis_keys(key);
            let state = String::from_utf8(request.state.clone())
                .map_err(|_| FleetError::backend("a fleet's state must be UTF-8 text"))?;
            let args = vec![
                request.member.clone(),
                request.expected_version.to_string(),
                state,
                decimal(request.accepted.max(0.0)),
                request
                    .next_tick
                    .map(|t| (t.as_nanos() / 1_000).to_string())
                    .unwrap_or_default(),
                u8::from(request.urgent).to_string(),
                channel,
            ];
            let f = &self.inner.library.commit;
            let reply = self.call(f, &[&s], args).await?;
            let Value::Array(items) = &reply else {
                return Err(bad(f, &reply));
            };
            let [committed, version, state] = &items[..] else {
                return Err(bad(f, &reply));
            };
            let (Some(committed), Some(version), Some(state)) = (
                int(committed),
                int(version).and_then(|v| u64::try_from(v).ok()),
                bytes(state),
            ) else {
                return Err(bad(f, &reply));
            };
            Ok(CommitReply::new(committed == 1, version, state))
        })
    }

    fn leave<'a>(&'a self, key: &'a str, member: &'a str) -> FleetFuture<'a, ()> {
        Box::pin(async move {
            let [m, g, _, _] = self.redis_keys(key);
            let f = &self.inner.library.leave;
            self.call(f, &[&m, &g], vec![member.to_owned()]).await?;
            Ok(())
        })
    }

    fn draw<'a>(&'a self, key: &'a str, request: &'a DrawRequest) -> FleetFuture<'a, DrawReply> {
        Box::pin(async move {
            let [_, _, s, _] = self.redis_keys(key);
            let args = vec![
                decimal(request.units.max(0.0)),
                decimal(request.rate),
                decimal(request.burst.max(0.0)),
                micros(request.max_wait),
                (request.not_before.as_nanos() / 1_000).to_string(),
            ];
            let f = &self.inner.library.draw;
            let reply = self.call(f, &[&s], args).await?;
            let Value::Array(items) = &reply else {
                return Err(bad(f, &reply));
            };
            let [now, at, earliest] = &items[..] else {
                return Err(bad(f, &reply));
            };
            let (Some(now), Some(at), Some(earliest)) = (int(now), int(at), int(earliest)) else {
                return Err(bad(f, &reply));
            };
            let time = |us: i64| Timestamp::from_nanos(u64::try_from(us).unwrap_or(0) * 1_000);
            let at = (at >= 0).then(|| time(at));
            Ok(DrawReply::new(time(now), at, time(earliest.max(now))))
        })
    }

    fn news<'a>(&'a self, key: &'a str) -> NewsFuture<'a> {
        if self.inner.news.url.is_none() {
            return Box::pin(std::future::pending());
        }
        self.follow_news();
        let [_, _, _, channel] = self.redis_keys(key);
        let notify = Arc::clone(self.inner.news.waiters.lock().entry(channel).or_default());
        Box::pin(notify.notified_owned())
    }
}

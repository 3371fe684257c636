//! What every Redis store of one connection shares: the connection, the circuit that stops
//! asking a Redis that is down, and the loading of a function library.

use crate::RedisWindowError;
use crate::circuit::{Admit, Circuit, Failure};
use crate::conn::RedisConnection;
use crate::error::is_missing_function;
use pacer_core::Clock;
use redis::{Cmd, Value};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A connection and its circuit, shared by the stores made on it.
pub(crate) struct Backend {
    pub(crate) conn: RedisConnection,
    circuit: Circuit,
    /// Monotonic time for the circuit's backoff.
    circuit_clock: Arc<dyn Clock>,
    /// `host:port`, never a password.
    pub(crate) address: String,
    /// The URL the connection was made from (for a pub/sub connection of its own), if known.
    pub(crate) url: Option<String>,
}

/// A function library as one store loads it: its name, its source, whether it is loaded.
pub(crate) struct Loadable {
    pub(crate) name: String,
    pub(crate) source: String,
    loaded: AtomicBool,
}

impl Loadable {
    pub(crate) fn new(name: String, source: String) -> Self {
        Loadable {
            name,
            source,
            loaded: AtomicBool::new(false),
        }
    }
}

impl Backend {
    pub(crate) fn new(
        conn: RedisConnection,
        circuit: Circuit,
        circuit_clock: Arc<dyn Clock>,
        address: String,
        url: Option<String>,
    ) -> Self {
        Backend {
            conn,
            circuit,
            circuit_clock,
            address,
            url,
        }
    }

    /// True while the circuit takes Redis for down.
    pub(crate) fn is_down(&self) -> bool {
        self.circuit.open_for() == Some(Failure::Unreachable)
    }

    /// Runs `call` through the circuit: at once [`RedisWindowError::Down`] (or `NotRedis`) while
    /// it is open, else the call, whose failure or success moves the circuit.
    ///
    /// A probe that finds the transport failed tries once more at once: the connection manager
    /// keeps the last failed connection attempt for the first call after it, and starts a fresh
    /// one only then.
    pub(crate) async fn guarded<T, F>(&self, call: impl Fn() -> F) -> Result<T, RedisWindowError>
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
                        "Redis unreachable: calls fail at once until one gets through"
                    );
                }
            }
            None => {
                if self.circuit.succeeded() {
                    tracing::info!(address = %self.address, "Redis reachable again");
                }
            }
        }
        result
    }

    /// Loads `library` (`FUNCTION LOAD REPLACE`; in a cluster, on every primary).
    pub(crate) async fn load(
        &self,
        library: &Loadable,
        reason: &'static str,
    ) -> Result<(), RedisWindowError> {
        let mut conn = self.conn.clone();
        redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(&library.source)
            .query_async::<Value>(&mut conn)
            .await
            .map_err(|source| RedisWindowError::Load {
                library: library.name.clone(),
                source,
            })?;
        library.loaded.store(true, Ordering::Release);
        tracing::debug!(library = %library.name, reason, "loaded a function library");
        Ok(())
    }

    /// Sends `cmd` (an `FCALL` of `library`), loading the library first if needed and once more
    /// if Redis lost it (a restart, a flush, a failover to a replica that never had it). Not
    /// through the circuit: the caller's [`guarded`](Self::guarded) wraps it.
    pub(crate) async fn fcall(
        &self,
        library: &Loadable,
        cmd: &Cmd,
    ) -> Result<Value, RedisWindowError> {
        if !library.loaded.load(Ordering::Acquire) {
            self.load(library, "first use").await?;
        }
        match self.query(cmd).await {
            Err(RedisWindowError::Redis(e)) if is_missing_function(&e) => {
                library.loaded.store(false, Ordering::Release);
                self.load(library, "function missing").await?;
                self.query(cmd).await
            }
            other => other,
        }
    }

    pub(crate) async fn query(&self, cmd: &Cmd) -> Result<Value, RedisWindowError> {
        let mut conn = self.conn.clone();
        Ok(cmd.query_async::<Value>(&mut conn).await?)
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

// By hand: the URL may hold a password, and is never shown.
impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("conn", &self.conn)
            .field("circuit", &self.circuit)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

// By hand: the source is kilobytes of Lua, the name says which.
impl std::fmt::Debug for Loadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loadable")
            .field("name", &self.name)
            .field("loaded", &self.loaded)
            .finish_non_exhaustive()
    }
}

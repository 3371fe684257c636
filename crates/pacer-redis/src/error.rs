//! The Redis store's errors, and how they map onto [`WindowError`].

use crate::circuit::Failure;
use pacer_core::{WindowError, WindowGeometry};
use redis::{ErrorKind, RedisError, ServerErrorKind};
use std::time::Duration;

/// What went wrong talking to Redis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisWindowError {
    /// A connection or server failure, as the `redis` crate reports it.
    #[error("redis: {0}")]
    Redis(#[from] RedisError),
    /// The function library could not be loaded (Redis older than 7.0, or no permission).
    #[error("could not load the {library} function library: {source}")]
    Load {
        /// The library's name.
        library: String,
        /// Redis's answer.
        #[source]
        source: RedisError,
    },
    /// A reply of an unexpected shape.
    #[error("unexpected reply from {function}: {reply}")]
    Reply {
        /// The function called.
        function: String,
        /// The reply, as text.
        reply: String,
    },
    /// A configuration value out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Redis was found unreachable moments ago: the call failed at once, without asking it
    /// again. One call asks again after `retry_in` (the backoff doubles on each failed try, up
    /// to [`RedisWindowStoreBuilder::down_backoff`](crate::RedisWindowStoreBuilder::down_backoff)'s
    /// maximum); its success ends the outage.
    #[error("Redis at {address} is down (not asked again for {retry_in:?})")]
    Down {
        /// The server's address (`host:port`, never a password), or `unknown` for a store made
        /// on a connection.
        address: String,
        /// How long until one call asks Redis again.
        retry_in: Duration,
    },
    /// Something answered at the address, but not as Redis (an HTTP server, another protocol):
    /// the URL points at the wrong place. Not an outage: every store-failure policy reports it.
    #[error("the server at {address} did not answer as Redis: is the URL right? ({source})")]
    NotRedis {
        /// The server's address (`host:port`, never a password), or `unknown` for a store made
        /// on a connection.
        address: String,
        /// What the `redis` crate made of the answer.
        #[source]
        source: RedisError,
    },
}

impl RedisWindowError {
    /// True when Redis could not be reached in time: the connection was refused, dropped or
    /// timed out, or the server is loading, read-only or failing over.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        match self {
            RedisWindowError::Redis(e) | RedisWindowError::Load { source: e, .. } => unavailable(e),
            RedisWindowError::Down { .. } => true,
            RedisWindowError::Reply { .. }
            | RedisWindowError::Config(_)
            | RedisWindowError::NotRedis { .. } => false,
        }
    }

    /// True for [`RedisWindowError::Down`]: the call failed at once because Redis was found
    /// unreachable moments ago.
    #[must_use]
    pub fn is_down(&self) -> bool {
        matches!(self, RedisWindowError::Down { .. })
    }

    /// True for [`RedisWindowError::NotRedis`]: the URL points at a server that is not Redis.
    #[must_use]
    pub fn is_not_redis(&self) -> bool {
        matches!(self, RedisWindowError::NotRedis { .. })
    }

    /// Whether this failure says Redis cannot be reached (the transport failed: refused, reset,
    /// timed out) or is not Redis, as the store's circuit counts failures. `None` when Redis
    /// answered.
    pub(crate) fn transport_failure(&self) -> Option<Failure> {
        match self {
            RedisWindowError::NotRedis { .. } => Some(Failure::NotRedis),
            RedisWindowError::Redis(e) | RedisWindowError::Load { source: e, .. } => {
                if e.kind() == ErrorKind::Parse {
                    Some(Failure::NotRedis)
                } else if e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                {
                    Some(Failure::Unreachable)
                } else {
                    None
                }
            }
            RedisWindowError::Down { .. }
            | RedisWindowError::Reply { .. }
            | RedisWindowError::Config(_) => None,
        }
    }

    /// A `redis` error that is a reply Redis could not have sent becomes
    /// [`RedisWindowError::NotRedis`] naming `address`.
    pub(crate) fn naming(self, address: &str) -> Self {
        match self {
            RedisWindowError::Redis(source) | RedisWindowError::Load { source, .. }
                if source.kind() == ErrorKind::Parse =>
            {
                RedisWindowError::NotRedis {
                    address: address.to_owned(),
                    source,
                }
            }
            other => other,
        }
    }

    /// The Lua library's own error code (`PACER_ARG`, `PACER_GEOMETRY`, `PACER_OVERFLOW`), if
    /// this is one.
    #[must_use]
    pub fn pacer_code(&self) -> Option<&str> {
        match self {
            RedisWindowError::Redis(e) => e.code().filter(|c| c.starts_with("PACER_")),
            _ => None,
        }
    }
}

fn unavailable(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(
            e.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ReadOnly
                )
        )
}

/// True when Redis answered that a function does not exist: after a restart, a `FUNCTION
/// FLUSH`, or on a server that never had the library.
pub(crate) fn is_missing_function(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
        || e.detail()
            .is_some_and(|d| d.to_ascii_lowercase().contains("function not found"))
}

/// Maps an error of one call with `geometry` onto the store-independent [`WindowError`].
pub(crate) fn window_error(e: RedisWindowError, geometry: Option<WindowGeometry>) -> WindowError {
    match (e.pacer_code(), geometry) {
        (Some("PACER_GEOMETRY"), Some(requested)) => WindowError::GeometryMismatch { requested },
        (Some("PACER_OVERFLOW"), _) => match overflow_numbers(&e) {
            Some((total, count, capacity)) => WindowError::Overflow {
                total,
                count,
                capacity,
            },
            None => WindowError::Backend { source: e.into() },
        },
        _ if e.is_unavailable() => WindowError::Unavailable { source: e.into() },
        _ => WindowError::Backend { source: e.into() },
    }
}

/// `total=.. count=.. capacity=..` from a `PACER_OVERFLOW` reply.
fn overflow_numbers(e: &RedisWindowError) -> Option<(u64, u64, u64)> {
    let RedisWindowError::Redis(e) = e else {
        return None;
    };
    let detail = e.detail()?;
    let field = |name: &str| -> Option<u64> {
        detail
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    Some((field("total")?, field("count")?, field("capacity")?))
}

impl From<RedisWindowError> for WindowError {
    fn from(e: RedisWindowError) -> Self {
        window_error(e, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::make_extension_error;

    fn server(code: &str, detail: &str) -> RedisWindowError {
        RedisWindowError::Redis(make_extension_error(
            code.to_owned(),
            Some(detail.to_owned()),
        ))
    }

    #[test]
    fn pacer_errors_map_to_window_errors() {
        let g = WindowGeometry::new(10, Duration::from_millis(1), 8).unwrap();
        let e = window_error(server("PACER_GEOMETRY", "key holds 3 bytes"), Some(g));
        assert!(matches!(e, WindowError::GeometryMismatch { requested } if requested == g));
        let e = window_error(
            server("PACER_OVERFLOW", "total=250 count=10 capacity=255"),
            Some(g),
        );
        assert!(matches!(
            e,
            WindowError::Overflow {
                total: 250,
                count: 10,
                capacity: 255
            }
        ));
        let e = window_error(server("PACER_ARG", "frames must be ..."), Some(g));
        assert!(matches!(e, WindowError::Backend { .. }));
    }

    #[test]
    fn io_failures_are_unavailable() {
        let io = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let e = RedisWindowError::from(io);
        assert!(e.is_unavailable());
        assert!(WindowError::from(e).is_unavailable());
        let timeout = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(RedisWindowError::from(timeout).is_unavailable());
        assert!(!RedisWindowError::Config("x".into()).is_unavailable());
    }

    #[test]
    fn down_is_unavailable_and_not_redis_is_not() {
        let down = RedisWindowError::Down {
            address: "127.0.0.1:1".into(),
            retry_in: Duration::from_millis(100),
        };
        assert!(down.is_down() && down.is_unavailable());
        assert!(WindowError::from(down).is_unavailable());
        let parse =
            RedisWindowError::from(RedisError::from((ErrorKind::Parse, "Parse error at 1")));
        assert_eq!(parse.transport_failure(), Some(Failure::NotRedis));
        let not = parse.naming("127.0.0.1:8080");
        assert!(not.is_not_redis() && !not.is_unavailable());
        assert!(
            not.to_string()
                .starts_with("the server at 127.0.0.1:8080 did not answer as Redis"),
            "{not}"
        );
        assert!(matches!(
            WindowError::from(not),
            WindowError::Backend { .. }
        ));
        let io = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(
            RedisWindowError::from(io).transport_failure(),
            Some(Failure::Unreachable)
        );
        let answer = make_extension_error("PACER_ARG".into(), Some("bad".into()));
        assert_eq!(RedisWindowError::from(answer).transport_failure(), None);
    }

    #[test]
    fn a_missing_function_is_recognised() {
        let e = make_extension_error("ERR".into(), Some("Function not found".into()));
        assert!(is_missing_function(&e));
        let e = make_extension_error("ERR".into(), Some("something else".into()));
        assert!(!is_missing_function(&e));
    }
}

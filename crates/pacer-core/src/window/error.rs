//! What can go wrong with a window operation, and the checks every store makes first.

use super::WindowGeometry;
use std::error::Error as StdError;

/// A boxed error from a store's backend (the Redis store's `RedisWindowError`, for instance);
/// downcast it to see the details.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// A window operation failed. "Not yet" is not an error: it is a result whose ETA is in the
/// future. The variants sort into three groups a caller treats differently:
///
/// * [`WindowError::Never`]: this request can never pass (reject it, don't wait);
/// * configuration mistakes ([`WindowError::LimitAboveCapacity`], [`WindowError::Overflow`],
///   [`WindowError::GeometryMismatch`]): fix the configuration; [`WindowError::is_configuration`];
/// * the store failed ([`WindowError::Unavailable`], [`WindowError::Backend`]): a policy decides
///   whether to go on without the limit, refuse, or use a fallback store;
///   [`WindowError::is_unavailable`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WindowError {
    /// `count` is above `limit`: it can never fit in the window.
    #[error("count {count} is above the limit {limit}: it can never fit in the window")]
    Never {
        /// Events asked for.
        count: u64,
        /// The limit of the call.
        limit: u64,
    },
    /// `limit` is above the largest total the geometry's counters can hold.
    #[error("limit {limit} is above the capacity {capacity} of the window's counters")]
    LimitAboveCapacity {
        /// The limit of the call.
        limit: u64,
        /// `2^width − 1`.
        capacity: u64,
    },
    /// Recording `count` more events (without a check) would take the window total above the
    /// counter capacity. Nothing was recorded: the total is never wrapped or lost.
    #[error(
        "recording {count} events on a window holding {total} would exceed the counter capacity {capacity}; nothing was recorded"
    )]
    Overflow {
        /// The window total before the call.
        total: u64,
        /// Events asked for.
        count: u64,
        /// `2^width − 1`.
        capacity: u64,
    },
    /// The key holds a window of another geometry. Nothing was written. Clear the key (its old
    /// data cannot be read with the new geometry) or wait until it expires.
    #[error("the key holds a window of another geometry than the requested {requested:?}")]
    GeometryMismatch {
        /// The geometry of the call.
        requested: WindowGeometry,
    },
    /// The store could not be reached in time (connection refused, dropped, timed out).
    #[error("the window store is unavailable: {source}")]
    Unavailable {
        /// The backend's error.
        #[source]
        source: BoxError,
    },
    /// The store answered with an error or an unexpected reply.
    #[error("the window store failed: {source}")]
    Backend {
        /// The backend's error.
        #[source]
        source: BoxError,
    },
}

impl WindowError {
    /// True for [`WindowError::Never`]: the request can never pass.
    #[must_use]
    pub fn is_never(&self) -> bool {
        matches!(self, WindowError::Never { .. })
    }

    /// True when the store could not be reached: the case for fail-open, fail-closed or a
    /// fallback store.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        matches!(self, WindowError::Unavailable { .. })
    }

    /// True for a mistake in the caller's configuration (limit, width, geometry).
    #[must_use]
    pub fn is_configuration(&self) -> bool {
        matches!(
            self,
            WindowError::LimitAboveCapacity { .. }
                | WindowError::Overflow { .. }
                | WindowError::GeometryMismatch { .. }
        )
    }
}

/// The checks every store makes before a limited call (try, fill, eta): `limit` within the
/// counters' capacity, then `count` within `limit`.
///
/// # Errors
///
/// [`WindowError::LimitAboveCapacity`], then [`WindowError::Never`].
pub fn check_limited_call(
    geometry: &WindowGeometry,
    limit: u64,
    count: u64,
) -> Result<(), WindowError> {
    check_limit(geometry, limit)?;
    if count > limit {
        return Err(WindowError::Never { count, limit });
    }
    Ok(())
}

/// `limit` within the counters' capacity.
///
/// # Errors
///
/// [`WindowError::LimitAboveCapacity`].
pub fn check_limit(geometry: &WindowGeometry, limit: u64) -> Result<(), WindowError> {
    if limit > geometry.capacity() {
        return Err(WindowError::LimitAboveCapacity {
            limit,
            capacity: geometry.capacity(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn limited_calls_check_capacity_then_count() {
        let g = WindowGeometry::new(10, Duration::from_millis(1), 4).unwrap();
        assert!(check_limited_call(&g, 15, 15).is_ok());
        assert!(check_limited_call(&g, 0, 0).is_ok());
        let e = check_limited_call(&g, 16, 20).unwrap_err();
        assert!(matches!(
            e,
            WindowError::LimitAboveCapacity {
                limit: 16,
                capacity: 15
            }
        ));
        assert!(e.is_configuration());
        let e = check_limited_call(&g, 10, 11).unwrap_err();
        assert!(e.is_never() && !e.is_unavailable() && !e.is_configuration());
        assert_eq!(
            e.to_string(),
            "count 11 is above the limit 10: it can never fit in the window"
        );
    }

    #[test]
    fn unavailable_keeps_its_source() {
        let e = WindowError::Unavailable {
            source: "connection refused".into(),
        };
        assert!(e.is_unavailable());
        assert_eq!(
            StdError::source(&e).map(ToString::to_string).as_deref(),
            Some("connection refused")
        );
    }
}

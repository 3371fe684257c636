//! Errors the middleware returns, wrapped in `reqwest_middleware::Error::Middleware`.

use crate::Paced;
pub use pacer_core::Rejection;
use std::time::Duration;

/// The middleware's errors. Reach them from a `reqwest_middleware::Error` with
/// [`PacerErrorExt`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PacerError {
    /// The request was refused before it was sent.
    #[error("{0}")]
    Rejected(Rejection),
    /// A request asked for a limiter the middleware does not have.
    #[error("no limiter named {0:?}")]
    UnknownLimiter(String),
    /// The request's [`TotalTimeout`](crate::TotalTimeout) ended while it was being sent: the send
    /// was abandoned.
    #[error(
        "request to {} through limiter {:?} timed out: TotalTimeout of {:.3} s",
        .paced.endpoint(), .paced.limiter(), .timeout.as_secs_f64()
    )]
    TimedOut {
        /// What Pacer did with the request until then.
        paced: Paced,
        /// The request's `TotalTimeout`.
        timeout: Duration,
    },
    /// A strict window's store failed and the limiter fails closed.
    #[error("strict window store failed for limiter {limiter:?}: {message}")]
    WindowStore {
        /// The limiter.
        limiter: String,
        /// What the store said.
        message: String,
    },
}

impl PacerError {
    /// True if the request was refused by a limit before it was sent.
    #[must_use]
    pub fn is_rejected(&self) -> bool {
        matches!(self, PacerError::Rejected(_))
    }

    /// True if the request's [`TotalTimeout`](crate::TotalTimeout) ended during a send.
    #[must_use]
    pub fn is_timed_out(&self) -> bool {
        matches!(self, PacerError::TimedOut { .. })
    }

    /// The refusal, if that is what this is.
    #[must_use]
    pub fn rejection(&self) -> Option<&Rejection> {
        match self {
            PacerError::Rejected(r) => Some(r),
            _ => None,
        }
    }
}

/// Finds Pacer's error inside a `reqwest_middleware::Error`.
///
/// ```no_run
/// # async fn run(client: reqwest_middleware::ClientWithMiddleware) {
/// use reqwest_pacer::PacerErrorExt;
/// match client.get("https://api.example.com/").send().await {
///     Ok(response) => { /* … */ }
///     Err(e) if e.is_rejected() => {
///         let r = e.rejection().unwrap();
///         eprintln!("not sent: {r} (would wait {:?})", r.needed_wait());
///     }
///     Err(e) => eprintln!("failed: {e}"),
/// }
/// # }
/// ```
pub trait PacerErrorExt {
    /// The Pacer error inside, if any.
    fn pacer_error(&self) -> Option<&PacerError>;

    /// True if Pacer refused the request before it was sent.
    fn is_rejected(&self) -> bool {
        self.pacer_error().is_some_and(PacerError::is_rejected)
    }

    /// Pacer's refusal, if that is what this error is.
    fn rejection(&self) -> Option<&Rejection> {
        self.pacer_error().and_then(PacerError::rejection)
    }
}

impl PacerErrorExt for reqwest_middleware::Error {
    fn pacer_error(&self) -> Option<&PacerError> {
        match self {
            reqwest_middleware::Error::Middleware(e) => e.downcast_ref::<PacerError>(),
            reqwest_middleware::Error::Reqwest(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pacer_core::{RejectReason, WaitCause};
    use std::sync::Arc;

    fn paced(limiter: &str, endpoint: &str) -> Paced {
        Paced::new(&Arc::from(limiter), &Arc::from(endpoint))
    }

    #[test]
    fn a_rejection_survives_the_middleware_error_wrapping() {
        let r = Rejection::new(
            paced("orders", "https://api.test:443"),
            RejectReason::WaitTooLong {
                cause: WaitCause::ServerStop,
                needed: Duration::from_secs(40),
                max_wait: Duration::from_secs(30),
            },
        );
        let e = reqwest_middleware::Error::middleware(PacerError::Rejected(r.clone()));
        assert!(e.is_rejected());
        assert_eq!(e.rejection(), Some(&r));
        assert_eq!(r.kind(), "wait_too_long:server_stop");
        assert_eq!(
            e.to_string(),
            "request to https://api.test:443 refused by limiter \"orders\": it would wait 40.000 s \
             (server_stop), longer than MaxWait of 30.000 s"
        );
    }

    #[test]
    fn a_cost_above_the_limit_names_the_cost_and_the_most_it_may_take() {
        let r = Rejection::new(
            paced("openai", "https://api.test:443"),
            RejectReason::CostAboveLimit {
                cost: u64::MAX,
                max: 46_500,
            },
        );
        assert_eq!(r.kind(), "cost_above_limit");
        assert_eq!(r.needed_wait(), None);
        assert_eq!(
            r.to_string(),
            "request to https://api.test:443 refused by limiter \"openai\": it costs \
             18446744073709551615 units, more than the 46500 one request may cost \
             (MaxUnitsPerMinute × (Burst + MaxWait), this process's share)"
        );
    }
}

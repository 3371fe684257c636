//! Errors the middleware returns, wrapped in `reqwest_middleware::Error::Middleware`.

use crate::Paced;
use pacer_core::RejectReason;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A request refused before it was sent; nothing reached the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Boxed: it would make every `Result` of this crate's errors larger.
    pub(crate) paced: Box<Paced>,
    pub(crate) reason: RejectReason,
}

impl Rejection {
    pub(crate) fn new(limiter: &Arc<str>, endpoint: &Arc<str>, reason: RejectReason) -> Self {
        Rejection {
            paced: Box::new(Paced::new(limiter, endpoint)),
            reason,
        }
    }

    /// The limiter that refused it.
    #[must_use]
    pub fn limiter(&self) -> &str {
        self.paced.limiter()
    }

    /// The request's endpoint key.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        self.paced.endpoint()
    }

    /// What Pacer did with the request until it refused it: how long it waited, the rate then
    /// (its attempts are 0: it was not sent).
    #[must_use]
    pub fn paced(&self) -> &Paced {
        &self.paced
    }

    /// Why.
    #[must_use]
    pub fn reason(&self) -> &RejectReason {
        &self.reason
    }

    /// The wait the request would have needed, when a wait refused it.
    #[must_use]
    pub fn needed_wait(&self) -> Option<Duration> {
        self.reason.needed_wait()
    }

    /// A short, stable name: `queue_full`, `above_window_limit`, `above_quota_limit`,
    /// `cost_above_limit`, `past_timeout`, or `wait_too_long` with the cause
    /// (`wait_too_long:server_stop`).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        self.reason.kind()
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request to {} refused by limiter {:?}: {}",
            self.endpoint(),
            self.limiter(),
            self.reason
        )
    }
}

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
    use pacer_core::WaitCause;

    #[test]
    fn a_rejection_survives_the_middleware_error_wrapping() {
        let r = Rejection::new(
            &Arc::from("orders"),
            &Arc::from("https://api.test:443"),
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
            &Arc::from("openai"),
            &Arc::from("https://api.test:443"),
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

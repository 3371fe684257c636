//! Why a request was refused before it was sent: one reason for every driver.

use crate::{CostAboveLimit, Paced, QuotaUnit, WaitCause};
use std::fmt;
use std::time::Duration;

/// A request refused before it was sent, as every driver reports it: why, and what Pacer did
/// with it until then (the limiter, the endpoint key, the time it waited, the rate; its
/// attempts are 0 when it was never sent). The reqwest middleware returns it in
/// `PacerError::Rejected`; the tower layer's error downcasts to it.
///
/// ```
/// use pacer_core::{Paced, RejectReason, Rejection, WaitCause};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let paced = Paced::new(&Arc::from("orders"), &Arc::from("https://api.test:443"))
///     .with_waited(Duration::from_secs(1));
/// let reason = RejectReason::WaitTooLong {
///     cause: WaitCause::ServerStop,
///     needed: Duration::from_secs(40),
///     max_wait: Duration::from_secs(30),
/// };
/// let r = Rejection::new(paced, reason);
/// assert_eq!((r.limiter(), r.endpoint()), ("orders", "https://api.test:443"));
/// assert_eq!(r.kind(), "wait_too_long:server_stop");
/// assert_eq!(r.needed_wait(), Some(Duration::from_secs(40)));
/// assert_eq!(r.paced().waited(), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Boxed: it would make every `Result` that holds one larger.
    paced: Box<Paced>,
    reason: RejectReason,
}

impl Rejection {
    /// A refusal for `reason`, of a request that `paced` describes.
    #[must_use]
    pub fn new(paced: Paced, reason: RejectReason) -> Self {
        Rejection {
            paced: Box::new(paced),
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

    /// What Pacer did with the request until it refused it: how long it waited, the rate then,
    /// the attempts sent before (0 unless a retry was refused).
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

impl std::error::Error for Rejection {}

/// Why a request was refused before it was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectReason {
    /// `QueueLimit` requests were already waiting.
    QueueFull {
        /// The limit.
        limit: usize,
    },
    /// The request costs more than a strict window admits in its whole length: it could never
    /// go.
    AboveWindowLimit {
        /// The window.
        window: String,
        /// Its limit.
        limit: u64,
        /// The request's units.
        units: u64,
    },
    /// The request costs more tokens (or other units) than a quota the server reported ever
    /// holds: it could never go.
    AboveQuotaLimit {
        /// The quota's policy name, if the server named it.
        policy: Option<String>,
        /// What the quota counts.
        unit: QuotaUnit,
        /// Its limit.
        limit: u64,
        /// The request's cost in that unit.
        cost: u64,
    },
    /// The request costs more than the adaptive limiter could ever repay within `MaxWait`:
    /// more than its share of `MaxUnitsPerMinute × (Burst + MaxWait)`
    /// ([`Limiter::max_cost`](crate::Limiter::max_cost)). It could never go; sent, it
    /// would have blocked its endpoint for longer than any later request may wait.
    CostAboveLimit {
        /// The request's cost in units.
        cost: u64,
        /// The most one request may cost.
        max: u64,
    },
    /// The request would have waited longer than `MaxWait`.
    WaitTooLong {
        /// What it would have waited for.
        cause: WaitCause,
        /// The wait it would have needed in all, from the start of its wait.
        needed: Duration,
        /// `MaxWait` (the request's own `MaxWait` (the middleware's `MaxWait` extension), if it has one).
        max_wait: Duration,
    },
    /// The request would still have been waiting when its
    /// `TotalTimeout` ended.
    PastTimeout {
        /// What it would have waited for.
        cause: WaitCause,
        /// The request's `TotalTimeout`.
        timeout: Duration,
    },
}

impl RejectReason {
    /// The wait the request would have needed, when that is why it was refused.
    #[must_use]
    pub fn needed_wait(&self) -> Option<Duration> {
        match self {
            RejectReason::WaitTooLong { needed, .. } => Some(*needed),
            _ => None,
        }
    }

    /// A short, stable name for logs and metric labels: `queue_full`, `above_window_limit`,
    /// `above_quota_limit`, `cost_above_limit`, `past_timeout`, or `wait_too_long:CAUSE`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            RejectReason::QueueFull { .. } => "queue_full",
            RejectReason::AboveWindowLimit { .. } => "above_window_limit",
            RejectReason::AboveQuotaLimit { .. } => "above_quota_limit",
            RejectReason::CostAboveLimit { .. } => "cost_above_limit",
            RejectReason::PastTimeout { .. } => "past_timeout",
            RejectReason::WaitTooLong { cause, .. } => match cause {
                WaitCause::ServerStop => "wait_too_long:server_stop",
                WaitCause::Window => "wait_too_long:window",
                WaitCause::Throttling => "wait_too_long:throttling",
                WaitCause::Queue => "wait_too_long:queue",
                WaitCause::UnitQuota => "wait_too_long:unit_quota",
                WaitCause::Concurrency => "wait_too_long:concurrency",
            },
        }
    }

    /// The reason a refusal of the adaptive limiter gives for a request's whole wait, after
    /// `waited` of its other waits within a budget of `max_wait`: the queue's wait counts from
    /// the start of the request's, against its whole budget. Any other reason is unchanged.
    ///
    /// ```
    /// use pacer_core::{RejectReason, WaitCause};
    /// use std::time::Duration;
    ///
    /// // The limiter had 25 s of the 30 left and would have needed 20.
    /// let queue = RejectReason::WaitTooLong {
    ///     cause: WaitCause::Queue,
    ///     needed: Duration::from_secs(20),
    ///     max_wait: Duration::from_secs(25),
    /// };
    /// let reason = RejectReason::from_limiter(&queue, Duration::from_secs(15), Duration::from_secs(30));
    /// assert_eq!(
    ///     reason,
    ///     RejectReason::WaitTooLong {
    ///         cause: WaitCause::Queue,
    ///         needed: Duration::from_secs(35),
    ///         max_wait: Duration::from_secs(30),
    ///     }
    /// );
    /// ```
    #[must_use]
    pub fn from_limiter(r: &RejectReason, waited: Duration, max_wait: Duration) -> RejectReason {
        match r {
            RejectReason::WaitTooLong { cause, needed, .. } => RejectReason::WaitTooLong {
                cause: *cause,
                needed: waited + *needed,
                max_wait,
            },
            other => other.clone(),
        }
    }
}

impl From<CostAboveLimit> for RejectReason {
    /// A request whose tokens are above a quota's limit.
    fn from(e: CostAboveLimit) -> Self {
        RejectReason::AboveQuotaLimit {
            policy: e.policy.map(String::from),
            unit: e.unit,
            limit: e.limit,
            cost: e.cost,
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::QueueFull { limit } => {
                write!(f, "the queue is full ({limit} requests are waiting)")
            }
            RejectReason::AboveWindowLimit {
                window,
                limit,
                units,
            } => write!(
                f,
                "it costs {units} units, more than window {window:?} ever admits ({limit})"
            ),
            RejectReason::AboveQuotaLimit {
                policy,
                unit,
                limit,
                cost,
            } => write!(
                f,
                "it costs {cost} {unit:?}, more than quota {:?} ever holds ({limit})",
                policy.as_deref().unwrap_or("")
            ),
            RejectReason::CostAboveLimit { cost, max } => write!(
                f,
                "it costs {cost} units, more than the {max} one request may cost \
                 (MaxUnitsPerMinute × (Burst + MaxWait), this process's share)"
            ),
            RejectReason::WaitTooLong {
                cause,
                needed,
                max_wait,
            } => write!(
                f,
                "it would wait {:.3} s ({}), longer than MaxWait of {:.3} s",
                needed.as_secs_f64(),
                cause.as_str(),
                max_wait.as_secs_f64()
            ),
            RejectReason::PastTimeout { cause, timeout } => write!(
                f,
                "it would still wait ({}) when its TotalTimeout of {:.3} s ends",
                cause.as_str(),
                timeout.as_secs_f64()
            ),
        }
    }
}

impl std::error::Error for RejectReason {}

/// What a window says of a request's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowAnswer {
    /// They fit (and, from [`WindowLimit::take`](crate::WindowLimit::take), were taken).
    Go,
    /// They fit after this wait (nothing taken).
    Wait(Duration),
}

/// Why a request was not sent: refused for a reason ([`RejectReason`]), or a strict window's
/// store failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Refused: it would wait too long, could never fit, or the queue is full.
    Rejected(RejectReason),
    /// A strict window's store failed, and the window's [`StoreFailure`](crate::StoreFailure) does not send without
    /// it.
    Store {
        /// What failed, naming the window.
        message: String,
    },
}

impl From<RejectReason> for Refusal {
    fn from(reason: RejectReason) -> Self {
        Refusal::Rejected(reason)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Rejected(reason) => write!(f, "refused: {reason}"),
            Refusal::Store { message } => write!(f, "strict window store: {message}"),
        }
    }
}

impl std::error::Error for Refusal {}

//! What the limiter answers, and what it is told about responses.

use super::Ticket;
use crate::{RejectReason, Timestamp};
use std::time::Duration;

/// The answer to a request for units that was not refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// The units were taken; send now.
    Now,
    /// The request waits in the queue with this ticket. Call
    /// [`LimiterCore::pop_ready`](super::LimiterCore::pop_ready) when
    /// [`LimiterCore::next_grant_at`](super::LimiterCore::next_grant_at) comes.
    Queued {
        /// The request's place in the queue.
        ticket: Ticket,
        /// When it would get its units if the rate stayed as it is.
        estimated_at: Timestamp,
    },
}

/// How a response bears on the rate: the output of a classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Signal {
    /// The server accepted the request: the controller may raise the rate.
    Success,
    /// The server refused it for its rate (429, 503 with Retry-After, …): cut and pause.
    Throttled {
        /// The server's `Retry-After`, if it sent one.
        retry_after: Option<Duration>,
    },
    /// Neither (other errors, a network failure): counted in the send rate only.
    Neutral,
}

/// What the limiter is told after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feedback {
    /// The units the request was charged.
    pub units: u64,
    /// When the request was sent (on the limiter's clock); a throttle of a request sent before
    /// the last cut does not cut again.
    pub sent_at: Timestamp,
    /// What the response means.
    pub signal: Signal,
}

/// Why the rate changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateChangeReason {
    /// A throttle cut it.
    Throttled,
    /// The controller raised it after a success.
    Increased,
    /// The controller lowered it after a success (a controller of one's own may).
    Lowered,
    /// The options or the instance count changed.
    Reconfigured,
    /// The server's rate-limit numbers set it ([`LimiterCore::follow_server`](super::LimiterCore::follow_server)),
    /// or their going stale handed it back to the controller.
    Server,
    /// The first throttle signal ended the unlimited start: the rate starts at the measured
    /// send rate ([`LimiterOptions::initial_units_per_minute`](super::LimiterOptions::initial_units_per_minute) unset).
    Measured,
    /// A fleet set this process's share of its rate ([`LimiterCore::set_share`](super::LimiterCore::set_share)).
    Fleet,
}

impl RateChangeReason {
    /// A short, stable name for logs: `throttled`, `increased`, `lowered`, `reconfigured`,
    /// `server`, `measured`, `fleet`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RateChangeReason::Throttled => "throttled",
            RateChangeReason::Increased => "increased",
            RateChangeReason::Lowered => "lowered",
            RateChangeReason::Reconfigured => "reconfigured",
            RateChangeReason::Server => "server",
            RateChangeReason::Measured => "measured",
            RateChangeReason::Fleet => "fleet",
        }
    }
}

/// A change of the rate, in units per minute for this process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateChange {
    /// The rate before.
    pub previous: f64,
    /// The rate after.
    pub rate: f64,
    /// Why.
    pub reason: RateChangeReason,
}

/// What a call that changes the limiter did, for the shell to log and act on.
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct Changes {
    /// The rate changed.
    pub rate: Option<RateChange>,
    /// A Retry-After pause started or was extended until this time.
    pub paused_until: Option<Timestamp>,
    /// Waiting requests that can no longer get their units within their wait, refused now.
    pub rejected: Vec<(Ticket, RejectReason)>,
    /// The call ended the unlimited start: the limiter holds requests to a rate from now on
    /// ([`LimiterCore::is_limiting`](super::LimiterCore::is_limiting)). `rate` then says the
    /// rate it starts from (its `previous` is the maximum it ran at unlimited).
    pub started_limiting: bool,
}

impl Changes {
    /// True when nothing changed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rate.is_none()
            && self.paused_until.is_none()
            && self.rejected.is_empty()
            && !self.started_limiting
    }

    /// The rate moved from `previous` to `rate` for `reason`, in the same call as any change
    /// already noted: one change from the first `previous` to this rate.
    pub(crate) fn rate_moved(&mut self, previous: f64, rate: f64, reason: RateChangeReason) {
        let previous = self.rate.map_or(previous, |first| first.previous);
        self.rate = Some(RateChange {
            previous,
            rate,
            reason,
        });
    }

    /// Adds what a later call changed: one rate change from the first `previous` to the last
    /// rate (for the last reason), the later pause, every refused request.
    pub fn merge(&mut self, later: Changes) {
        if later.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = later;
            return;
        }
        self.rate = match (self.rate, later.rate) {
            (Some(first), Some(last)) => Some(RateChange {
                previous: first.previous,
                ..last
            }),
            (first, last) => last.or(first),
        };
        self.paused_until = later.paused_until.or(self.paused_until);
        self.rejected.extend(later.rejected);
        self.started_limiting |= later.started_limiting;
    }
}

//! What a mode is to the engine: a way to build, for each client instance, the thing that decides
//! when its requests go and learns from their responses.
//!
//! The engine knows only these two traits. A new mode (the `headers` mode, a `pacer` controller,
//! a limiter loaded with `--config FILE --limiter NAME`) is a new [`Mode`] and, if it needs one, a
//! new [`Client`]; the engine does not change.

use super::{ExchangeClient, StoreAnswer};
use crate::metrics::Learned;
use crate::model::{ModelHeaders, Verdict};
use pacer_core::{Acquired, Changes, FleetCall, LimiterOptions, RejectReason, Ticket, Timestamp};
use std::fmt;
use std::time::Duration;

/// The `retry_after` a client is given for a 429 that carried no `Retry-After`: one second, the
/// first backoff of the usual retry loops (reqwest-retry's and tenacity's defaults start there).
pub const NO_RETRY_AFTER_DELAY: Duration = Duration::from_secs(1);

/// Why a mode cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModeError {
    /// No mode has this name.
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The mode's limiter options are invalid.
    InvalidOptions {
        /// The mode's name.
        name: String,
        /// The validation message, naming each option.
        message: String,
    },
}

impl fmt::Display for ModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModeError::Unknown { name } => write!(
                f,
                "unknown mode {name:?}: expected one of {}",
                super::MODE_NAMES.join(", ")
            ),
            ModeError::InvalidOptions { name, message } => {
                write!(f, "mode {name:?}: invalid limiter options: {message}")
            }
        }
    }
}

impl std::error::Error for ModeError {}

/// What a mode gets to build the client of one instance.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientSetup {
    /// The instance's number, from 0.
    pub instance: u32,
    /// The limiter options of the run ([`SimOptions::limiter`](crate::SimOptions::limiter)), with
    /// `InstanceCount` set to the number of instances when this one starts.
    pub limiter: LimiterOptions,
    /// When the instance starts.
    pub now: Timestamp,
    /// The most attempts a request is sent in ([`SimOptions::max_attempts`](crate::SimOptions::max_attempts)).
    pub max_attempts: std::num::NonZeroU32,
}

/// A response as the client sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The units the request was charged.
    pub units: u64,
    /// When it was sent.
    pub sent_at: Timestamp,
    /// What the server said.
    pub verdict: Verdict,
    /// The rate-limit header values, when the mode asked for them
    /// ([`Mode::wants_headers`]).
    pub headers: Option<ModelHeaders>,
}

/// A comparison mode.
pub trait Mode: fmt::Debug + Send + Sync {
    /// The name on the command line and in the output.
    fn name(&self) -> &str;

    /// Builds the client of one instance.
    fn client(&self, setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError>;

    /// Whether the model API should send rate-limit headers with every response to this mode's
    /// clients (the `headers` mode's hook). Default false.
    fn wants_headers(&self) -> bool {
        false
    }
}

/// One instance's client side, driven by the engine on virtual time. The methods mirror
/// [`pacer_core::LimiterCore`], which a limiter client simply forwards to.
pub trait Client: fmt::Debug {
    /// The client as the engine's exchanges, when it runs them (the limiter modes): the
    /// simulation then hands it each attempt and answer ([`ExchangeClient`]) and calls none of
    /// the queue's methods below. Default `None`.
    fn exchanges(&mut self) -> Option<&mut ExchangeClient> {
        None
    }

    /// What it learned of the server's limiter. Default: nothing.
    fn learned(&self) -> Learned {
        Learned::default()
    }

    /// Asks for the units of one attempt: go now, wait in the queue with a ticket, or refused.
    /// Default: go now (no limiter).
    fn acquire(&mut self, units: u64, now: Timestamp) -> Result<Acquired, RejectReason> {
        let _ = (units, now);
        Ok(Acquired::Now)
    }

    /// What the client's state asks of an attempt before it queues: a wait (zero: none), or a
    /// refusal when the wait is longer than it may wait. Default: no wait. The `headers` mode's
    /// is the engine's ([`pacer_core::Rules::hold`]): the server's stop and the proactive delay.
    fn hold(&mut self, now: Timestamp) -> Result<Duration, RejectReason> {
        let _ = now;
        Ok(Duration::ZERO)
    }

    /// An attempt was sent at `now`. Default: nothing.
    fn sent(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// Grants the first waiting attempt if its units are there (and a slot under
    /// `MaxConcurrent`).
    /// Default: none (no queue).
    fn pop_ready(&mut self, now: Timestamp) -> Option<(Ticket, Duration)> {
        let _ = now;
        None
    }

    /// When to look at the queue again: when the first waiting attempt will get its units at the
    /// current rate, or, under `MaxConcurrent`, the earliest time a waiting attempt may wait
    /// until ([`refuse_expired`](Self::refuse_expired)).
    /// Default: never (no queue).
    fn next_grant_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        let _ = now;
        None
    }

    /// Refuses the waiting attempts whose time to wait ended while a cap on requests in flight
    /// held the queue ([`pacer_core::LimiterCore::refuse_expired`]). Default: none.
    fn refuse_expired(&mut self, now: Timestamp) -> Changes {
        let _ = now;
        Changes::default()
    }

    /// A granted attempt was never sent: its slot among the requests in flight is given back
    /// ([`pacer_core::LimiterCore::landed`]). Default: nothing.
    fn not_sent(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// Learns from a response; waiting attempts it can no longer serve come back in
    /// [`Changes::rejected`].
    fn on_response(&mut self, response: &Response, now: Timestamp) -> Changes;

    /// How long to wait before a throttled request's next attempt asks for units again. A
    /// limiter returns zero: its own Retry-After pause holds the attempt back, as the middleware
    /// goes straight back to waiting. A client without a limiter sleeps the `Retry-After`.
    /// A 429 without one (the leaky bucket's) is given [`NO_RETRY_AFTER_DELAY`].
    fn retry_delay(&self, retry_after: Duration) -> Duration;

    /// The number of instances changed (scale-out).
    fn set_instance_count(&mut self, count: u32, now: Timestamp) -> Changes;

    /// The rate the client allows, in units per minute for this instance; `None` without a
    /// limiter. Summed over instances for the plot.
    fn rate(&self) -> Option<f64>;

    /// When the client wants [`wake`](Self::wake) called: its fleet member's next store call
    /// (the `fleet` mode). Default never.
    fn next_wake_at(&self) -> Option<Timestamp> {
        None
    }

    /// The draw an attempt of `units` makes from its fleet's pool at `now`, when the fleet
    /// draws from one ([`pacer_core::FleetMember::pool`]). Default none.
    fn pool(&mut self, units: u64, now: Timestamp) -> Option<pacer_core::DrawRequest> {
        let _ = (units, now);
        None
    }

    /// The store's answer to a [`pool`](Self::pool) draw, back at `now`
    /// ([`pacer_core::FleetMember::on_draw`]), and what changed in the client's limiter.
    /// Default: unanswered, nothing changed.
    fn on_draw(
        &mut self,
        answer: Result<&pacer_core::DrawReply, &pacer_core::FleetError>,
        now: Timestamp,
    ) -> (pacer_core::Drawn, Changes) {
        let _ = (answer, now);
        (pacer_core::Drawn::Unanswered, Changes::default())
    }

    /// Woken at `now`: what changed, and the store call to make, if any (the engine delivers
    /// it after the store's one-way latency). Default: nothing.
    fn wake(&mut self, now: Timestamp) -> (Changes, Option<FleetCall>) {
        let _ = now;
        (Changes::default(), None)
    }

    /// What its limiter learnt, for a process that replaces it (`--restore`); `None` without
    /// a limiter, or before it limits. Default `None`.
    fn memory(&self) -> Option<pacer_core::LimiterMemory> {
        None
    }

    /// Starts from what the client it replaces learnt ([`pacer_core::LimiterCore::recall`]).
    /// Default: nothing.
    fn recall(&mut self, memory: &pacer_core::LimiterMemory, now: Timestamp) -> Changes {
        let _ = (memory, now);
        Changes::default()
    }

    /// The store tells the client of another member's urgent commit. Default: nothing.
    fn on_news(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// The store's answer to the call sent at `sent` reaches the client at `now` (`None`: no
    /// answer came, the store was down): what changed, and the next call, if any.
    fn on_store(
        &mut self,
        answer: Option<StoreAnswer>,
        sent: Timestamp,
        now: Timestamp,
    ) -> (Changes, Option<FleetCall>) {
        let _ = (answer, sent, now);
        (Changes::default(), None)
    }
}

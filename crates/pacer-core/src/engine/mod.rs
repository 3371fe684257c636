//! The request engine: what happens to one request, from the decision before its send to the
//! reading of its response, for every driver (the `reqwest` middleware, the simulator).
//!
//! Two calls carry a request through it:
//!
//! - **before the send**, [`Engine::begin_wait`]: every wait of an [`Attempt`] in one order and
//!   one `MaxWait` budget, as a state machine ([`AttemptWait`]) that says what to do next
//!   ([`WaitStep`]: sleep until a time, ask a strict window's store, queue in the limiter, go, or
//!   be refused) and is handed the time and each answer back; after [`Engine::go_now`], which
//!   lets an attempt that nothing holds go at once without building that wait. Its steps can be
//!   called alone: [`Engine::hold`] (how long the endpoint's server state asks the request to
//!   wait, and why: a server-ordered stop, or the proactive algorithm's delay),
//!   [`Engine::tokens_wait`] / [`Engine::tokens_take`] for quotas in other units (tokens);
//! - **after the response**, [`Rules::read`] (pure: status, headers, what the body said → a
//!   [`Reading`]) and [`Engine::after`], which applies the reading to the endpoint (its adaptive
//!   limiter, the server's numbers, its budgets) and says whether the request may be sent
//!   again.
//!
//! The engine takes the time as an argument and never sleeps, reads no clock, calls no store and
//! spawns nothing: the driver does what it says ([`crate::drive`] holds what the async drivers
//! share: the pump [`crate::drive::wait`], the strict windows' stores, the body reader). The
//! adaptive limiter's queue is the endpoint's [`Limiter`], which a driver awaits (its state
//! machine, [`crate::LimiterCore`], is as free of IO as the rest).
//!
//! Everything known of one endpoint lives in one [`Endpoint`], in one store with one bounded
//! eviction policy ([`Engine::endpoint`]).
//!
//! ```
//! use http::{HeaderMap, StatusCode};
//! use pacer_core::{Engine, Feedback, Limiter, LimiterOptions, Rules, Signal, Timestamp};
//! use std::time::{Duration, SystemTime};
//!
//! let engine = Engine::new(1_000, Duration::from_secs(3600));
//! let rules = Rules::default();
//! let t0 = Timestamp::ZERO;
//! let endpoint = engine.endpoint("https://api.example.com", t0, || {
//!     Limiter::new(LimiterOptions::default()).unwrap()
//! }, |_| {});
//!
//! // Before the send: nothing is known of the server, so nothing holds the request.
//! assert!(engine.hold(&rules, &endpoint, t0, Duration::from_secs(60), false).wait.is_zero());
//!
//! // The server answers 429 with `Retry-After: 7`.
//! let mut headers = HeaderMap::new();
//! headers.insert("retry-after", "7".parse().unwrap());
//! let reading = rules.read(StatusCode::TOO_MANY_REQUESTS, &headers, None, SystemTime::now(),
//!     Duration::from_secs(60));
//! assert_eq!(reading.signal(), Signal::Throttled { retry_after: Some(Duration::from_secs(7)) });
//! let after = engine.after(&endpoint, reading, 1, t0, t0);
//! assert!(after.retry, "a throttle may be sent again");
//!
//! // The next request waits for the server's stop.
//! let hold = engine.hold(&rules, &endpoint, t0, Duration::from_secs(60), false);
//! assert_eq!(hold.wait, Duration::from_secs(7));
//! ```

mod attempt;
mod buckets;
mod choices;
mod classify;
mod endpoints;
mod exchange;
mod key;
mod marks;
mod memory;
mod query_cost;
mod reading;
mod refusal;
mod reject;
mod retries;
mod rules;
mod server_state;
mod settlement;
mod units;
mod wait;

pub use attempt::Attempt;
pub use choices::{
    Cost, EndpointKey, MaxConcurrent, MaxWait, OutputTokens, TokenCost, TotalTimeout,
};
pub use classify::{
    BODY_LIMIT, BodyVerdict, ClassifierStatuses, DefaultClassifier, GRPC_RESOURCE_EXHAUSTED,
    GRPC_UNAVAILABLE, ThrottleClassifier, builtin_body_verdict, forbids_retry, insufficient_quota,
    is_json,
};
pub use endpoints::Endpoint;
pub use exchange::{Driver, Exchange, Next, Refused, RequestChoices};
pub use key::{KeyMode, UnknownKeyMode};
pub use marks::{Paced, QuotaExhausted};
pub use memory::{EndpointMemory, PacerMemory, Recalled};
pub use query_cost::{QUERY_COST_BODY_LIMIT, QueryCost};
pub use reading::{BodyReading, Reading};
pub use refusal::{PENALTY_PAUSE, RefusalClass, refusal_from_headers};
pub use reject::{Refusal, RejectReason, Rejection, WindowAnswer};
pub use retries::Retries;
pub use rules::{Hold, Rules, WaitCause};
pub use server_state::ServerState;
pub use settlement::Settlement;
pub use wait::{AttemptWait, WaitStep};

use crate::limiter::BarePause;
use crate::{
    Changes, CostAboveLimit, Feedback, Limiter, ServerModel, Signal, Timestamp, TokenUsage,
};
use endpoints::Endpoints;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What [`Engine::after`] did with a response.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct After {
    /// What changed in the endpoint's adaptive limiter (its rate, its pause, the waiting
    /// requests it can no longer serve).
    pub changes: Changes,
    /// True if the response was a throttle the server allows to be sent again. The driver
    /// sends it again if it has attempts left and can send the body again.
    pub retry: bool,
    /// How long the request itself waits before it is sent again, beside what holds its
    /// endpoint: a refusal for contention ([`RefusalClass::Contention`]) stops no endpoint, so
    /// the driver gives the next attempt this wait ([`Attempt::not_before`]).
    pub retry_in: Option<Duration>,
    /// The endpoint's model of the server, when this response changed it
    /// ([`Record::learn`](crate::Record::learn)).
    pub learned: Option<ServerModel>,
}

/// The engine of one named limiter: its endpoints, in one bounded store, and the two calls that
/// carry a request through them: before the send, [`hold`](Engine::hold) (and the tokens' calls);
/// after the response, [`Rules::read`] then [`after`](Engine::after).
pub struct Engine {
    endpoints: Endpoints,
    /// Whether any response has carried rate-limit fields: until one does, a request skips the
    /// server state altogether (no lock taken for it).
    headers_seen: AtomicBool,
    /// Until when a stop for every endpoint holds (a [`RefusalClass::Global`] refusal), in
    /// nanoseconds of the limiter's clock; 0 for none.
    global_stop: AtomicU64,
    /// Discord's buckets, when the endpoint keys are Discord routes
    /// ([`group_by_bucket`](Self::group_by_bucket)).
    buckets: Option<buckets::Buckets>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("endpoints", &self.endpoints.len())
            .field("headers_seen", &self.headers_seen())
            .finish()
    }
}

impl Engine {
    /// An engine that keeps at most about `capacity` endpoints and drops one idle for
    /// `idle_ttl` with no request waiting.
    #[must_use]
    pub fn new(capacity: usize, idle_ttl: Duration) -> Engine {
        Engine {
            endpoints: Endpoints::new(capacity, idle_ttl),
            headers_seen: AtomicBool::new(false),
            global_stop: AtomicU64::new(0),
            buckets: None,
        }
    }

    /// Groups the routes that share a bucket, as Discord names it (`X-RateLimit-Bucket`), under
    /// one endpoint: with [`KeyMode::DiscordRoute`] keys, a route's requests use the endpoint
    /// of its bucket and major parameter once a response named the bucket. A driver whose key
    /// mode is `DiscordRoute` builds its engine with this.
    #[must_use]
    pub fn group_by_bucket(mut self) -> Self {
        self.buckets = Some(buckets::Buckets::new(self.endpoints.capacity()));
        self
    }

    /// The endpoint `key`, with an adaptive limiter made with `make` if there is none.
    /// `evicted` is told of every limiter dropped to make room or for idleness.
    pub fn endpoint(
        &self,
        key: &str,
        now: Timestamp,
        make: impl FnOnce() -> Limiter,
        evicted: impl FnMut(&Limiter),
    ) -> Arc<Endpoint> {
        if let Some(bucket) = self.buckets.as_ref().and_then(|b| b.resolve(key)) {
            return self.endpoints.get_or_insert(&bucket, now, make, evicted);
        }
        self.endpoints.get_or_insert(key, now, make, evicted)
    }

    /// The endpoint `key`, if there is one (none is made).
    #[must_use]
    pub fn find(&self, key: &str) -> Option<Arc<Endpoint>> {
        self.endpoints.find(key)
    }

    /// Every endpoint key and its limiter, sorted by key (a copy: the store can change
    /// meanwhile).
    #[must_use]
    pub fn limiters(&self) -> Vec<(Arc<str>, Limiter)> {
        self.endpoints.all()
    }

    /// Drops every endpoint idle longer than the idle TTL with nobody waiting (and nothing in
    /// flight under `MaxConcurrent`); `evicted` is told of each. Returns how many.
    pub fn evict_idle(&self, now: Timestamp, evicted: impl FnMut(&Limiter)) -> usize {
        self.endpoints.evict_idle(now, evicted)
    }

    /// How long an endpoint idle with nobody waiting is kept (and so the oldest a memory of
    /// it may be to be recalled: [`PacerMemory`]).
    #[must_use]
    pub fn idle_ttl(&self) -> Duration {
        self.endpoints.idle_ttl()
    }

    /// How many endpoints are kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.endpoints.len()
    }

    /// True if no endpoint is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether any response has carried rate-limit fields yet.
    #[must_use]
    pub fn headers_seen(&self) -> bool {
        self.headers_seen.load(Ordering::Relaxed)
    }

    /// Before the send, the fast path: the time the attempt may go when nothing holds it now —
    /// no strict window, no fleet's pool to draw from, nothing ordered or asked by the server's state ([`hold`](Self::hold)
    /// is zero), its tokens within their budgets, the adaptive limiter's units there — with its
    /// units and tokens taken and the send recorded, as [`begin_wait`](Self::begin_wait) would. `None`
    /// otherwise, having taken nothing: the driver then runs [`begin_wait`](Self::begin_wait), which comes
    /// to the same answer at the cost of building its wait. Until a response has carried
    /// rate-limit fields, only the limiter is looked at. It reads the attempt's units, tokens,
    /// windows, start (the time on the limiter's clock), `MaxRetryAfter` and
    /// [`MaxConcurrent`]; `tokens_attempt` is as for [`begin_wait`](Self::begin_wait). The attempt is
    /// then a request in flight: [`after`](Self::after) or [`failed`](Self::failed) gives its
    /// slot back, or [`Limiter::landed`] if neither comes.
    #[must_use]
    #[inline]
    pub fn go_now(
        &self,
        rules: &Rules,
        endpoint: &Endpoint,
        attempt: &Attempt<'_>,
        tokens_attempt: &mut u64,
    ) -> Option<Timestamp> {
        if !attempt.windows.is_empty() || attempt.not_before.is_some_and(|at| at > attempt.start) {
            return None;
        }
        let (units, now) = (attempt.units, attempt.start);
        // A fleet that draws from its pool asks the store first: no fast path.
        if endpoint.fleet().is_some_and(|f| f.draws(now)) {
            return None;
        }
        let headers_seen = self.headers_seen();
        if headers_seen
            && !self
                .hold(rules, endpoint, now, attempt.max_retry_after, false)
                .wait
                .is_zero()
        {
            return None;
        }
        let limiter = endpoint.limiter();
        let permit = (limiter.try_acquire_at(units, attempt.max_concurrent, now)).ok()?;
        // A request of known tokens takes them even before the first numbers (it is in flight
        // for them, and the first request waits alone for the first answer).
        if headers_seen || attempt.tokens.is_some_and(|t| t.total() > 0) {
            let count = count(endpoint, now);
            let mut server = endpoint.server.lock();
            match server
                .units
                .take(attempt.tokens, now, tokens_attempt, false, count)
            {
                Ok(None) => server.sent(now),
                _ => {
                    drop(server);
                    limiter.refund(units);
                    return None;
                }
            }
        }
        if let Some(fleet) = endpoint.fleet() {
            fleet.asked(units, permit.granted_at());
        }
        Some(permit.granted_at())
    }

    /// Before the send: what the endpoint's server state asks of a request at `now` (see
    /// [`Rules::hold`]).
    #[must_use]
    pub fn hold(
        &self,
        rules: &Rules,
        endpoint: &Endpoint,
        now: Timestamp,
        max_retry_after: Duration,
        stop_only: bool,
    ) -> Hold {
        if !self.headers_seen() {
            return Hold::NONE;
        }
        let global = Timestamp::from_nanos(self.global_stop.load(Ordering::Relaxed));
        if global > now {
            return Hold {
                wait: (global - now).min(max_retry_after),
                cause: WaitCause::ServerStop,
            };
        }
        // What most states ask: nothing, whatever their age (no copy of the state aged to
        // `now` is made for the rules then).
        if !stop_only && endpoint.server.lock().holds_nothing(rules) {
            return Hold::NONE;
        }
        let Some(snapshot) = endpoint.snapshot(now) else {
            return Hold::NONE;
        };
        let states = self.endpoints.at(now);
        let hold = rules.hold(
            endpoint.key(),
            &snapshot,
            &states,
            max_retry_after,
            stop_only,
        );
        snapshot.recycle();
        hold
    }

    /// Before the send: the wait the endpoint's quotas in other units ask of a request of
    /// `tokens` (`None`: go), or the quota whose limit the tokens are above. Takes nothing.
    pub fn tokens_wait(
        &self,
        endpoint: &Endpoint,
        tokens: Option<TokenUsage>,
        now: Timestamp,
    ) -> Result<Option<Duration>, CostAboveLimit> {
        endpoint.server.lock().units.wait(tokens, now)
    }

    /// Like [`tokens_wait`](Self::tokens_wait), and when the request may go (`Ok(None)`), its
    /// tokens are taken at once as attempt number `*attempt` (0 for a first attempt; the number
    /// of the attempt is written back). With `force`, it goes whatever the budgets say, unless
    /// it is above a limit.
    pub fn tokens_take(
        &self,
        endpoint: &Endpoint,
        tokens: Option<TokenUsage>,
        now: Timestamp,
        attempt: &mut u64,
        force: bool,
    ) -> Result<Option<Duration>, CostAboveLimit> {
        let count = count(endpoint, now);
        endpoint
            .server
            .lock()
            .units
            .take(tokens, now, attempt, force, count)
    }

    /// A request's flow ended: the tokens of its last attempt (the number
    /// [`tokens_take`](Self::tokens_take) wrote) are no longer in flight.
    pub fn landed(&self, endpoint: &Endpoint, attempt: u64) {
        if attempt != 0 {
            endpoint.server.lock().units.landed(attempt);
        }
    }

    /// The attempt number `attempt` ([`tokens_take`](Self::tokens_take)) was not counted by
    /// the server (its send failed, or it was refused): its tokens are given back at `now`,
    /// unless the server's numbers came after its send and replaced them.
    pub fn tokens_refund(&self, endpoint: &Endpoint, attempt: u64, now: Timestamp) {
        if attempt != 0 {
            endpoint.server.lock().units.refund(attempt, now);
        }
    }

    /// The send: a request to `endpoint` went at `now` (what [`crate::Pacing`] spaces from).
    pub fn sent(&self, endpoint: &Endpoint, now: Timestamp) {
        if self.headers_seen() {
            endpoint.server.lock().sent(now);
        }
    }

    /// After the response: applies `reading` (of a request of `units` sent at `sent_at`) to the
    /// endpoint at `now`. The server's numbers are kept (unless the response came from a
    /// cache), the limiter paces to them ([`Limiter::follow_server`]), then learns from the
    /// signal (a request of 0 units moves no rate). A request of at least one unit lands: its
    /// slot among the requests in flight is given back ([`Limiter::landed`], under the same
    /// lock). Says whether the request may be sent again.
    /// `now` is the time the response came, on the limiter's clock. It takes the reading (what
    /// the response reports is kept, not copied): read its [`signal`](Reading::signal) before.
    pub fn after(
        &self,
        endpoint: &Endpoint,
        reading: Reading,
        units: u64,
        sent_at: Timestamp,
        now: Timestamp,
    ) -> After {
        let mut reading = reading;
        if let Some(buckets) = &self.buckets {
            buckets.learn(endpoint.key(), &reading.info);
        }
        let (mut signal, retry_refused) = (reading.signal, reading.retry_refused);
        let retry_in = self.refused(endpoint, &mut reading, &mut signal, now);
        let seen = self.headers_seen();
        let bare = if matches!(signal, Signal::Throttled { retry_after: None })
            && reading.says_when_quota_is_back()
        {
            BarePause::ServerSaidWhen
        } else {
            BarePause::Take
        };
        let throttled = matches!(signal, Signal::Throttled { .. });
        let learned = record(endpoint, &reading, signal, units, sent_at);
        // A refusal that is not this client's rate moves no rate.
        let signal = if reading.refusal.cuts() {
            signal
        } else {
            Signal::Neutral
        };
        let (kept, quota) = if reading.kept(seen) {
            let count = endpoint.limiter().instance_count();
            endpoint
                .server
                .lock()
                .observe(reading, seen, count, sent_at, now)
        } else {
            (false, None)
        };
        if kept && !seen {
            self.headers_seen.store(true, Ordering::Relaxed);
        }
        let respond = || {
            if units == 0 {
                return Changes::default();
            }
            let feedback = Feedback {
                units,
                sent_at,
                signal,
            };
            if let Some(fleet) = endpoint.fleet() {
                fleet.responded_with(&feedback, bare, now);
            }
            endpoint
                .limiter()
                .landed_with_response_at(feedback, bare, now)
        };
        // The server's numbers first, then the signal.
        let changes = match quota {
            None => respond(),
            Some(quota) => {
                let mut changes = endpoint.limiter().follow_server_at(quota, now);
                let responded = respond();
                if changes.is_empty() {
                    responded
                } else {
                    changes.merge(responded);
                    changes
                }
            }
        };
        After {
            changes,
            retry: throttled && !retry_refused,
            retry_in,
            learned,
        }
    }

    /// What a refusal's class ([`Reading::refusal`]) asks beyond a throttle's, at `now`: a
    /// penalty's stop (at least [`PENALTY_PAUSE`], doubling while penalties follow), a stop for
    /// every endpoint, or none at all and a wait for the request alone (returned).
    fn refused(
        &self,
        endpoint: &Endpoint,
        reading: &mut Reading,
        signal: &mut Signal,
        now: Timestamp,
    ) -> Option<Duration> {
        let class = reading.refusal;
        if class == RefusalClass::Rate || !matches!(signal, Signal::Throttled { .. }) {
            return None;
        }
        let options = endpoint.limiter().options();
        let retry_after = reading.info.retry_after();
        let pause = retry_after.unwrap_or(options.pause_without_retry_after);
        match class {
            RefusalClass::Penalty => {
                let pause =
                    endpoint
                        .server
                        .lock()
                        .penalty(retry_after, options.max_retry_after, now);
                reading.set_stop(pause);
                *signal = Signal::Throttled {
                    retry_after: Some(pause),
                };
                self.headers_seen.store(true, Ordering::Relaxed);
                None
            }
            RefusalClass::Global => {
                let until = now + pause.min(options.max_retry_after);
                self.global_stop
                    .fetch_max(until.as_nanos(), Ordering::Relaxed);
                self.headers_seen.store(true, Ordering::Relaxed);
                None
            }
            RefusalClass::Contention => {
                // The object, or the requests in flight, not the endpoint: no stop is kept.
                reading.drop_stop();
                Some(pause.min(options.max_retry_after))
            }
            _ => None,
        }
    }

    /// After a send that got no response (a connection error, a timeout): neutral to the rate,
    /// it counts in the measured send rate and gives the request's slot among the requests in
    /// flight back ([`Limiter::landed`]).
    pub fn failed(&self, endpoint: &Endpoint, units: u64, sent_at: Timestamp) -> Changes {
        let limiter = endpoint.limiter();
        let feedback = Feedback {
            units,
            sent_at,
            signal: Signal::Neutral,
        };
        if units == 0 {
            // Never granted: no slot to give back.
            return limiter.on_response(feedback);
        }
        limiter.landed_with_response_at(feedback, BarePause::Take, limiter.clock().now())
    }
}

#[cfg(test)]
pub(crate) mod tests;

/// The count of processes an endpoint's budgets are cut by, once it is settled at `now`:
/// outside a fleet, the count given; a fleet member's live count, once its second sync is back
/// ([`FleetMember::count_settled`](crate::FleetMember::count_settled)).
fn count(endpoint: &Endpoint, now: Timestamp) -> Option<u32> {
    let settled = endpoint.fleet().is_none_or(|f| f.count_settled(now));
    settled.then(|| endpoint.limiter().instance_count())
}

/// Keeps a response in its endpoint's record for the model of the server: an acceptance, or a
/// refusal for this client's rate with its `Retry-After`; and the limit and window its fields
/// name. Other answers (errors, refusals of another kind) say nothing of the limiter. Returns the
/// model of the server when a refusal changed it.
fn record(
    endpoint: &Endpoint,
    reading: &Reading,
    signal: Signal,
    units: u64,
    sent_at: Timestamp,
) -> Option<ServerModel> {
    let named = reading
        .info
        .policies()
        .iter()
        .find_map(|p| Some((p.limit()?, p.window()?)));
    let refused = matches!(signal, Signal::Throttled { .. }) && reading.refusal.cuts();
    let kept = units > 0 && (refused || signal == Signal::Success);
    if !kept && named.is_none() {
        // Nothing to keep: no lock.
        return None;
    }
    // Read before the record's lock: no lock is taken under it.
    let instances = refused.then(|| endpoint.limiter().instance_count());
    let mut record = endpoint.record.lock();
    if let Some((limit, window)) = named {
        record.named(limit, window);
    }
    match signal {
        _ if !kept => None,
        Signal::Success => {
            record.accepted(sent_at, units);
            None
        }
        Signal::Throttled { retry_after } if refused => {
            record.refused(sent_at, units, retry_after);
            record.learn(instances.unwrap_or(1)).cloned()
        }
        _ => None,
    }
}

//! One request's way through the engine, attempt after attempt, as a machine a driver pumps: the
//! wait before each send (the [`AttemptWait`](super::AttemptWait) it builds), the send, the
//! reading of the answer, the retry, and what the caller is told at the end.

use super::{Attempt, Endpoint, Engine, Refusal, Retries, Rules, Settlement};
use crate::WindowLimit;
use crate::{
    BodyReading, Clock, LimiterMetrics, LimiterOptions, Paced, Priority, Signal, Timestamp,
    UsageReader,
};
use http::{HeaderMap, StatusCode};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// What a request chose for itself, with the per-request choices ([`MaxWait`](super::MaxWait),
/// [`Priority`], [`TokenCost`](super::TokenCost), [`OutputTokens`](super::OutputTokens),
/// [`TotalTimeout`](super::TotalTimeout), [`MaxConcurrent`](super::MaxConcurrent)); `None`
/// where it chose nothing (the limiter's setting applies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestChoices {
    /// Its own `MaxWait`.
    pub max_wait: Option<Duration>,
    /// Its lane in the adaptive limiter's queue.
    pub priority: Priority,
    /// Its cost in tokens, if known (for the quotas in tokens).
    pub tokens: Option<u64>,
    /// Of its tokens, those it may produce ([`OutputTokens`](super::OutputTokens)).
    pub output_tokens: Option<u64>,
    /// Its `TotalTimeout`, from the time it came in.
    pub timeout: Option<Duration>,
    /// Its own cap on its endpoint's requests in flight.
    pub max_concurrent: Option<NonZeroU32>,
}

impl RequestChoices {
    /// The choices a request's extensions carry ([`MaxWait`](super::MaxWait),
    /// [`Priority`], [`TokenCost`](super::TokenCost), [`OutputTokens`](super::OutputTokens),
    /// [`TotalTimeout`](super::TotalTimeout), [`MaxConcurrent`](super::MaxConcurrent)), its
    /// tokens estimated by `tokens` when it carries no `TokenCost`: what both drivers read from
    /// a request.
    ///
    /// ```
    /// use pacer_core::{MaxWait, RequestChoices};
    /// use std::time::Duration;
    ///
    /// let mut extensions = http::Extensions::new();
    /// extensions.insert(MaxWait(Duration::from_secs(5)));
    /// let choices = RequestChoices::from_extensions(&extensions, || Some(120));
    /// assert_eq!((choices.max_wait, choices.tokens), (Some(Duration::from_secs(5)), Some(120)));
    /// ```
    #[must_use]
    pub fn from_extensions(
        extensions: &http::Extensions,
        tokens: impl FnOnce() -> Option<u64>,
    ) -> Self {
        RequestChoices {
            max_wait: extensions.get::<super::MaxWait>().map(|m| m.0),
            priority: extensions.get::<Priority>().copied().unwrap_or_default(),
            tokens: match extensions.get::<super::TokenCost>() {
                Some(t) => Some(t.0),
                None => tokens(),
            },
            output_tokens: extensions.get::<super::OutputTokens>().map(|o| o.0),
            timeout: extensions.get::<super::TotalTimeout>().map(|t| t.0),
            max_concurrent: extensions.get::<super::MaxConcurrent>().map(|m| m.cap()),
        }
    }
}

/// What every exchange of one named limiter is driven with: the limiter's name, engine, rules,
/// options, clock, metrics and the instance count in force. A driver holds these for the limiter
/// and lends them to each step of an [`Exchange`].
#[derive(Clone, Copy)]
pub struct Driver<'a> {
    /// The limiter's name, for what the caller is told ([`Paced`]).
    pub name: &'a Arc<str>,
    /// The limiter's engine.
    pub engine: &'a Engine,
    /// The limiter's rules.
    pub rules: &'a Rules,
    /// The limiter's options (`MaxWait`, `MaxRetryAfter`).
    pub options: &'a LimiterOptions,
    /// The limiter's clock: the wall time an HTTP date in a response is read against, and the
    /// time an async driver waits on ([`crate::drive::ready`]).
    pub clock: &'a Arc<dyn Clock>,
    /// The limiter's metrics.
    pub metrics: &'a LimiterMetrics,
    /// The instance count in force (set live, or the options').
    pub instance_count: u32,
}

impl std::fmt::Debug for Driver<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("name", self.name)
            .field("instance_count", &self.instance_count)
            .finish_non_exhaustive()
    }
}

/// What the driver does after an answer was read ([`Exchange::answered`]).
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Next {
    /// Send the request's copy again: its wait begins now ([`Exchange::next_wait`] then
    /// [`Exchange::went`]), not before [`Exchange::not_before`].
    Retry,
    /// Hand the answer to the caller, marked with this ([`None`] for a request of 0 units, which
    /// Pacer does not pace).
    Done(Option<Paced>),
}

/// A request that could not be sent ([`Exchange::refused`]): the reason, and what was done until
/// then (the attempts sent, the time waited in all, the rate at the last send). A driver that
/// holds the server's last answer (a throttle whose retry could not be sent) hands that back
/// marked with `paced`, else the refusal.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Refused {
    /// Why the request was not sent.
    pub refusal: Refusal,
    /// What was done until then.
    pub paced: Paced,
}

/// One request's way through a limiter's engine: the machine every driver pumps, attempt after
/// attempt. It reads no clock, sleeps not and sends nothing; the driver does, and hands back the
/// time and what happened:
///
/// 1. [`go_now`](Self::go_now), the fast path, or the wait [`attempt`](Self::attempt) describes
///    (an [`AttemptWait`](super::AttemptWait), pumped by [`crate::drive::wait`] in an async
///    driver), then [`went`](Self::went) with the time it may go, or [`refused`](Self::refused);
/// 2. the send; then [`answered`](Self::answered) with the response's status, headers and what
///    its body said ([`Next::Retry`] or [`Next::Done`]), or [`failed`](Self::failed) if the send
///    failed;
/// 3. on [`Next::Retry`], [`next_wait`](Self::next_wait) and step 1 again for the request's copy.
///
/// It keeps the request's retries ([`Retries`]), its waits in one `MaxWait` per attempt, the
/// tokens it holds in flight and its slot among its endpoint's requests in flight: dropped at
/// any point, it gives both back. It counts the limiter's metrics as it goes.
///
/// ```
/// use http::{HeaderMap, StatusCode};
/// use pacer_core::{Driver, Engine, Exchange, Limiter, LimiterMetrics, LimiterOptions,
///     ManualClock, Next, RequestChoices, Rules, Timestamp, Clock};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
/// let (engine, rules, options) = (Engine::new(10, Duration::from_secs(60)), Rules::default(),
///     LimiterOptions::default());
/// let name: Arc<str> = Arc::from("api");
/// let metrics = LimiterMetrics::new(&name);
/// let driver = Driver { name: &name, engine: &engine, rules: &rules, options: &options,
///     clock: &clock, metrics: &metrics, instance_count: 1 };
/// let endpoint = engine.endpoint("api.example.com", clock.now(),
///     || Limiter::new(options.clone()).unwrap(), |_| {});
/// let mut exchange = Exchange::new(endpoint, 1, RequestChoices::default(), &rules, clock.now());
///
/// // Nothing holds the first attempt: it goes at once.
/// let at = exchange.go_now(&driver, &[]).expect("nothing holds it");
/// // The server answers 429 with `Retry-After: 2`: the request is sent again.
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", "2".parse().unwrap());
/// let next = exchange.answered(&driver, StatusCode::TOO_MANY_REQUESTS, &headers, None, at, true);
/// assert_eq!(next, Next::Retry);
/// // A 200 ends it.
/// exchange.next_wait(clock.now());
/// # let _ = exchange.go_now(&driver, &[]);
/// # let now = clock.now() + Duration::from_secs(2);
/// # exchange.went(&driver, now);
/// let next = exchange.answered(&driver, StatusCode::OK, &HeaderMap::new(), None, now, true);
/// let Next::Done(Some(paced)) = next else { panic!("{next:?}") };
/// assert_eq!(paced.attempts(), 2);
/// ```
pub struct Exchange {
    endpoint: Arc<Endpoint>,
    units: u64,
    /// What the request chose for itself, when it chose anything (boxed: most choose nothing,
    /// and a driver's future holds the exchange).
    own: Option<Box<Own>>,
    retries: Retries,
    /// When the current attempt's wait began.
    begin: Timestamp,
    /// A retry's own wait after a refusal for contention ([`After::retry_in`](super::After::retry_in)).
    not_before: Option<Timestamp>,
    /// The waits of all attempts sent until now.
    waited: Duration,
    /// The limiter's rate at the last send.
    rate: f64,
    /// When the current attempt went.
    sent_at: Timestamp,
    /// The number under which the request's tokens are in flight (0: none).
    tokens_attempt: u64,
    /// Whether the current attempt holds a slot among its endpoint's requests in flight (from
    /// its grant until its answer or failure).
    in_flight: bool,
}

/// A request's own choices, and when its `TotalTimeout` ends.
#[derive(Debug)]
struct Own {
    choices: RequestChoices,
    timeout_end: Option<Timestamp>,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("endpoint", self.endpoint.key())
            .field("units", &self.units)
            .field("attempt", &self.retries.attempt())
            .field("waited", &self.waited)
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl Exchange {
    /// A request of `units` to `endpoint` that came in at `now`, under `rules` (its
    /// `MaxAttempts`), with its own `choices`.
    #[must_use]
    pub fn new(
        endpoint: Arc<Endpoint>,
        units: u64,
        choices: RequestChoices,
        rules: &Rules,
        now: Timestamp,
    ) -> Self {
        let own = (choices != RequestChoices::default()).then(|| {
            Box::new(Own {
                choices,
                timeout_end: choices.timeout.map(|t| now.saturating_add(t)),
            })
        });
        Exchange {
            endpoint,
            units,
            own,
            retries: Retries::new(rules),
            begin: now,
            not_before: None,
            waited: Duration::ZERO,
            rate: 0.0,
            sent_at: now,
            tokens_attempt: 0,
            in_flight: false,
        }
    }

    /// The request's endpoint.
    #[must_use]
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    /// The request's units.
    #[must_use]
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The number of the attempt about to be sent (or just sent), from 1.
    #[must_use]
    pub fn attempt_number(&self) -> u32 {
        self.retries.attempt()
    }

    /// True if another attempt may follow this one: the driver keeps a copy of the request
    /// before it sends (and only then). A request of 0 units is sent once.
    #[must_use]
    pub fn keeps_copy(&self) -> bool {
        self.units > 0 && self.retries.keeps_copy()
    }

    /// When the request's `TotalTimeout` ends, and the timeout, if it set one: the driver
    /// abandons a send still going then.
    #[must_use]
    pub fn timeout(&self) -> Option<(Timestamp, Duration)> {
        let own = self.own.as_deref()?;
        Some((own.timeout_end?, own.choices.timeout?))
    }

    /// When the current attempt's wait began.
    #[must_use]
    pub fn wait_began(&self) -> Timestamp {
        self.begin
    }

    /// Not before this time is the current attempt sent (a retry after a refusal for
    /// contention).
    #[must_use]
    pub fn not_before(&self) -> Option<Timestamp> {
        self.not_before
    }

    fn choices(&self) -> RequestChoices {
        self.own.as_deref().map(|o| o.choices).unwrap_or_default()
    }

    /// The current attempt as its wait reads it ([`Engine::begin_wait`]): the request's units,
    /// tokens and choices, the limiter's `MaxWait` unless the request chose its own, `windows`
    /// (each strict window the request is counted in, with its key), from the wait's start.
    pub fn attempt<'w>(
        &self,
        driver: &Driver<'_>,
        windows: &'w [(&'w WindowLimit, String)],
    ) -> Attempt<'w> {
        let choices = self.choices();
        Attempt::new(
            self.units,
            self.begin,
            choices.max_wait.unwrap_or(driver.options.max_wait),
        )
        .tokens(choices.tokens)
        .output_tokens(choices.output_tokens)
        .windows(windows)
        .priority(choices.priority)
        .timeout(self.timeout())
        .instance_count(driver.instance_count)
        .max_retry_after(driver.options.max_retry_after)
        .not_before(self.not_before)
        .max_concurrent(choices.max_concurrent)
    }

    /// The number under which the request's tokens are in flight, for the wait
    /// ([`Engine::begin_wait`]'s `tokens_attempt`).
    pub fn tokens_attempt(&mut self) -> &mut u64 {
        &mut self.tokens_attempt
    }

    /// The fast path ([`Engine::go_now`]): the time the current attempt goes if nothing holds
    /// it now (the wait's start), having taken its units and recorded it as
    /// [`went`](Self::went) would; `None` otherwise, having taken nothing. A request of 0 units
    /// always goes at once.
    pub fn go_now(
        &mut self,
        driver: &Driver<'_>,
        windows: &[(&WindowLimit, String)],
    ) -> Option<Timestamp> {
        let now = self.begin;
        if self.units == 0 {
            self.sent_at = now;
            return Some(now);
        }
        if self.not_before.is_some_and(|at| at > now) {
            return None;
        }
        let attempt = self.attempt(driver, windows);
        let mut tokens_attempt = self.tokens_attempt;
        let at =
            (driver.engine).go_now(driver.rules, &self.endpoint, &attempt, &mut tokens_attempt)?;
        self.tokens_attempt = tokens_attempt;
        self.went(driver, at);
        Some(at)
    }

    /// The current attempt may go at `at` (its wait said so): it is in flight from then on.
    pub fn went(&mut self, driver: &Driver<'_>, at: Timestamp) {
        let waited = at.saturating_duration_since(self.begin);
        self.waited += waited;
        self.sent_at = at;
        if self.units > 0 {
            self.in_flight = true;
            self.rate = self.endpoint.limiter().rate();
            driver.metrics.sent(self.units, waited);
        }
    }

    /// The current attempt could not be sent, at `now`: why, and what was done until then.
    pub fn refused(&mut self, driver: &Driver<'_>, refusal: Refusal, now: Timestamp) -> Refused {
        self.waited += now.saturating_duration_since(self.begin);
        self.rate = self.endpoint.limiter().rate();
        let attempt = self.retries.attempt();
        match &refusal {
            Refusal::Rejected(reason) => {
                driver.metrics.rejected(reason.kind());
                tracing::info!(
                    reason = reason.kind(),
                    needed_wait_ms = reason.needed_wait().map(|d| d.as_millis() as u64),
                    attempt,
                    "request refused"
                );
            }
            other => tracing::warn!(attempt, "request not sent: {other}"),
        }
        Refused {
            refusal,
            paced: self.paced_after(driver, attempt - 1),
        }
    }

    /// The current attempt's send failed at `now` (no answer came): its slot, units and
    /// tokens are given back, the rate does not move. The driver hands the failure to the
    /// caller.
    pub fn failed(&mut self, driver: &Driver<'_>, now: Timestamp) {
        (driver.engine).tokens_refund(&self.endpoint, self.tokens_attempt, now);
        if self.units > 0 {
            self.in_flight = false;
            let changes = driver
                .engine
                .failed(&self.endpoint, self.units, self.sent_at);
            driver.metrics.record(&changes);
        }
    }

    /// The current attempt's answer came at `now`: its status, headers and what its body said
    /// (a 429's verdict, a query's cost), read by the limiter's rules and applied to the
    /// endpoint ([`Engine::after`]). `copy` says whether the driver holds a copy of the request
    /// to send again. Returns whether to send it again or hand this answer to the caller.
    pub fn answered(
        &mut self,
        driver: &Driver<'_>,
        status: StatusCode,
        headers: &HeaderMap,
        body: Option<&BodyReading>,
        now: Timestamp,
        copy: bool,
    ) -> Next {
        let cost = body
            .and_then(|b| b.cost.clone())
            .map(|c| c.with_units(self.units));
        let mut reading = driver.rules.read_with_cost(
            status,
            headers,
            body.and_then(|b| b.verdict.as_ref()),
            cost.as_ref(),
            || driver.clock.system_now(),
            driver.options.max_retry_after,
        );
        if self.choices().tokens.is_none_or(|t| t == 0) {
            reading.tokens_unknown();
        }
        let throttled = matches!(reading.signal(), Signal::Throttled { .. });
        let counted = status.is_success() && !throttled;
        // The engine gives the slot back with the answer.
        self.in_flight = false;
        let after = (driver.engine).after(&self.endpoint, reading, self.units, self.sent_at, now);
        driver.metrics.record(&after.changes);
        if !counted {
            // A model API charges the tokens of what it answered; a refusal or an error
            // answered nothing. (After the answer's own numbers were kept: the refund is for
            // a debit they did not replace.)
            (driver.engine).tokens_refund(&self.endpoint, self.tokens_attempt, now);
        }
        if let Some(model) = &after.learned {
            tracing::info!(
                limiter = %driver.name,
                endpoint = %self.endpoint.key(),
                kind = model.kind.as_str(),
                limit = model.limit,
                window_s = model.window.as_secs_f64(),
                confidence = model.confidence,
                "model of the server changed"
            );
            driver.metrics.server_model_changed(model.kind);
        }
        if self.units == 0 {
            return Next::Done(None);
        }
        let attempt = self.retries.attempt();
        if !throttled {
            return Next::Done(Some(self.paced_after(driver, attempt)));
        }
        driver.metrics.throttled();
        if copy && self.retries.again(&after) {
            tracing::debug!(attempt, status = status.as_u16(), "throttled, retrying");
            self.not_before = after.retry_in.map(|d| now + d);
            return Next::Retry;
        }
        if !after.retry {
            tracing::debug!(
                attempt,
                status = status.as_u16(),
                "throttled, not retried: the server said not to"
            );
        }
        Next::Done(Some(self.paced_after(driver, attempt)))
    }

    /// After [`Next::Done`] on a success whose `headers` say it is JSON or a stream of events
    /// ([`UsageReader::new`]): the tokens the request reserved (its
    /// [`TokenCost`](super::TokenCost) and [`OutputTokens`](super::OutputTokens)), waiting for
    /// what the answer's body reports it used. The driver shows it the body as the caller reads
    /// it ([`Settlement::feed`], [`PacerBody::settling`](crate::PacerBody::settling)) and settles
    /// at its end. `None` when the endpoint has no budget in tokens and the request reserved
    /// none, the body is of another type, or it was asked already.
    #[must_use]
    pub fn settlement(&mut self, headers: &HeaderMap) -> Option<Settlement> {
        let attempt = self.tokens_attempt;
        if attempt == 0 {
            return None;
        }
        let reader = UsageReader::new(headers)?;
        if !self
            .endpoint
            .server
            .lock()
            .units
            .answered_for_settling(attempt)
        {
            return None;
        }
        self.tokens_attempt = 0;
        Some(Settlement {
            endpoint: Arc::clone(&self.endpoint),
            attempt,
            reader,
        })
    }

    /// The wait of the next attempt begins at `now` (after [`Next::Retry`]).
    pub fn next_wait(&mut self, now: Timestamp) {
        self.begin = now;
    }

    /// What the caller is told after `attempts` were sent: the waits of all, the rate at the
    /// last send.
    fn paced_after(&self, driver: &Driver<'_>, attempts: u32) -> Paced {
        Paced::new(driver.name, self.endpoint.key())
            .with_attempts(attempts)
            .with_waited(self.waited)
            .with_rate(self.rate)
    }

    /// What the caller is told if the request's `TotalTimeout` runs out during the current
    /// attempt's send.
    #[must_use]
    pub fn paced_now(&self, driver: &Driver<'_>) -> Paced {
        self.paced_after(driver, self.retries.attempt())
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if self.in_flight {
            // Dropped between its grant and its answer (mid-send, or while its body was read).
            self.endpoint.limiter().landed();
        }
        if self.tokens_attempt != 0 {
            self.endpoint
                .server
                .lock()
                .units
                .landed(self.tokens_attempt);
        }
    }
}

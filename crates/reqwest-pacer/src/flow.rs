//! The request flow: key, cost, wait, send, classify, feed back, retry.

use crate::classify::forbids_retry;
use crate::endpoints::Endpoint;
use crate::error::{RejectReason, Rejection, WaitCause};
use crate::named::Named;
use crate::unit_quota;
use crate::window_wait::{KeyedWindow, WindowAnswer};
use crate::{
    BodyVerdict, Cost, EndpointKey, LimiterConfig, MaxWait, Paced, PacerError, PacerMiddleware,
    QuotaExhausted, TokenCost, TotalTimeout, UseLimiter,
};
use http::Extensions;
use pacer_core::{
    Feedback, Priority, RateLimitInfo, ServerQuota, Signal, StopCause, ThrottlingContext, Timestamp,
};
use reqwest::Response;
use reqwest_middleware::{Error, Middleware, Next, Result};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tracing::Instrument;

thread_local! {
    /// The buffer each thread builds endpoint keys in: a request whose endpoint is known needs no
    /// allocation for its key (the endpoint holds it).
    static KEY: RefCell<String> = const { RefCell::new(String::new()) };
}

/// A key buffer that grew past this (a very long key) is given back after use.
const KEY_BUFFER_KEPT: usize = 1024;

/// The future `handle` returns: what `#[async_trait]` makes of an `async fn`.
type Handled<'a> = Pin<Box<dyn Future<Output = Result<Response>> + Send + 'a>>;

/// `handle` is written out rather than made by `#[async_trait]`: the steps before the first wait
/// (the limiter, the cost, the endpoint, the span) need no await, so they run at once, and the
/// boxed future is the flow alone: one future that holds the request once, small enough for the
/// allocator's fast path.
impl Middleware for PacerMiddleware {
    fn handle<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        req: reqwest::Request,
        extensions: &'life1 mut Extensions,
        next: Next<'life2>,
    ) -> Handled<'async_trait>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        // 1. Key: the limiter, then the endpoint within it.
        let chosen = extensions.get::<UseLimiter>().map(|u| u.0.as_ref());
        let named: &Named = match self.named(chosen) {
            Ok(named) => named,
            Err(e) => return Box::pin(std::future::ready(Err(Error::middleware(e)))),
        };
        let config = named.config();
        // 2. Cost.
        let units = match extensions.get::<Cost>() {
            Some(c) => c.0,
            None => config.cost.cost(&req),
        };
        if units == 0 {
            let key = match extensions.get::<EndpointKey>() {
                Some(k) => k.0.clone(),
                None => config.key.key(&req),
            };
            let span = span(named, &key, &req, 0);
            return Box::pin(free(named, config, key, req, extensions, next).instrument(span));
        }
        let now = named.clock.now();
        let endpoint = match extensions.get::<EndpointKey>() {
            Some(k) => named.endpoint(&k.0, now),
            None => KEY.with_borrow_mut(|key| {
                key.clear();
                config.key.write_key(&req, key);
                let endpoint = named.endpoint(key, now);
                if key.capacity() > KEY_BUFFER_KEPT {
                    *key = String::new();
                }
                endpoint
            }),
        };
        let span = span(named, &endpoint.key, &req, units);
        let tokens = match extensions.get::<TokenCost>() {
            Some(t) => Some(t.0),
            None => config.estimate_tokens(&req),
        };
        // The request's own limits: one lookup each.
        let max_wait = extensions.get::<MaxWait>().map(|m| m.0);
        let priority = extensions.get::<Priority>().copied();
        let timeout = extensions
            .get::<TotalTimeout>()
            .map(|t| (now.saturating_add(t.0), t.0));
        let own =
            (tokens.is_some() || max_wait.is_some() || priority.is_some() || timeout.is_some())
                .then(|| {
                    Box::new(OwnLimits {
                        tokens,
                        attempt_sent: AtomicU64::new(0),
                        max_wait,
                        priority: priority.unwrap_or_default(),
                        timeout,
                    })
                });
        let request = Request {
            named,
            config,
            endpoint,
            units,
            own,
        };
        Box::pin(request.run(req, extensions, next, now).instrument(span))
    }
}

/// The span of one request: never its URL (a query may hold a secret), only its endpoint key.
fn span(named: &Named, key: &str, req: &reqwest::Request, units: u64) -> tracing::Span {
    tracing::info_span!(
        "pacer",
        limiter = %named.name,
        endpoint = %key,
        method = %req.method(),
        units,
    )
}

/// A request of 0 units neither waits nor moves the rate; its headers still inform the state.
async fn free(
    named: &Named,
    config: Arc<LimiterConfig>,
    key: String,
    req: reqwest::Request,
    extensions: &mut Extensions,
    next: Next<'_>,
) -> Result<Response> {
    let mut result = next.run(req, extensions).await;
    let verdict = match &mut result {
        Ok(response) if response.status() == http::StatusCode::TOO_MANY_REQUESTS => {
            Box::pin(read_body(named, &config, &key, response)).await
        }
        _ => Verdict::None,
    };
    if let Ok(response) = &result {
        let _ = observe(named, &config, &key, response, None, verdict);
    }
    result
}

/// One request on its way through a limiter.
struct Request<'a> {
    named: &'a Named,
    config: Arc<LimiterConfig>,
    endpoint: Arc<Endpoint>,
    units: u64,
    /// The request's own limits, when it set any (boxed: most requests set none, and every
    /// request's future holds this struct).
    own: Option<Box<OwnLimits>>,
}

/// What a request brings of its own: its cost in tokens, and the limits it set with extensions.
#[derive(Debug, Default)]
struct OwnLimits {
    /// The request's cost in tokens, if known (for the quotas in tokens).
    tokens: Option<u64>,
    /// The number under which the last attempt's tokens are in flight (0: none).
    attempt_sent: AtomicU64,
    /// Its own [`MaxWait`], if any.
    max_wait: Option<Duration>,
    /// Its lane in the adaptive limiter's queue.
    priority: Priority,
    /// When its [`TotalTimeout`] ends, and the timeout.
    timeout: Option<(Timestamp, Duration)>,
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if let Some(own) = &mut self.own {
            unit_quota::landed(&self.endpoint, *own.attempt_sent.get_mut());
        }
    }
}

impl<'a> Request<'a> {
    /// Steps 3 to 7; `now` is when the request came in. (Not an `async fn`: its arguments would
    /// be held twice in the future, once as arguments and once as locals.)
    #[allow(clippy::manual_async_fn)] // on purpose: see above
    fn run<'f>(
        self,
        mut req: reqwest::Request,
        extensions: &'f mut Extensions,
        next: Next<'f>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Response>> + Send + 'f
    where
        'a: 'f,
    {
        async move {
            let (named, config, units) = (self.named, &*self.config, self.units);
            let (key, limiter) = (&*self.endpoint.key, &self.endpoint.limiter);
            let windows: Vec<KeyedWindow<'_>> = config
                .windows
                .iter()
                .filter_map(|w| {
                    Some(KeyedWindow {
                        key: w.key_of(&req, key)?,
                        window: w,
                        limiter: &named.name,
                    })
                })
                .collect();
            let max_attempts = config.options.max_attempts.max(1);
            let mut attempt = 1;
            let mut last: Option<Response> = None;
            // What the caller is told (`Paced`, built at the end: its names are not kept across
            // the awaits): the waits of all attempts, the rate at the last send.
            let mut waited_in_all = Duration::ZERO;
            let mut rate;
            loop {
                let retry_copy = if attempt < max_attempts {
                    req.try_clone()
                } else {
                    None
                };
                // 3. Wait, within MaxWait.
                let start = if attempt == 1 { now } else { named.clock.now() };
                let waited = match self.go_now(&windows) {
                    Some(sent_at) => Ok(sent_at),
                    // Boxed: the rare wait would otherwise make every request's future larger.
                    None => Box::pin(self.wait(&windows, start)).await,
                };
                let sent_at = match waited {
                    Ok(sent_at) => sent_at,
                    Err(mut error) => {
                        waited_in_all += named.clock.now() - start;
                        rate = limiter.rate();
                        if let PacerError::Rejected(rejection) = &mut error {
                            *rejection.paced = self.paced(0, waited_in_all, rate);
                            named.metrics.rejected(rejection.kind());
                            tracing::info!(
                                reason = rejection.kind(),
                                needed_wait_ms =
                                    rejection.needed_wait().map(|d| d.as_millis() as u64),
                                attempt,
                                "request refused"
                            );
                        } else {
                            tracing::warn!(attempt, "request not sent: {error}");
                        }
                        // A retry that cannot be sent gives the caller the server's last answer.
                        return match last {
                            Some(response) => {
                                Ok(mark(response, self.paced(attempt - 1, waited_in_all, rate)))
                            }
                            None => Err(Error::middleware(error)),
                        };
                    }
                };
                drop(last.take());
                waited_in_all += sent_at - start;
                rate = limiter.rate();
                // 4. Send (within the request's TotalTimeout, if it has one: a timed-out send
                // comes back as the `TimedOut` error, neutral to the rate).
                let mut sending = next.clone().run(req, extensions);
                if let Some((end, timeout)) = self.timeout() {
                    let left = end - named.clock.now();
                    let paced = self.paced(attempt, waited_in_all, rate);
                    sending = Box::pin(async move {
                        match tokio::time::timeout(left, sending).await {
                            Ok(sent) => sent,
                            Err(_) => {
                                tracing::info!(attempt, "request timed out (TotalTimeout)");
                                Err(Error::middleware(PacerError::TimedOut { paced, timeout }))
                            }
                        }
                    });
                }
                let failed = match sending.await {
                    // The response waits in `last` (free since the send, and kept across every
                    // await anyway) while a 429's body is read: any other way, every request's
                    // future would hold room for a second response.
                    Ok(response) => {
                        last = Some(response);
                        None
                    }
                    Err(e) => Some(e),
                };
                // 5. Classify (a 429's body too, boxed: it is rare) and 6. feed back.
                let mut verdict = Verdict::None;
                if let Some(parked) = last
                    .as_mut()
                    .filter(|r| r.status() == http::StatusCode::TOO_MANY_REQUESTS)
                {
                    let reading = Box::pin(read_body(named, config, key, parked));
                    verdict = reading.await;
                }
                let result = match failed {
                    Some(e) => Err(e),
                    None => Ok(last.take().expect("parked above")),
                };
                let signal = match &result {
                    Ok(response) => {
                        observe(named, config, key, response, Some(&self.endpoint), verdict)
                    }
                    Err(_) => Signal::Neutral,
                };
                let changes = limiter.on_response(Feedback {
                    units,
                    sent_at,
                    signal,
                });
                named.record(&changes);
                if !matches!(signal, Signal::Throttled { .. }) {
                    return result.map(|r| mark(r, self.paced(attempt, waited_in_all, rate)));
                }
                named.metrics.throttled();
                // 7. Retry a throttled request whose body can be sent again, unless the server
                // said not to.
                match (result, retry_copy) {
                    (Ok(response), _) if refuses_retry(&response, verdict) => {
                        tracing::debug!(
                            attempt,
                            status = response.status().as_u16(),
                            "throttled, not retried: the server said not to"
                        );
                        return Ok(mark(response, self.paced(attempt, waited_in_all, rate)));
                    }
                    (Ok(response), Some(copy)) => {
                        tracing::debug!(
                            attempt,
                            status = response.status().as_u16(),
                            "throttled, retrying"
                        );
                        last = Some(response);
                        req = copy;
                        attempt += 1;
                    }
                    (result, _) => {
                        return result.map(|r| mark(r, self.paced(attempt, waited_in_all, rate)));
                    }
                }
            }
        }
    }
}

impl Request<'_> {
    /// The request's cost in tokens, if known.
    fn tokens(&self) -> Option<u64> {
        self.own.as_ref().and_then(|o| o.tokens)
    }

    /// The request's own `MaxWait`, if it set one.
    fn max_wait(&self) -> Option<Duration> {
        self.own.as_ref().and_then(|o| o.max_wait)
    }

    /// The request's lane in the adaptive limiter's queue.
    fn priority(&self) -> Priority {
        self.own
            .as_ref()
            .map_or_else(Priority::default, |o| o.priority)
    }

    /// When the request's `TotalTimeout` ends, and the timeout, if it set one.
    fn timeout(&self) -> Option<(Timestamp, Duration)> {
        self.own.as_ref().and_then(|o| o.timeout)
    }

    /// What the caller is told of this request: `attempts` sent, `waited` in all, the rate at
    /// the last send.
    fn paced(&self, attempts: u32, waited: Duration, rate: f64) -> Paced {
        let mut paced = Paced::new(&self.named.name, &self.endpoint.key);
        paced.attempts = attempts;
        paced.waited = waited;
        paced.rate = rate;
        paced
    }
}

/// Gives the caller what Pacer did, in the response's extensions.
fn mark(mut response: Response, paced: Paced) -> Response {
    response.extensions_mut().insert(paced);
    response
}

/// Step 5 for a 429 with a JSON body: shows the classifier the body's first bytes
/// ([`crate::body`]) and marks a response whose account is out of credit with
/// [`QuotaExhausted`]. Any other result goes through untouched.
async fn read_body(
    named: &Named,
    config: &LimiterConfig,
    key: &str,
    response: &mut Response,
) -> Verdict {
    // Taken out for the read, which rebuilds it, and put back (a 429's path only).
    let taken = std::mem::replace(
        response,
        Response::from(http::Response::new(Vec::<u8>::new())),
    );
    let (rebuilt, verdict) = crate::body::classify_body(&*config.classifier, taken).await;
    *response = rebuilt;
    match verdict {
        Some(BodyVerdict::QuotaExhausted { code }) => {
            tracing::info!(code = %code, "quota exhausted: not a throttle, not retried");
            response.extensions_mut().insert(QuotaExhausted {
                code,
                limiter: Arc::clone(&named.name),
                endpoint: Arc::from(key),
            });
            Verdict::QuotaExhausted
        }
        Some(BodyVerdict::NoRetry) => Verdict::NoRetry,
        _ => Verdict::None,
    }
}

/// What a 429's body said, in the one byte the request's future keeps of it (the provider's code
/// is in the response's [`QuotaExhausted`] mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Nothing: the status and headers decide.
    None,
    /// A throttle not to be sent again.
    NoRetry,
    /// The account is out of credit: not a throttle.
    QuotaExhausted,
}

/// True if a throttled response must not be sent again: `x-should-retry: false`, or a body the
/// classifier says is not to be retried.
fn refuses_retry(response: &Response, verdict: Verdict) -> bool {
    verdict == Verdict::NoRetry || forbids_retry(response.headers())
}

/// Parses the response's rate-limit state into the endpoint's state and classifies it. When the
/// state has a remaining and a reset, the endpoint's limiter paces to them
/// ([`pacer_core::Limiter::follow_server`]) before the response is fed back.
fn observe(
    named: &Named,
    config: &LimiterConfig,
    key: &str,
    response: &Response,
    endpoint: Option<&Endpoint>,
    verdict: Verdict,
) -> Signal {
    let max_retry_after = config.options.max_retry_after;
    let info = RateLimitInfo::from_headers(response.headers(), named.clock.system_now());
    // An account out of credit is not a throttle: waiting will not help.
    let signal = match verdict {
        Verdict::QuotaExhausted => Signal::Neutral,
        _ => config
            .classifier
            .classify(response.status(), response.headers(), &info),
    };
    // The quotas in other units (tokens) as the server sent them: advice bounds an exhausted
    // policy's reset to one unit's interval, which is not the time its tokens take to return.
    let unit_policies = crate::unit_quota::unit_policies(&info);
    // Only a throttle can stop the endpoint: on any other response a Retry-After is a hint
    // (RFC 9110 §10.2.3) and the rate-limit fields are advice on the pace.
    let info = if matches!(signal, Signal::Throttled { .. }) {
        info
    } else {
        info.into_advisory()
    };
    // A response from a cache tells nothing of the quota now (draft-ietf-httpapi-ratelimit-headers).
    let from_cache = || {
        response
            .headers()
            .get(http::header::AGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|age| age > 0)
    };
    if (!info.is_empty() || named.headers_seen()) && !from_cache() {
        named.saw_headers();
        // Bounded once, here, so that a bounded stop also ends (see `RateLimitInfo::bounded`).
        let bounded = info.bounded(max_retry_after, config.server_stop.max_exhausted_delay());
        if let (Some(endpoint), Some(quota)) = (endpoint, ServerQuota::from_info(&bounded)) {
            named.record(&endpoint.limiter.follow_server(quota));
        }
        named.headers.observe(key, bounded, named.clock.now());
        crate::unit_quota::observe(named, endpoint, key, unit_policies);
    }
    signal
}

impl Request<'_> {
    /// The time the request may go if it may go at once without looking at anything but the
    /// adaptive limiter (no strict window, no rate-limit header yet) and that limiter has its
    /// units now; they are then taken.
    fn go_now(&self, windows: &[KeyedWindow<'_>]) -> Option<Timestamp> {
        let (named, units) = (self.named, self.units);
        if !windows.is_empty() || named.headers_seen() {
            return None;
        }
        let permit = self.endpoint.limiter.try_acquire(units).ok()?;
        named.metrics.sent(units, Duration::ZERO);
        Some(permit.granted_at())
    }

    /// Step 3: every wait before a send, in one budget of `MaxWait`: a cost above the limiter's
    /// `max_cost` is refused first; then the quotas in tokens (a cost above one's limit is
    /// refused first), the server-ordered stop, the strict windows' ETA, the proactive delay,
    /// the adaptive queue, the windows' take, then the tokens' take.
    /// Returns when the request may go, or why it may not; a refused request takes nothing (but
    /// units of a window taken before another window or the queue refused it).
    async fn wait(
        &self,
        windows: &[KeyedWindow<'_>],
        start: Timestamp,
    ) -> std::result::Result<Timestamp, PacerError> {
        let (named, config, endpoint, units) =
            (self.named, &*self.config, &self.endpoint, self.units);
        let (key, limiter) = (&*endpoint.key, &endpoint.limiter);
        let clock = &named.clock;
        let options = &config.options;
        let max_wait = self.max_wait().unwrap_or(options.max_wait);
        let instance_count = named.instance_count(config);
        let _waiting = named.waiting();
        let refuse = |reason| Rejection::new(&named.name, &endpoint.key, reason);
        let past_timeout = |cause| {
            self.timeout().map(|(_, timeout)| {
                PacerError::Rejected(refuse(RejectReason::PastTimeout { cause, timeout }))
            })
        };
        let too_long = |cause, needed| {
            PacerError::Rejected(refuse(RejectReason::WaitTooLong {
                cause,
                needed,
                max_wait,
            }))
        };
        // Sleeps `wait` more if the budget allows.
        let sleep = |wait: Duration, cause| async move {
            let needed = (clock.now() - start) + wait;
            if needed > max_wait {
                return Err(too_long(cause, needed));
            }
            if let Some((end, _)) = self.timeout()
                && clock.now().saturating_add(wait) > end
            {
                return Err(past_timeout(cause).expect("a timeout"));
            }
            if !wait.is_zero() {
                clock.sleep_until(clock.now() + wait).await;
            }
            Ok(())
        };

        // A cost the limiter could never repay within MaxWait is refused before any wait (the
        // fast path never takes it: `try_acquire` refuses a debt that outlasts MaxWait).
        let max_cost = limiter.max_cost();
        if units > max_cost {
            return Err(PacerError::Rejected(refuse(RejectReason::CostAboveLimit {
                cost: units,
                max: max_cost,
            })));
        }
        // The quotas in other units (tokens): a cost above one is refused before anything else;
        // a wait for its refill is capped like an exhausted stop.
        let cap = config.server_stop.max_exhausted_delay();
        let mut unit_waited = Duration::ZERO;
        while let Some(wait) = unit_quota::wait(endpoint, self.tokens(), clock.now(), &refuse)? {
            let wait = wait.min(cap.saturating_sub(unit_waited));
            if wait.is_zero() {
                break;
            }
            sleep(wait, WaitCause::UnitQuota).await?;
            unit_waited += wait;
        }
        // The server-ordered stop (and, without windows to wait for first, the proactive delay:
        // one look at the header state serves both).
        let (delay, cause) = header_delay(
            named,
            config,
            key,
            start,
            options.max_retry_after,
            !windows.is_empty(),
        );
        sleep(delay, cause).await?;
        if !windows.is_empty() {
            // Each strict window's ETA, without taking anything yet.
            for w in windows {
                if let WindowAnswer::Wait(wait) =
                    w.eta(units, clock, instance_count, &refuse).await?
                {
                    sleep(wait, WaitCause::Window).await?;
                }
            }
            // The proactive algorithm's delay, on the state as it is now.
            let (delay, cause) = header_delay(
                named,
                config,
                key,
                clock.now(),
                options.max_retry_after,
                false,
            );
            sleep(delay, cause).await?;
        }
        // The adaptive limiter's queue, in the request's lane, with what is left of the budget
        // (and of the TotalTimeout).
        let now = clock.now();
        let waited = now - start;
        let left = max_wait.saturating_sub(waited);
        let timeout_left = self.timeout().map(|(end, _)| end - now);
        let _permit = limiter
            .acquire_within(units, timeout_left.map_or(left, |t| t.min(left)))
            .priority(self.priority())
            .await
            .map_err(|r| match (&r, timeout_left) {
                (pacer_core::Rejected::WaitTooLong { needed, .. }, Some(t))
                    if t < left && *needed <= left =>
                {
                    past_timeout(WaitCause::Queue).expect("a timeout")
                }
                _ => PacerError::Rejected(refuse(Rejection::queue_reason(&r, waited, max_wait))),
            })?;
        // Take the windows' units; if another process took them meanwhile, wait again.
        for w in windows {
            loop {
                let answer = match w.take(units, clock, instance_count, &refuse).await {
                    Ok(answer) => answer,
                    Err(e) => {
                        limiter.refund(units);
                        return Err(e);
                    }
                };
                match answer {
                    WindowAnswer::Go => break,
                    WindowAnswer::Wait(wait) => {
                        if let Err(e) = sleep(wait, WaitCause::Window).await {
                            limiter.refund(units);
                            return Err(e);
                        }
                    }
                }
            }
        }
        // Take the tokens; if concurrent requests took them meanwhile, wait again (still within
        // the exhausted-stop cap).
        let mut attempt = self
            .own
            .as_ref()
            .map_or(0, |o| o.attempt_sent.load(Ordering::Relaxed));
        loop {
            let force = unit_waited >= cap;
            let taken = unit_quota::take(
                endpoint,
                self.tokens(),
                clock.now(),
                &mut attempt,
                force,
                &refuse,
            );
            let wait = match taken {
                Ok(None) => break,
                Ok(Some(wait)) => wait.min(cap.saturating_sub(unit_waited)),
                Err(e) => {
                    limiter.refund(units);
                    return Err(e);
                }
            };
            if let Err(e) = sleep(wait, WaitCause::UnitQuota).await {
                limiter.refund(units);
                return Err(e);
            }
            unit_waited += wait;
        }
        if let Some(own) = &self.own {
            own.attempt_sent.store(attempt, Ordering::Relaxed);
        }
        let now = clock.now();
        if named.headers_seen() {
            named.headers.record_send(key, now);
        }
        named.metrics.sent(units, now - start);
        Ok(now)
    }
}

/// What the endpoint's rate-limit state asks for before the next request: a server-ordered stop
/// (a `Retry-After` capped by `MaxRetryAfter`, or an exhausted quota until its reset), else
/// (unless `stop_only`) the proactive algorithm's delay.
fn header_delay(
    named: &Named,
    config: &LimiterConfig,
    key: &str,
    now: Timestamp,
    max_retry_after: Duration,
    stop_only: bool,
) -> (Duration, WaitCause) {
    if !named.headers_seen() {
        return (Duration::ZERO, WaitCause::Throttling);
    }
    let Some(snapshot) = named.headers.snapshot(key, now) else {
        return (Duration::ZERO, WaitCause::Throttling);
    };
    let Some(info) = snapshot.info() else {
        return (Duration::ZERO, WaitCause::Throttling);
    };
    // Quotas in other units (tokens) are paced by their budgets, with the request's cost.
    let requests_only = unit_quota::without_budget_units(info);
    let info = requests_only.as_ref().unwrap_or(info);
    if info.is_empty() {
        return (Duration::ZERO, WaitCause::Throttling);
    }
    if let Some(stop) = config.server_stop.evaluate(info) {
        let delay = match stop.cause() {
            StopCause::RetryAfter => stop.delay().min(max_retry_after),
            _ => stop.delay(),
        };
        return (delay, WaitCause::ServerStop);
    }
    if stop_only {
        return (Duration::ZERO, WaitCause::ServerStop);
    }
    let Some(algorithm) = &config.algorithm else {
        return (Duration::ZERO, WaitCause::Throttling);
    };
    let states = named.headers.at(now);
    let ctx = ThrottlingContext::new(info, key)
        .with_since_observed(snapshot.since_observed())
        .with_since_last_request(snapshot.since_last_request())
        .with_states(&states);
    let result = algorithm.evaluate(&ctx);
    if result.should_throttle() {
        tracing::debug!(
            delay_ms = result.delay().as_millis() as u64,
            reason = result.reason().unwrap_or(""),
            "proactive delay"
        );
    }
    (result.delay(), WaitCause::Throttling)
}

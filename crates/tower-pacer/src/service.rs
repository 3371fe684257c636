//! `PacerService`: the driver of the engine for a tower service.

use crate::TimedOut;
use crate::layer::Shared;
use crate::{BoxError, ReplayBody};
use bytes::Bytes;
use http::{Request, Response};
use http_body::Body as HttpBody;
use pacer_core::{
    Attempt, BodyVerdict, Cost, Endpoint, EndpointKey, MaxConcurrent, MaxWait, Paced, PacerBody,
    Priority, QuotaExhausted, Refusal, Rejection, Retries, Signal, Sleep, Timestamp, TokenCost,
    TotalTimeout, WindowLimit, read_body,
};
use std::fmt;
use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_service::Service;

/// A service behind a [`PacerLayer`](crate::PacerLayer): each request waits for its endpoint's
/// rate and the server's orders, is sent, and teaches the engine what the response says.
#[derive(Clone)]
pub struct PacerService<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S: fmt::Debug> fmt::Debug for PacerService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacerService")
            .field("inner", &self.inner)
            .field("limiter", &self.shared.name)
            .finish_non_exhaustive()
    }
}

impl<S> PacerService<S> {
    pub(crate) fn new(inner: S, shared: Arc<Shared>) -> Self {
        PacerService { inner, shared }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// The future of a [`PacerService`]'s call.
pub type PacerFuture<R> = Pin<Box<dyn Future<Output = Result<R, BoxError>> + Send>>;

impl<S, B, R> Service<Request<B>> for PacerService<S>
where
    S: Service<Request<B>, Response = Response<R>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: ReplayBody + Send + 'static,
    R: HttpBody<Data = Bytes> + Unpin + Send + 'static,
    R::Error: Into<BoxError>,
{
    type Response = Response<PacerBody<R>>;
    type Error = BoxError;
    type Future = PacerFuture<Response<PacerBody<R>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The service that was made ready goes with the request; this one keeps a clone.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(drive(Arc::clone(&self.shared), inner, request))
    }
}

/// A copy of `request` to send again, if its body can be.
fn replay<B: ReplayBody>(request: &Request<B>) -> Option<Request<B>> {
    let mut copy = Request::new(request.body().replay()?);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}

/// One request through the engine: wait, send, read, and send again while a throttle allows.
async fn drive<S, B, R>(
    shared: Arc<Shared>,
    mut inner: S,
    request: Request<B>,
) -> Result<Response<PacerBody<R>>, BoxError>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Error: Into<BoxError>,
    B: ReplayBody,
    R: HttpBody<Data = Bytes> + Unpin,
    R::Error: Into<BoxError>,
{
    let clock = &shared.clock;
    let start = clock.now();
    // The request's own choices, read from its extensions as the middleware reads them.
    let extensions = request.extensions();
    let units = match extensions.get::<Cost>() {
        Some(cost) => cost.0,
        None => shared.cost(&request),
    };
    let key = match extensions.get::<EndpointKey>() {
        Some(key) => key.0.clone(),
        None => shared.key(request.uri()),
    };
    let mut own = Own {
        max_wait: extensions
            .get::<MaxWait>()
            .map_or(shared.options.max_wait, |m| m.0),
        priority: extensions.get::<Priority>().copied().unwrap_or_default(),
        tokens: match extensions.get::<TokenCost>() {
            Some(t) => Some(t.0),
            None => shared.tokens(&request),
        },
        timeout: extensions
            .get::<TotalTimeout>()
            .map(|t| (start.saturating_add(t.0), t.0)),
        not_before: None,
        max_concurrent: extensions.get::<MaxConcurrent>().map(|m| m.cap()),
    };
    let endpoint = shared.endpoint(&key, start);
    // Each strict window with the request's key in it.
    let windows = shared.windows_of(&request, endpoint.key());
    // The number under which the request's tokens are in flight, and whether an attempt holds
    // a slot among the endpoint's requests in flight; given back when it ends, however it ends.
    let mut in_flight = InFlight {
        shared: &shared,
        endpoint: &endpoint,
        attempt: 0,
        slot: false,
    };
    let mut retries = Retries::new(&shared.rules);
    let mut request = request;
    // The last throttled answer, given back if a retry cannot get through its wait.
    let mut last: Option<Response<PacerBody<R>>> = None;
    // What the caller is told (`Paced`): the waits of all attempts, the rate at the last send.
    let mut waited = Duration::ZERO;
    let paced = |attempts: u32, waited: Duration, rate: f64| {
        Paced::new(&shared.name, endpoint.key())
            .with_attempts(attempts)
            .with_waited(waited)
            .with_rate(rate)
    };
    loop {
        let attempt = retries.attempt();
        let copy = if retries.keeps_copy() && units > 0 {
            replay(&request)
        } else {
            None
        };
        // The engine's fast path: the request goes at once when nothing holds it now.
        let begin = if attempt == 1 { start } else { clock.now() };
        let fast = (units > 0 && own.not_before.is_none_or(|at| at <= begin))
            .then(|| {
                (shared.engine).go_now(
                    &shared.rules,
                    &endpoint,
                    &attempt_of(&shared, &windows, units, own, begin),
                    &mut in_flight.attempt,
                )
            })
            .flatten();
        let sent_at = if units == 0 {
            clock.now()
        } else if let Some(at) = fast {
            shared.metrics.sent(units, Duration::ZERO);
            at
        } else {
            let waiting = shared.metrics.waiting();
            let outcome = wait(
                &shared,
                &endpoint,
                &windows,
                units,
                own,
                begin,
                &mut in_flight.attempt,
            )
            .await;
            drop(waiting);
            match outcome {
                Ok(at) => {
                    shared.metrics.sent(units, at - begin);
                    at
                }
                Err(refused) => {
                    tracing::info!(attempt, endpoint = %key, "request not sent: {refused}");
                    if let Refusal::Rejected(reason) = &refused {
                        shared.metrics.rejected(reason.kind());
                    }
                    waited += clock.now() - begin;
                    let rate = endpoint.limiter().rate();
                    return match last {
                        Some(mut response) => {
                            (response.extensions_mut()).insert(paced(attempt - 1, waited, rate));
                            Ok(response)
                        }
                        // The middleware's refusal: the reason, the limiter, the endpoint and
                        // what was done until then.
                        None => Err(match refused {
                            Refusal::Rejected(reason) => {
                                Box::new(Rejection::new(paced(0, waited, rate), reason)) as BoxError
                            }
                            other => Box::new(other),
                        }),
                    };
                }
            }
        };
        // In flight from its grant until its answer is read or its send fails (each attempt
        // anew): given back on drop until then.
        in_flight.slot = units > 0;
        drop(last.take());
        waited += sent_at - begin;
        let rate = endpoint.limiter().rate();
        if attempt > 1 {
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
        }
        // The send, within what is left of the request's TotalTimeout, on the layer's clock.
        let sending = inner.call(request);
        let sent = match own.timeout {
            None => sending.await.map_err(Into::into),
            Some((end, timeout)) => {
                let paced = paced(attempt, waited, rate);
                within(clock.sleep_until(end), sending, timeout, paced).await
            }
        };
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                if units > 0 {
                    in_flight.slot = false;
                    shared
                        .metrics
                        .record(&shared.engine.failed(&endpoint, units, sent_at));
                }
                return Err(e);
            }
        };
        // A 429's JSON body for the classifier, any JSON body for a query's cost if asked.
        let (mut response, said) = read_body(&shared.rules, response).await;
        if let Some(BodyVerdict::QuotaExhausted { code }) = &said.verdict {
            tracing::info!(code = %code, "quota exhausted: not a throttle, not retried");
            response.extensions_mut().insert(QuotaExhausted::new(
                code.clone(),
                Arc::clone(&shared.name),
                Arc::clone(endpoint.key()),
            ));
        }
        let reading = shared.rules.read_with_cost(
            response.status(),
            response.headers(),
            said.verdict.as_ref(),
            said.cost.map(|c| c.with_units(units)).as_ref(),
            || clock.system_now(),
            shared.options.max_retry_after,
        );
        let now = clock.now();
        let throttled = matches!(reading.signal(), Signal::Throttled { .. });
        // The engine gives the slot back with the answer.
        in_flight.slot = false;
        let after = shared.engine.after(&endpoint, reading, units, sent_at, now);
        shared.metrics.record(&after.changes);
        // A request of 0 units is free, as in the middleware: it counts as no throttle and is
        // marked with no `Paced`.
        if throttled && units > 0 {
            shared.metrics.throttled();
        }
        match copy {
            Some(copy) if retries.again(&after) => {
                tracing::debug!(
                    attempt,
                    status = response.status().as_u16(),
                    "throttled, retrying"
                );
                own.not_before = after.retry_in.map(|d| clock.now() + d);
                last = Some(response);
                request = copy;
            }
            _ => {
                let mut response = response;
                if units > 0 {
                    (response.extensions_mut()).insert(paced(attempt, waited, rate));
                }
                return Ok(response);
            }
        }
    }
}

/// What a request chose for itself ([`MaxWait`], [`Priority`], [`TokenCost`],
/// [`TotalTimeout`], [`MaxConcurrent`]), or the limiter's.
#[derive(Clone, Copy)]
struct Own {
    max_wait: Duration,
    priority: Priority,
    tokens: Option<u64>,
    /// When its `TotalTimeout` ends, and the timeout.
    timeout: Option<(Timestamp, Duration)>,
    /// A retry's own wait after a refusal for contention (`After::retry_in`): not before then.
    not_before: Option<Timestamp>,
    /// Its own cap on its endpoint's requests in flight.
    max_concurrent: Option<NonZeroU32>,
}

/// `sending`, unless `deadline` comes first: then the request's `TotalTimeout` ran out during
/// the send, which is abandoned.
async fn within<F, R, E>(
    deadline: Sleep,
    sending: F,
    timeout: Duration,
    paced: Paced,
) -> Result<R, BoxError>
where
    F: Future<Output = Result<R, E>>,
    E: Into<BoxError>,
{
    let (mut deadline, mut sending) = (deadline, std::pin::pin!(sending));
    let mut paced = Some(paced);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(sent) = sending.as_mut().poll(cx) {
            return Poll::Ready(sent.map_err(Into::into));
        }
        deadline.as_mut().poll(cx).map(|()| {
            tracing::info!("request timed out (TotalTimeout)");
            let paced = paced.take().expect("the send ends once");
            Err(Box::new(TimedOut { paced, timeout }) as BoxError)
        })
    })
    .await
}

/// A request's tokens in flight (attempt 0: none), given back to the endpoint's budgets when
/// the request's future ends or is dropped; and an attempt's slot among the endpoint's
/// requests in flight (`MaxConcurrent`) while it holds one, given back if the future is dropped
/// between the grant and the answer (or the failure, which give it back themselves).
struct InFlight<'a> {
    shared: &'a Shared,
    endpoint: &'a Endpoint,
    attempt: u64,
    slot: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.slot {
            self.endpoint.limiter().landed();
        }
        self.shared.engine.landed(self.endpoint, self.attempt);
    }
}

/// The attempt the engine sees: the request's units, tokens, strict windows and limits, from
/// `start`.
fn attempt_of<'w>(
    shared: &Shared,
    windows: &'w [(&'w WindowLimit, String)],
    units: u64,
    own: Own,
    start: Timestamp,
) -> Attempt<'w> {
    Attempt::new(units, start, own.max_wait)
        .tokens(own.tokens)
        .windows(windows)
        .priority(own.priority)
        .timeout(own.timeout)
        .instance_count(shared.instance_count())
        .max_retry_after(shared.options.max_retry_after)
        .not_before(own.not_before)
        .max_concurrent(own.max_concurrent)
}

/// Every wait before a send, within one `MaxWait` from `start`, in the engine's order (the
/// middleware's: [`pacer_core::Engine::begin_wait`], pumped by [`pacer_core::drive::wait`]), with the strict windows the request is counted
/// in. Returns when the request may go.
async fn wait(
    shared: &Shared,
    endpoint: &Endpoint,
    windows: &[(&WindowLimit, String)],
    units: u64,
    own: Own,
    start: Timestamp,
    tokens_attempt: &mut u64,
) -> Result<Timestamp, Refusal> {
    let attempt = attempt_of(shared, windows, units, own, start);
    pacer_core::drive::wait(
        &shared.engine,
        &shared.rules,
        &shared.clock,
        endpoint,
        &attempt,
        tokens_attempt,
    )
    .await
}

//! `PacerService`: the driver of the engine for a tower service.

use crate::layer::Shared;
use crate::{BoxError, ReplayBody};
use http::{Request, Response};
use pacer_core::{
    Cost, Endpoint, EndpointKey, MaxWait, Priority, RejectReason, Timestamp, WaitCause,
    WindowAnswer, WindowRefusal,
};
use std::fmt;
use std::future::Future;
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
    R: Send + 'static,
{
    type Response = Response<R>;
    type Error = BoxError;
    type Future = PacerFuture<Response<R>>;

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
) -> Result<Response<R>, BoxError>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Error: Into<BoxError>,
    B: ReplayBody,
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
    let own = Own {
        max_wait: extensions
            .get::<MaxWait>()
            .map_or(shared.options.max_wait, |m| m.0),
        priority: extensions.get::<Priority>().copied().unwrap_or_default(),
    };
    let endpoint = shared.endpoint(&key, start);
    let max_attempts = shared.options.max_attempts.max(1);
    let mut request = request;
    let mut attempt = 1;
    // The last throttled answer, given back if a retry cannot get through its wait.
    let mut last: Option<Response<R>> = None;
    loop {
        let copy = if attempt < max_attempts && units > 0 {
            replay(&request)
        } else {
            None
        };
        let sent_at = if units == 0 {
            clock.now()
        } else {
            let begin = if attempt == 1 { start } else { clock.now() };
            match wait(&shared, &endpoint, units, own, begin).await {
                Ok(at) => at,
                Err(refused) => {
                    tracing::info!(attempt, endpoint = %key, "request not sent: {refused}");
                    return match last {
                        Some(response) => Ok(response),
                        None => Err(refused),
                    };
                }
            }
        };
        drop(last.take());
        if attempt > 1 {
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
        }
        let response = match inner.call(request).await {
            Ok(response) => response,
            Err(e) => {
                if units > 0 {
                    let _ = shared.engine.failed(&endpoint, units, sent_at);
                }
                return Err(e.into());
            }
        };
        let reading = shared.rules.read(
            response.status(),
            response.headers(),
            None,
            clock.system_now(),
            shared.options.max_retry_after,
        );
        let now = if reading.kept(shared.engine.headers_seen()) {
            clock.now()
        } else {
            sent_at
        };
        let after = shared
            .engine
            .after(&endpoint, &reading, units, sent_at, now);
        match copy {
            Some(copy) if after.retry => {
                tracing::debug!(
                    attempt,
                    status = response.status().as_u16(),
                    "throttled, retrying"
                );
                last = Some(response);
                request = copy;
                attempt += 1;
            }
            _ => return Ok(response),
        }
    }
}

/// What a request chose for itself ([`MaxWait`], [`Priority`]), or the limiter's.
#[derive(Clone, Copy)]
struct Own {
    max_wait: Duration,
    priority: Priority,
}

/// Every wait before a send, within one `MaxWait` from `start`, in the middleware's order: a
/// cost the limiter could never repay is refused first; the server-ordered stop; each strict
/// window's ETA; the proactive delay ([`pacer_core::Engine::hold`]); the adaptive limiter's
/// units in the request's lane; then each window's units are taken (waiting again if another
/// process took them meanwhile). Returns when the request may go; a refused request takes
/// nothing, but the units of a window taken before another window refused it.
async fn wait(
    shared: &Shared,
    endpoint: &Endpoint,
    units: u64,
    own: Own,
    start: Timestamp,
) -> Result<Timestamp, BoxError> {
    let (clock, options) = (&shared.clock, &shared.options);
    let max_wait = own.max_wait;
    let max_cost = endpoint.limiter().max_cost();
    if units > max_cost {
        return Err(Box::new(RejectReason::CostAboveLimit {
            cost: units,
            max: max_cost,
        }));
    }
    // Sleeps `wait` more if the budget allows.
    let sleep = |wait: Duration, cause: WaitCause| async move {
        let needed = (clock.now() - start) + wait;
        if needed > max_wait {
            return Err(RejectReason::WaitTooLong {
                cause,
                needed,
                max_wait,
            });
        }
        if !wait.is_zero() {
            clock.sleep_until(clock.now() + wait).await;
        }
        Ok(())
    };
    let windows = &shared.windows;
    let keys: Vec<String> = windows
        .iter()
        .map(|w| format!("{}:{}", w.name(), endpoint.key()))
        .collect();
    let instance_count = options.instance_count;
    let (engine, rules) = (&shared.engine, &shared.rules);
    // The server-ordered stop (and, with no window to wait for first, the proactive delay).
    let hold = engine.hold(
        rules,
        endpoint,
        start,
        options.max_retry_after,
        !windows.is_empty(),
    );
    sleep(hold.wait, hold.cause).await?;
    if !windows.is_empty() {
        for (w, key) in windows.iter().zip(&keys) {
            let answer = w.eta(key, units, clock, instance_count).await;
            if let WindowAnswer::Wait(wait) = answer.map_err(window_error)? {
                sleep(wait, WaitCause::Window).await?;
            }
        }
        let hold = engine.hold(rules, endpoint, clock.now(), options.max_retry_after, false);
        sleep(hold.wait, hold.cause).await?;
    }
    let waited = clock.now() - start;
    let left = max_wait.saturating_sub(waited);
    let _permit = endpoint
        .limiter()
        .acquire_within(units, left)
        .priority(own.priority)
        .await
        .map_err(|r| RejectReason::from_limiter(&r, waited, max_wait))?;
    for (w, key) in windows.iter().zip(&keys) {
        loop {
            let answer = match w.take(key, units, clock, instance_count).await {
                Ok(answer) => answer,
                Err(e) => {
                    endpoint.limiter().refund(units);
                    return Err(window_error(e));
                }
            };
            match answer {
                WindowAnswer::Go => break,
                WindowAnswer::Wait(wait) => {
                    if let Err(e) = sleep(wait, WaitCause::Window).await {
                        endpoint.limiter().refund(units);
                        return Err(Box::new(e));
                    }
                }
            }
        }
    }
    let now = clock.now();
    engine.sent(endpoint, now);
    Ok(now)
}

/// A window's refusal: the reason it gives a request that could never fit, else the store's
/// failure.
fn window_error(refusal: WindowRefusal) -> BoxError {
    match refusal {
        WindowRefusal::Rejected(reason) => Box::new(reason),
        other => Box::new(other),
    }
}

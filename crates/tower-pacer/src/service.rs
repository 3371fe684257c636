//! `PacerService`: the driver of the engine for a tower service.

use crate::TimedOut;
use crate::layer::Shared;
use crate::{BoxError, ReplayBody};
use bytes::Bytes;
use http::{Request, Response};
use http_body::Body as HttpBody;
use pacer_core::{
    BodyVerdict, Cost, EndpointKey, Exchange, Next, Paced, PacerBody, QuotaExhausted, Refusal,
    Rejection, RequestChoices, Sleep, read_body,
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

/// One request through the engine's [`Exchange`], pumped: wait, send, read, and send again
/// while a throttle allows.
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
    let choices = RequestChoices::from_extensions(extensions, || shared.tokens(&request));
    let endpoint = shared.endpoint(&key, start);
    // Each strict window with the request's key in it.
    let windows = shared.windows_of(&request, endpoint.key());
    let mut exchange = Exchange::new(endpoint, units, choices, &shared.rules, start);
    let driver = shared.driver();
    let mut request = request;
    // The last throttled answer, given back if a retry cannot get through its wait.
    let mut last: Option<Response<PacerBody<R>>> = None;
    loop {
        let copy = exchange.keeps_copy().then(|| replay(&request)).flatten();
        if let Err(refused) = pacer_core::drive::ready(&mut exchange, &driver, &windows).await {
            return match last {
                Some(mut response) => {
                    response.extensions_mut().insert(refused.paced);
                    Ok(response)
                }
                // The middleware's refusal: the reason, the limiter, the endpoint and what was
                // done until then.
                None => Err(match refused.refusal {
                    Refusal::Rejected(reason) => Box::new(Rejection::new(refused.paced, reason)),
                    other => Box::new(other) as BoxError,
                }),
            };
        }
        drop(last.take());
        if exchange.attempt_number() > 1 {
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
        }
        // The send, within what is left of the request's TotalTimeout, on the layer's clock.
        let sending = inner.call(request);
        let sent = match exchange.timeout() {
            None => sending.await.map_err(Into::into),
            Some((end, timeout)) => {
                let paced = exchange.paced_now(&driver);
                within(clock.sleep_until(end), sending, timeout, paced).await
            }
        };
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                exchange.failed(&driver, clock.now());
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
                Arc::clone(exchange.endpoint().key()),
            ));
        }
        let (status, now) = (response.status(), clock.now());
        let headers = response.headers();
        match exchange.answered(&driver, status, headers, Some(&said), now, copy.is_some()) {
            Next::Retry => {
                last = Some(response);
                request = copy.expect("a retry has its copy");
                exchange.next_wait(clock.now());
            }
            Next::Done(paced) => {
                if let Some(paced) = paced {
                    response.extensions_mut().insert(paced);
                }
                // The tokens it reserved, settled from the usage its body reports.
                if let Some(settlement) = exchange.settlement(response.headers()) {
                    let clock = Arc::clone(clock);
                    response = response.map(|body| body.settling(settlement, clock));
                }
                return Ok(response);
            }
        }
    }
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

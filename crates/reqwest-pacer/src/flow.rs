//! The request flow: key, cost, wait, send, classify, feed back, retry.

use crate::named::Named;
use crate::{
    Cost, EndpointKey, LimiterConfig, MaxConcurrent, MaxWait, Paced, PacerError, PacerMiddleware,
    Rejection, TokenCost, TotalTimeout, UseLimiter,
};
use http::Extensions;
use pacer_core::{Endpoint, Priority, Retries, Signal, Timestamp, WindowLimit};
use reqwest::Response;
use reqwest_middleware::{Error, Middleware, Next, Result};
use std::cell::RefCell;
use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::task::Poll;
use std::time::Duration;
use tracing::Instrument;

mod response;
mod wait;

use response::{mark, mark_in, observe, read_body};

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
        let in_url = || (config.key_mode).and_then(|mode| crate::key::key_in_url(mode, req.url()));
        let endpoint = match extensions.get::<EndpointKey>() {
            Some(k) => named.endpoint(&k.0, now),
            // A key that is a piece of the URL is looked up as it is.
            None => match in_url() {
                Some(key) => named.endpoint(key, now),
                None => KEY.with_borrow_mut(|key| {
                    key.clear();
                    config.key.write_key(&req, key);
                    let endpoint = named.endpoint(key, now);
                    if key.capacity() > KEY_BUFFER_KEPT {
                        *key = String::new();
                    }
                    endpoint
                }),
            },
        };
        let span = span(named, endpoint.key(), &req, units);
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
        let max_concurrent = extensions.get::<MaxConcurrent>().map(|m| m.cap());
        let own = (tokens.is_some()
            || max_wait.is_some()
            || priority.is_some()
            || timeout.is_some()
            || max_concurrent.is_some())
        .then(|| {
            Box::new(OwnLimits {
                tokens,
                attempt_sent: AtomicU64::new(0),
                max_wait,
                priority: priority.unwrap_or_default(),
                timeout,
                max_concurrent,
            })
        });
        let request = Request {
            named,
            config,
            endpoint,
            units,
            own,
            in_flight: false,
        };
        Box::pin(request.run(req, extensions, next, now).instrument(span))
    }
}

/// The copy of a request kept for a retry: [`reqwest::Request::try_clone`]'s result.
///
/// A request without a body is copied field by field: `try_clone` makes the request's own
/// configuration map on every copy to set a timeout that is most often unset, then replaces it
/// (about a seventh of the instructions Pacer spends on a request with retries on; see
/// docs/research/benchmarks-history.md). A request with a body is copied by `try_clone`, which alone can share its
/// bytes (and refuses a stream).
fn retry_copy(req: &reqwest::Request) -> Option<reqwest::Request> {
    if req.body().is_some() {
        return req.try_clone();
    }
    let mut copy = reqwest::Request::new(req.method().clone(), req.url().clone());
    *copy.headers_mut() = req.headers().clone();
    *copy.version_mut() = req.version();
    if let Some(timeout) = req.timeout() {
        *copy.timeout_mut() = Some(*timeout);
    }
    Some(copy)
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
    let body = match &mut result {
        Ok(response) if crate::body::body_limit(&config.rules, response) > 0 => {
            Some(Box::pin(read_body(named, &config, &key, response)).await)
        }
        _ => None,
    };
    if let Ok(response) = &result {
        let now = named.clock.now();
        let endpoint = named.endpoint(&key, now);
        let _ = observe(named, &config, &endpoint, response, body.as_ref(), 0, now);
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
    /// Whether an attempt was granted and has not landed yet (no response read, no failure
    /// reported): its slot among the endpoint's requests in flight is given back if the
    /// request's future is dropped meanwhile.
    in_flight: bool,
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
    /// Its own cap on its endpoint's requests in flight ([`MaxConcurrent`]).
    max_concurrent: Option<NonZeroU32>,
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.in_flight {
            // Dropped between its grant and its answer (mid-send, or while its body was read).
            self.endpoint.limiter().landed();
        }
        if let Some(own) = &mut self.own {
            (self.named.engine).landed(&self.endpoint, *own.attempt_sent.get_mut());
        }
    }
}

impl<'a> Request<'a> {
    /// Steps 3 to 7; `now` is when the request came in. (Not an `async fn`: its arguments would
    /// be held twice in the future, once as arguments and once as locals.)
    #[allow(clippy::manual_async_fn)] // on purpose: see above
    fn run<'f>(
        mut self,
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
            let (key, limiter) = (&**self.endpoint.key(), self.endpoint.limiter());
            // Each strict window with the request's key in it (most limiters have none: no
            // collecting then).
            let windows: Vec<(&WindowLimit, String)> = if config.windows.is_empty() {
                Vec::new()
            } else {
                config
                    .windows
                    .iter()
                    .filter_map(|w| Some((w.window_limit(), w.key_of(&req, key)?)))
                    .collect()
            };
            let mut retries = Retries::new(&config.rules);
            let mut last: Option<Response> = None;
            // What the caller is told (`Paced`, built at the end: its names are not kept across
            // the awaits): the waits of all attempts, the rate at the last send.
            let mut waited_in_all = Duration::ZERO;
            let mut rate;
            // A retry's own wait after a refusal for contention (`After::retry_in`).
            let mut not_before = None;
            loop {
                let attempt = retries.attempt();
                let retry_copy = if retries.keeps_copy() {
                    retry_copy(&req)
                } else {
                    None
                };
                // 3. Wait, within MaxWait.
                let start = if attempt == 1 { now } else { named.clock.now() };
                let fast = not_before.is_none_or(|at| at <= start);
                let waited = match fast.then(|| self.go_now(&windows, start)).flatten() {
                    Some(sent_at) => Ok(sent_at),
                    // Boxed: the rare wait would otherwise make every request's future larger.
                    None => Box::pin(self.wait(&windows, start, not_before)).await,
                };
                let sent_at = match waited {
                    Ok(sent_at) => sent_at,
                    Err(mut error) => {
                        waited_in_all += named.clock.now() - start;
                        rate = limiter.rate();
                        if let PacerError::Rejected(rejection) = &mut error {
                            *rejection = Rejection::new(
                                self.paced(0, waited_in_all, rate),
                                rejection.reason().clone(),
                            );
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
                // In flight from its grant until its answer is read or its send fails (each
                // attempt anew): given back on drop until then.
                self.in_flight = true;
                drop(last.take());
                waited_in_all += sent_at - start;
                rate = limiter.rate();
                // 4. Send (within the request's TotalTimeout, if it has one, on Pacer's clock: a
                // timed-out send comes back as the `TimedOut` error, neutral to the rate).
                let mut sending = next.clone().run(req, extensions);
                if let Some((end, timeout)) = self.timeout() {
                    let mut paced = Some(self.paced(attempt, waited_in_all, rate));
                    let mut deadline = named.clock.sleep_until(end);
                    sending = Box::pin(async move {
                        let mut sending = sending;
                        std::future::poll_fn(|cx| {
                            if let Poll::Ready(sent) = sending.as_mut().poll(cx) {
                                return Poll::Ready(sent);
                            }
                            deadline.as_mut().poll(cx).map(|()| {
                                tracing::info!(attempt, "request timed out (TotalTimeout)");
                                Err(Error::middleware(PacerError::TimedOut {
                                    paced: paced.take().expect("the send ends once"),
                                    timeout,
                                }))
                            })
                        })
                        .await
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
                // 5. Classify (a 429's body too, and a JSON body for its query cost when the rules
                // read it; boxed: most requests read none) and 6. feed back.
                // (Bound by the await, not before it: what the body said is not kept across the
                // read, so every request's future stays under the allocator's fast path.)
                let body = match last
                    .as_mut()
                    .filter(|r| crate::body::body_limit(&config.rules, r) > 0)
                {
                    Some(parked) => Some(Box::pin(read_body(named, config, key, parked)).await),
                    None => None,
                };
                // The engine gives the slot back with the answer or the failure.
                self.in_flight = false;
                let (signal, after) = match last.as_ref().filter(|_| failed.is_none()) {
                    Some(response) => {
                        let endpoint = &self.endpoint;
                        observe(
                            named,
                            config,
                            endpoint,
                            response,
                            body.as_ref(),
                            units,
                            sent_at,
                        )
                    }
                    None => {
                        named.record(&named.engine.failed(&self.endpoint, units, sent_at));
                        (Signal::Neutral, pacer_core::After::default())
                    }
                };
                drop(body);
                if !matches!(signal, Signal::Throttled { .. }) {
                    // Marked where it waits, and moved once, out to the caller.
                    if let Some(e) = failed {
                        return Err(e);
                    }
                    let response = last.as_mut().expect("parked above");
                    mark_in(response, self.paced(attempt, waited_in_all, rate));
                    return Ok(last.take().expect("parked above"));
                }
                let result = match failed {
                    Some(e) => Err(e),
                    None => Ok(last.take().expect("parked above")),
                };
                named.metrics.throttled();
                // 7. Retry as the engine says (a throttle the server allows to be sent again,
                // with attempts left), if the body could be copied.
                let refused = !after.retry;
                match (result, retry_copy) {
                    (Ok(response), Some(copy)) if retries.again(&after) => {
                        tracing::debug!(
                            attempt,
                            status = response.status().as_u16(),
                            "throttled, retrying"
                        );
                        not_before = after.retry_in.map(|d| named.clock.now() + d);
                        last = Some(response);
                        req = copy;
                    }
                    (Ok(response), _) if refused => {
                        tracing::debug!(
                            attempt,
                            status = response.status().as_u16(),
                            "throttled, not retried: the server said not to"
                        );
                        return Ok(mark(response, self.paced(attempt, waited_in_all, rate)));
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

    /// The request's own cap on its endpoint's requests in flight, if it set one.
    fn max_concurrent(&self) -> Option<NonZeroU32> {
        self.own.as_ref().and_then(|o| o.max_concurrent)
    }

    /// What the caller is told of this request: `attempts` sent, `waited` in all, the rate at
    /// the last send.
    fn paced(&self, attempts: u32, waited: Duration, rate: f64) -> Paced {
        Paced::new(&self.named.name, self.endpoint.key())
            .with_attempts(attempts)
            .with_waited(waited)
            .with_rate(rate)
    }
}

#[cfg(test)]
mod tests {
    use super::retry_copy;
    use std::time::Duration;

    /// Method, URL, headers, version, timeout, body.
    type Fields = (
        String,
        String,
        Vec<(String, Vec<u8>)>,
        reqwest::Version,
        Option<Duration>,
        Option<Vec<u8>>,
    );

    /// What a copy keeps, as far as reqwest shows it.
    fn fields(r: &reqwest::Request) -> Fields {
        let headers = r
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect();
        (
            r.method().to_string(),
            r.url().to_string(),
            headers,
            r.version(),
            r.timeout().copied(),
            r.body().and_then(|b| b.as_bytes()).map(<[u8]>::to_vec),
        )
    }

    #[test]
    fn the_retry_copy_is_try_clone_s() {
        let client = reqwest::Client::new();
        let requests = [
            client.get("http://api.test/a?b=c").build(),
            client
                .delete("http://api.test/items/7")
                .header("authorization", "Bearer x")
                .header("accept", "a")
                .header("accept", "b")
                .timeout(Duration::from_millis(1_500))
                .version(reqwest::Version::HTTP_2)
                .build(),
            client
                .post("http://api.test/items")
                .body("{\"n\":1}")
                .timeout(Duration::from_secs(3))
                .build(),
        ];
        for request in requests {
            let request = request.expect("a valid request");
            let copy = retry_copy(&request).expect("copied");
            let cloned = request.try_clone().expect("cloned");
            assert_eq!(fields(&copy), fields(&cloned));
            assert_eq!(fields(&copy), fields(&request));
        }
        // A stream cannot be sent twice: no copy, as with try_clone.
        let stream = futures_util::stream::iter([Ok::<_, std::io::Error>("x")]);
        let request = client
            .post("http://api.test/upload")
            .body(reqwest::Body::wrap_stream(stream))
            .build()
            .expect("a valid request");
        assert!(retry_copy(&request).is_none());
        assert!(request.try_clone().is_none());
    }
}

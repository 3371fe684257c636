//! The request flow: key, cost, then the engine's [`Exchange`] pumped: wait, send, read, retry.

use crate::named::Named;
use crate::{Cost, EndpointKey, LimiterConfig, PacerError, PacerMiddleware, Rejection, UseLimiter};
use http::Extensions;
use pacer_core::{Exchange, Next, Refusal, Refused, RequestChoices, WindowLimit};
use reqwest::Response;
use reqwest_middleware::{Error, Middleware, Next as NextMiddleware, Result};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use tracing::Instrument;

mod response;

use response::{mark, mark_in, read_body};

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
        next: NextMiddleware<'life2>,
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
        // The request's own choices: one lookup each.
        let choices = RequestChoices::from_extensions(extensions, || config.estimate_tokens(&req));
        let exchange = Exchange::new(endpoint, units, choices, &config.rules, now);
        Box::pin(run(named, config, exchange, req, extensions, next).instrument(span))
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

/// Steps 3 to 7, the engine's [`Exchange`] pumped: wait, send, read, retry. (Not an `async fn`:
/// its arguments would be held twice in the future, once as arguments and once as locals.)
#[allow(clippy::manual_async_fn)] // on purpose: see above
fn run<'f>(
    named: &'f Named,
    config: Arc<LimiterConfig>,
    mut exchange: Exchange,
    mut req: reqwest::Request,
    extensions: &'f mut Extensions,
    next: NextMiddleware<'f>,
) -> impl Future<Output = Result<Response>> + Send + 'f {
    async move {
        let driver = named.driver(&config);
        let key = Arc::clone(exchange.endpoint().key());
        let key = &*key;
        // Each strict window with the request's key in it (most limiters have none: no
        // collecting then).
        let windows: Vec<(&WindowLimit, String)> = (config.windows.iter())
            .filter_map(|w| Some((w.window_limit(), w.key_of(&req, key)?)))
            .collect();
        // The server's last answer, given back if a retry cannot get through its wait.
        let mut last: Option<Response> = None;
        loop {
            let copy = exchange.keeps_copy().then(|| retry_copy(&req)).flatten();
            // 3. Wait, within MaxWait.
            if let Err(refused) = pacer_core::drive::ready(&mut exchange, &driver, &windows).await {
                return match last {
                    Some(response) => Ok(mark(response, refused.paced)),
                    None => Err(Error::middleware(refusal_error(named, refused))),
                };
            }
            drop(last.take());
            // 4. Send (within the request's TotalTimeout, if it has one, on Pacer's clock: a
            // timed-out send comes back as the `TimedOut` error, neutral to the rate).
            let mut sending = next.clone().run(req, extensions);
            if let Some((end, timeout)) = exchange.timeout() {
                let mut paced = Some(exchange.paced_now(&driver));
                let mut deadline = named.clock.sleep_until(end);
                sending = Box::pin(async move {
                    let mut sending = sending;
                    std::future::poll_fn(|cx| {
                        if let Poll::Ready(sent) = sending.as_mut().poll(cx) {
                            return Poll::Ready(sent);
                        }
                        deadline.as_mut().poll(cx).map(|()| {
                            tracing::info!("request timed out (TotalTimeout)");
                            Err(Error::middleware(PacerError::TimedOut {
                                paced: paced.take().expect("the send ends once"),
                                timeout,
                            }))
                        })
                    })
                    .await
                });
            }
            // The response waits in `last` (free since the send, and kept across every await
            // anyway) while its body is read: any other way, every request's future would hold
            // room for a second response.
            match sending.await {
                Ok(response) => last = Some(response),
                Err(e) => {
                    exchange.failed(&driver, named.clock.now());
                    return Err(e);
                }
            }
            let parked = last.as_mut().expect("parked above");
            // 5. A 429's body for the classifier, a JSON body for its query cost when the rules
            // read it (boxed: most requests read none).
            let body = if crate::body::body_limit(&config.rules, parked) > 0 {
                Some(Box::pin(read_body(named, &config, key, parked)).await)
            } else {
                None
            };
            // 6. The engine reads the answer and 7. says whether to send it again.
            let (status, now) = (parked.status(), named.clock.now());
            match exchange.answered(
                &driver,
                status,
                parked.headers(),
                body.as_ref(),
                now,
                copy.is_some(),
            ) {
                Next::Retry => {
                    req = copy.expect("a retry has its copy");
                    exchange.next_wait(named.clock.now());
                }
                Next::Done(paced) => {
                    if let Some(paced) = paced {
                        mark_in(parked, paced);
                    }
                    let response = last.take().expect("parked above");
                    // The tokens it reserved, settled from the usage its body reports.
                    return Ok(match exchange.settlement(response.headers()) {
                        Some(settlement) => {
                            crate::body::settling(response, settlement, &named.clock)
                        }
                        None => response,
                    });
                }
            }
        }
    }
}

/// The error of a request refused before its first send: the reason, the limiter, the endpoint
/// and what was done until then.
fn refusal_error(named: &Named, refused: Refused) -> PacerError {
    match refused.refusal {
        Refusal::Rejected(reason) => PacerError::Rejected(Rejection::new(refused.paced, reason)),
        Refusal::Store { message } => PacerError::WindowStore {
            limiter: named.name.to_string(),
            message,
        },
        // A refusal of a kind added later: reported as a store's, with what it says.
        other => PacerError::WindowStore {
            limiter: named.name.to_string(),
            message: other.to_string(),
        },
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

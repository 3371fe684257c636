//! Pieces shared by the benchmarks and examples (included with `#[path]`): a stub that ends a
//! middleware chain without a network, a governor middleware to compare with, and options whose
//! limits are far above any load.
#![allow(dead_code, unreachable_pub)] // each includer uses what it needs

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use http::Extensions;
use pacer_core::LimiterOptions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};
use std::num::NonZeroU32;
use std::sync::Arc;

/// Answers every request with an empty 200, without sending it.
pub struct Stub;

#[async_trait::async_trait]
impl Middleware for Stub {
    async fn handle(
        &self,
        _: Request,
        _: &mut Extensions,
        _: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        Ok(Response::from(http::Response::new("")))
    }
}

/// The usual shape of a governor middleware: wait until the direct limiter allows, then send.
pub struct GovernorMiddleware(pub Arc<DefaultDirectRateLimiter>);

impl GovernorMiddleware {
    /// A limiter far above any load.
    pub fn unlimited() -> Self {
        GovernorMiddleware(Arc::new(RateLimiter::direct(Quota::per_second(
            NonZeroU32::MAX,
        ))))
    }
}

#[async_trait::async_trait]
impl Middleware for GovernorMiddleware {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        self.0.until_ready().await;
        next.run(req, extensions).await
    }
}

/// Limiter options whose rate is far above any load: Pacer never holds a request back.
pub fn far_above() -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(6e12);
    o.min_units_per_minute = 6e12;
    o.max_units_per_minute = 6e12;
    o
}

/// The floor under any client-side limiter of reqwest-middleware that keys by endpoint, retries a
/// throttle and tells the caller what it did: only the steps such a middleware cannot skip, each
/// the cheapest way, to measure what Pacer's own path costs above them
/// (`scripts/instructions.sh floor`; docs/BENCHMARKS.md).
///
/// Per request: the endpoint (`scheme://host:port`, looked up under a read lock), a unit taken
/// from its governor bucket, a copy kept for a retry while attempts are left (the same field by
/// field copy as Pacer's), the send, the status read (a 429's `Retry-After` waited, then the copy
/// sent), an additive increase of the endpoint's rate under its lock on a success, and Pacer's
/// own [`reqwest_pacer::Paced`] put on the response. No span, no metrics, no rate-limit fields
/// read, no adaptive controller beyond the one addition.
pub struct FloorMiddleware {
    name: Arc<str>,
    max_attempts: u32,
    endpoints: parking_lot::RwLock<
        std::collections::HashMap<String, Arc<FloorEndpoint>, foldhash::fast::RandomState>,
    >,
    /// The buckets' clock, made (and calibrated) with the middleware rather than in a request.
    clock: governor::clock::QuantaClock,
}

/// One endpoint of [`FloorMiddleware`].
struct FloorEndpoint {
    key: Arc<str>,
    bucket: DefaultDirectRateLimiter,
    rate: parking_lot::Mutex<f64>,
}

impl FloorMiddleware {
    /// A floor whose buckets are far above any load, sending each request at most `max_attempts`
    /// times.
    pub fn new(max_attempts: u32) -> Self {
        FloorMiddleware {
            name: Arc::from("bench"),
            max_attempts,
            endpoints: parking_lot::RwLock::default(),
            clock: governor::clock::QuantaClock::default(),
        }
    }

    fn endpoint(&self, key: &str) -> Arc<FloorEndpoint> {
        if let Some(e) = self.endpoints.read().get(key) {
            return Arc::clone(e);
        }
        let made = Arc::new(FloorEndpoint {
            key: Arc::from(key),
            bucket: RateLimiter::direct_with_clock(
                Quota::per_second(NonZeroU32::MAX),
                self.clock.clone(),
            ),
            rate: parking_lot::Mutex::new(1.0),
        });
        Arc::clone(self.endpoints.write().entry(key.to_owned()).or_insert(made))
    }
}

/// The copy of a request kept for a retry, as Pacer makes it: field by field without a body.
fn floor_retry_copy(req: &Request) -> Option<Request> {
    if req.body().is_some() {
        return req.try_clone();
    }
    let mut copy = Request::new(req.method().clone(), req.url().clone());
    *copy.headers_mut() = req.headers().clone();
    *copy.version_mut() = req.version();
    if let Some(timeout) = req.timeout() {
        *copy.timeout_mut() = Some(*timeout);
    }
    Some(copy)
}

/// Written out rather than made by `#[async_trait]`, as Pacer's is: the endpoint and the first
/// take need no await, and the boxed future is the send and the retries alone.
impl Middleware for FloorMiddleware {
    fn handle<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        req: Request,
        extensions: &'life1 mut Extensions,
        next: Next<'life2>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = reqwest_middleware::Result<Response>>
                + Send
                + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        let endpoint = self.endpoint(&req.url()[..url::Position::AfterPort]);
        let ready = endpoint.bucket.check().is_ok();
        Box::pin(self.run(endpoint, ready, req, extensions, next))
    }
}

impl FloorMiddleware {
    /// Not an `async fn`: its arguments would be held twice in the future (as arguments and as
    /// locals), past the allocator's fast path.
    #[allow(clippy::manual_async_fn)]
    #[allow(clippy::disallowed_methods)] // a real wait, timed as it passes
    fn run<'a>(
        &'a self,
        endpoint: Arc<FloorEndpoint>,
        mut ready: bool,
        mut req: Request,
        extensions: &'a mut Extensions,
        next: Next<'a>,
    ) -> impl std::future::Future<Output = reqwest_middleware::Result<Response>> + Send + 'a {
        async move {
            let mut waited = std::time::Duration::ZERO;
            let mut attempt = 0;
            loop {
                attempt += 1;
                let copy = if attempt < self.max_attempts {
                    floor_retry_copy(&req)
                } else {
                    None
                };
                if !ready {
                    let start = std::time::Instant::now();
                    // Boxed, as the sleep below: the rare waits would make every request's future
                    // larger (past the allocator's fast path).
                    Box::pin(endpoint.bucket.until_ready()).await;
                    waited += start.elapsed();
                }
                let mut response = next.clone().run(req, extensions).await?;
                let throttled = response.status() == http::StatusCode::TOO_MANY_REQUESTS;
                let rate = {
                    let mut rate = endpoint.rate.lock();
                    if !throttled {
                        *rate += 1.0 / *rate;
                    }
                    *rate
                };
                match copy {
                    Some(copy) if throttled => {
                        let wait = response
                            .headers()
                            .get(http::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok()?.parse().ok())
                            .map_or(
                                std::time::Duration::from_secs(1),
                                std::time::Duration::from_secs,
                            );
                        Box::pin(tokio::time::sleep(wait)).await;
                        waited += wait;
                        req = copy;
                        ready = endpoint.bucket.check().is_ok();
                    }
                    _ => {
                        let paced = reqwest_pacer::Paced::new(&self.name, &endpoint.key)
                            .with_attempts(attempt)
                            .with_waited(waited)
                            .with_rate(rate);
                        response.extensions_mut().insert(paced);
                        return Ok(response);
                    }
                }
            }
        }
    }
}

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

//! The middleware's own cost per request, without a network: the chain ends in a stub that
//! answers at once. Plain chain (stub only), Pacer in front of it (limits far above the load),
//! and a governor middleware in front of it, in one group.
//!
//! Run: `cargo bench -p reqwest-pacer --bench overhead`

use criterion::{Criterion, criterion_group, criterion_main};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use http::Extensions;
use pacer_core::LimiterOptions;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::num::NonZeroU32;
use std::sync::Arc;

/// Answers every request with an empty 200, without sending it.
struct Stub;

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

struct GovernorMiddleware(Arc<DefaultDirectRateLimiter>);

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

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut far_above = LimiterOptions::default();
    far_above.initial_units_per_minute = 6e12;
    far_above.min_units_per_minute = 6e12;
    far_above.max_units_per_minute = 6e12;
    let pacer = PacerMiddleware::builder()
        .limiter("bench", LimiterConfig::new(far_above))
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let plain = ClientBuilder::new(client.clone()).with(Stub).build();
    let paced = ClientBuilder::new(client.clone())
        .with(pacer)
        .with(Stub)
        .build();
    let governed = ClientBuilder::new(client)
        .with(GovernorMiddleware(Arc::new(RateLimiter::direct(
            Quota::per_second(NonZeroU32::MAX),
        ))))
        .with(Stub)
        .build();

    let mut g = c.benchmark_group("middleware_overhead");
    for (name, client) in [
        ("plain", &plain),
        ("pacer", &paced),
        ("governor", &governed),
    ] {
        let client: &ClientWithMiddleware = client;
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    client
                        .get("http://api.example.test/orders/1")
                        .send()
                        .await
                        .unwrap()
                })
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);

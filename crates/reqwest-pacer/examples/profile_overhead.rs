//! Sends requests through Pacer to a stub that answers at once (no network), for a profiler:
//! `valgrind --tool=callgrind target/release/examples/profile_overhead 20000`.

use http::Extensions;
use pacer_core::LimiterOptions;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, Middleware, Next};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};

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

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
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
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .with(Stub)
        .build();
    rt.block_on(async {
        for _ in 0..n {
            client
                .get("http://api.example.test/orders/1")
                .send()
                .await
                .unwrap();
        }
    });
}

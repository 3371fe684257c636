//! Sends requests through Pacer to a stub that answers at once (no network), for a profiler:
//! `valgrind --tool=callgrind target/release/examples/profile_overhead 20000`.

use reqwest_middleware::ClientBuilder;
use reqwest_pacer::{LimiterConfig, PacerMiddleware};

#[path = "support/mod.rs"]
mod support;

use support::{Stub, far_above};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let pacer = PacerMiddleware::builder()
        .limiter("bench", LimiterConfig::new(far_above()))
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

//! What a strict window costs a request when its Redis refuses connections, under `FailOpen`.
//!
//! A loopback API answers `200`; the same requests go through a limiter without a window and
//! through one whose strict window is kept in a Redis at a port where nothing listens (its store
//! policy `FailOpen`: send without the window). The difference of the mean times is what the dead
//! Redis adds to a request. The first request is timed on its own (it finds the store down).
//!
//! Run: `cargo run --release --features redis --example redis_down_latency [-- REQUESTS]`
#![allow(clippy::disallowed_methods)] // a measurement reads the clock

use pacer::redis::RedisWindowStore;
use pacer::{LimiterConfig, LimiterOptions, PacerMiddleware, StoreFailure, StrictWindow};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use std::time::{Duration, Instant};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn options() -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(6_000_000.0);
    o.min_units_per_minute = 600.0;
    o.max_units_per_minute = 6_000_000.0;
    o.max_wait = Duration::from_secs(30);
    o
}

fn client(config: LimiterConfig) -> ClientWithMiddleware {
    let pacer = PacerMiddleware::builder()
        .limiter("api", config)
        .build()
        .expect("a valid limiter");
    ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .build()
}

async fn mean(client: &ClientWithMiddleware, uri: &str, n: u32) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        client.get(uri).send().await.expect("sent");
    }
    started.elapsed() / n
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let api = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&api)
        .await;
    let uri = api.uri();

    let dead_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        l.local_addr().expect("bound").port()
    };
    let store = RedisWindowStore::builder()
        .connection_timeout(Duration::from_millis(300))
        .response_timeout(Duration::from_millis(300))
        .connect_lazy(&format!("redis://127.0.0.1:{dead_port}"))
        .expect("a valid URL");
    let window = StrictWindow::new("w", 1_000_000, Duration::from_secs(60), store)
        .expect("a valid window")
        .on_store_failure(StoreFailure::FailOpen);

    let plain = client(LimiterConfig::new(options()));
    let windowed = client(LimiterConfig::new(options()).window(window));

    mean(&plain, &uri, 20).await; // warm the connection pool
    let started = Instant::now();
    windowed.get(&uri).send().await.expect("sent");
    let first = started.elapsed();
    let without = mean(&plain, &uri, n).await;
    let with = mean(&windowed, &uri, n).await;
    println!(
        "{{\"requests\":{n},\"first_request_ms\":{:.3},\"mean_without_window_ms\":{:.3},\
         \"mean_with_dead_redis_ms\":{:.3},\"added_per_request_ms\":{:.3}}}",
        first.as_secs_f64() * 1e3,
        without.as_secs_f64() * 1e3,
        with.as_secs_f64() * 1e3,
        with.saturating_sub(without).as_secs_f64() * 1e3,
    );
}

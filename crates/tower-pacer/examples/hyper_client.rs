//! A `hyper-util` client behind `PacerLayer`, against a loopback server that admits 4 requests a
//! second and answers the rest with `429` and `Retry-After: 1`.
//!
//! `cargo run -p tower-pacer --example hyper_client`: 30 requests from 3 tasks. The layer
//! learns the server's rate from its throttles, waits out each `Retry-After`, and sends a
//! throttled request again; every request ends in a 200.

#![allow(clippy::disallowed_methods)] // the server counts real seconds; the example prints real time

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use pacer_core::LimiterOptions;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tower_layer::Layer;
use tower_pacer::PacerLayer;
use tower_service::Service;

/// Admits `per_second` requests in each whole second since it started; a 429 for the rest.
async fn serve(per_second: u32) -> String {
    let started = Instant::now();
    let counted = Arc::new(Mutex::new((0u64, 0u32)));
    let app = Router::new().fallback(move || {
        let counted = Arc::clone(&counted);
        async move {
            let second = started.elapsed().as_secs();
            let mut c = counted.lock().unwrap();
            if c.0 != second {
                *c = (second, 0);
            }
            c.1 += 1;
            if c.1 <= per_second {
                (StatusCode::OK, "ok").into_response()
            } else {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", "1")],
                    "slow down",
                )
                    .into_response()
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let base = serve(4).await;
    let mut options = LimiterOptions::default();
    options.max_wait = Duration::from_secs(30);
    let layer = PacerLayer::new(options)?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let service = layer.layer(client);

    let started = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..3 {
        let mut service = service.clone();
        let base = base.clone();
        tasks.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            for i in 0..10 {
                let request = http::Request::get(format!("{base}/items/{task}-{i}"))
                    .body(Full::default())
                    .expect("a valid request");
                let response = service.call(request).await?;
                statuses.push(response.status().as_u16());
            }
            Ok::<_, tower_pacer::BoxError>(statuses)
        }));
    }
    let mut ok = 0;
    for task in tasks {
        ok += task.await??.iter().filter(|s| **s == 200).count();
    }
    let snapshot = layer.limiter(&base).expect("the endpoint is known");
    println!(
        "{ok} of 30 requests answered 200 in {:.1} s; the server throttled {} attempts; the rate is now {:.0} a minute",
        started.elapsed().as_secs_f64(),
        snapshot.stats.throttled,
        snapshot.rate,
    );
    Ok(())
}

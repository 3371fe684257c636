//! The drop-in check: 1,000 requests from 50 tasks to a loopback server that never throttles,
//! through plain reqwest and through `PacerMiddleware::default()`, side by side in one run.
//!
//! Run: `cargo run --release -p reqwest-pacer --example dropin -- [ROUNDS]` (default 5). Each
//! round sends the 1,000 requests through plain reqwest and through a new
//! `PacerMiddleware::default()` (a new user's first requests), in alternating order so that
//! drift in the machine's load hits both alike. Prints each round's times, then the medians,
//! their ratio and the requests Pacer refused (the target: none refused, within 10 %).
#![allow(clippy::disallowed_methods)] // an example that measures real elapsed time

use axum::Router;
use axum::routing::get;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_pacer::PacerMiddleware;
use std::time::{Duration, Instant};

const TASKS: usize = 50;
const REQUESTS: usize = 1000;

/// A local keep-alive server whose `/` answers `ok`, and never throttles.
async fn serve() -> String {
    let app = Router::new().route("/", get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Sends `REQUESTS` requests from `TASKS` tasks; returns the time taken and how many failed
/// (a refusal by Pacer is a failure).
async fn burst(client: &ClientWithMiddleware, url: &str) -> (Duration, usize) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_owned());
            tokio::spawn(async move {
                let mut failed = 0;
                for _ in 0..REQUESTS / TASKS {
                    match client.get(&url).send().await {
                        Ok(r) => {
                            let _ = r.bytes().await;
                        }
                        Err(_) => failed += 1,
                    }
                }
                failed
            })
        })
        .collect();
    let mut failed = 0;
    for t in tasks {
        failed += t.await.unwrap();
    }
    (started.elapsed(), failed)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let url = serve().await;
    let reqwest = reqwest::Client::new();
    let plain = ClientBuilder::new(reqwest.clone()).build();
    // Warm the connections and the server up, outside the measurement.
    let _ = burst(&plain, &url).await;
    let (mut plain_ms, mut pacer_ms, mut refused) = (Vec::new(), Vec::new(), 0);
    for round in 0..rounds {
        let pacer = ClientBuilder::new(reqwest.clone())
            .with(PacerMiddleware::default())
            .build();
        let (p, q) = if round % 2 == 0 {
            let p = burst(&plain, &url).await;
            (p, burst(&pacer, &url).await)
        } else {
            let q = burst(&pacer, &url).await;
            (burst(&plain, &url).await, q)
        };
        assert_eq!(p.1, 0, "plain reqwest failed requests");
        refused += q.1;
        println!(
            "round {}: plain reqwest {:.1} ms, PacerMiddleware::default() {:.1} ms ({} refused)",
            round + 1,
            p.0.as_secs_f64() * 1e3,
            q.0.as_secs_f64() * 1e3,
            q.1
        );
        plain_ms.push(p.0.as_secs_f64() * 1e3);
        pacer_ms.push(q.0.as_secs_f64() * 1e3);
    }
    let (p, q) = (median(plain_ms), median(pacer_ms));
    println!(
        "{REQUESTS} requests from {TASKS} tasks, median of {rounds}: plain reqwest {p:.1} ms, \
         PacerMiddleware::default() {q:.1} ms, ratio {:.3}, refused {refused}",
        q / p
    );
}

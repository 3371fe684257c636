//! A soak on loopback: clients send through Pacer to a local server with a hidden quota (it
//! answers 429 with `Retry-After` beyond it) for minutes, while resident memory, live tokio tasks
//! and Pacer's state are printed every 10 s. Memory and tasks must stay flat.
//!
//! Run: `cargo run --release -p reqwest-pacer --example soak -- [SECONDS] [CLIENTS] [QUOTA_PER_SECOND]`
//! (defaults 300 s, 64 clients, 2,000 requests/s).
#![allow(clippy::disallowed_methods)] // a server and a soak read the real clock

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::get;
use pacer_core::LimiterOptions;
use reqwest_middleware::ClientBuilder;
use reqwest_pacer::{PacerErrorExt, PacerMiddleware};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<u64>().ok());
    let seconds = args.next().unwrap_or(300);
    let clients = args.next().unwrap_or(64) as usize;
    let quota = args.next().unwrap_or(2000) as usize;

    let accepted: Arc<Mutex<VecDeque<Instant>>> = Arc::default();
    let app = Router::new().route(
        "/",
        get(move || {
            let accepted = Arc::clone(&accepted);
            async move {
                let now = Instant::now();
                let mut a = accepted.lock().unwrap();
                while a
                    .front()
                    .is_some_and(|t| now - *t >= Duration::from_secs(1))
                {
                    a.pop_front();
                }
                let mut h = HeaderMap::new();
                if a.len() >= quota {
                    h.insert("retry-after", HeaderValue::from_static("1"));
                    return (StatusCode::TOO_MANY_REQUESTS, h);
                }
                a.push_back(now);
                (StatusCode::OK, h)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // Start at the quota and allow ten times it, so the limiter keeps finding the limit.
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(quota as f64 * 60.0);
    options.min_units_per_minute = 60.0;
    options.max_units_per_minute = quota as f64 * 600.0;
    options.max_wait = Duration::from_secs(5);
    let pacer = PacerMiddleware::new(options).unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, throttled, refused) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    for _ in 0..clients {
        let (client, url, stop) = (client.clone(), url.clone(), Arc::clone(&stop));
        let (ok, throttled, refused) = (
            Arc::clone(&ok),
            Arc::clone(&throttled),
            Arc::clone(&refused),
        );
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match client.get(&url).send().await {
                    Ok(r) if r.status() == 200 => ok.fetch_add(1, Ordering::Relaxed),
                    Ok(_) => throttled.fetch_add(1, Ordering::Relaxed),
                    Err(e) if e.is_rejected() => refused.fetch_add(1, Ordering::Relaxed),
                    Err(e) => panic!("transport error on loopback: {e}"),
                };
            }
        });
    }
    println!("second,ok,throttled,refused,rate_per_min,queue,alive_tasks,rss_kib,peak_rss_kib");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let state = pacer
            .endpoints("default")
            .ok()
            .and_then(|e| e.first().cloned())
            .and_then(|e| pacer.state("default", &e).ok())
            .and_then(|s| s.limiter);
        println!(
            "{},{},{},{},{:.0},{},{},{},{}",
            started.elapsed().as_secs(),
            ok.load(Ordering::Relaxed),
            throttled.load(Ordering::Relaxed),
            refused.load(Ordering::Relaxed),
            state.as_ref().map_or(0.0, |s| s.rate),
            state.as_ref().map_or(0, |s| s.queue_len),
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks(),
            status("VmRSS:"),
            status("VmHWM:")
        );
    }
    stop.store(true, Ordering::Relaxed);
}

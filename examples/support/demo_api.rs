//! A small API with a hidden quota, served on loopback, for the examples to run against without
//! the network: at most `limit` accepted requests in any sliding `window`; over it, `429 Too Many
//! Requests` with `Retry-After`. Optionally it tells clients its quota in IETF draft-11
//! `RateLimit` / `RateLimit-Policy` headers.
#![allow(dead_code, unreachable_pub, clippy::disallowed_methods)] // shared by several examples; a server reads its clock

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the API counts.
#[derive(Debug, Default)]
pub struct Counts {
    pub accepted: AtomicU64,
    pub throttled: AtomicU64,
}

/// A running demo API.
pub struct DemoApi {
    pub url: String,
    pub counts: Arc<Counts>,
}

struct Quota {
    limit: usize,
    window: Duration,
    headers: bool,
    accepted: std::sync::Mutex<VecDeque<Instant>>,
    counts: Arc<Counts>,
}

impl Quota {
    fn answer(&self) -> (StatusCode, HeaderMap) {
        let now = Instant::now();
        let mut accepted = self.accepted.lock().unwrap();
        while accepted.front().is_some_and(|t| now - *t >= self.window) {
            accepted.pop_front();
        }
        let mut headers = HeaderMap::new();
        let over = accepted.len() >= self.limit;
        // When the oldest accepted request leaves the window, one more fits.
        let frees_in = accepted
            .front()
            .map_or(Duration::ZERO, |t| self.window.saturating_sub(now - *t));
        let wait_secs = frees_in.as_secs_f64().ceil().max(1.0) as u64;
        if !over {
            accepted.push_back(now);
        }
        if self.headers {
            let remaining = self.limit - accepted.len();
            let policy = format!(
                "\"demo\";q={};w={}",
                self.limit,
                self.window.as_secs().max(1)
            );
            let current = format!("\"demo\";r={remaining};t={wait_secs}");
            headers.insert("ratelimit-policy", HeaderValue::from_str(&policy).unwrap());
            headers.insert("ratelimit", HeaderValue::from_str(&current).unwrap());
        }
        if over {
            self.counts.throttled.fetch_add(1, Ordering::Relaxed);
            headers.insert("retry-after", HeaderValue::from(wait_secs));
            (StatusCode::TOO_MANY_REQUESTS, headers)
        } else {
            self.counts.accepted.fetch_add(1, Ordering::Relaxed);
            (StatusCode::OK, headers)
        }
    }
}

/// Starts the API on a free loopback port: `limit` requests per `window`, with draft-11 headers
/// when `headers` is true.
pub async fn start(limit: usize, window: Duration, headers: bool) -> DemoApi {
    let counts = Arc::new(Counts::default());
    let quota = Arc::new(Quota {
        limit,
        window,
        headers,
        accepted: std::sync::Mutex::new(VecDeque::new()),
        counts: Arc::clone(&counts),
    });
    let app = Router::new().fallback(any(move || {
        let quota = Arc::clone(&quota);
        async move { quota.answer() }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    DemoApi { url, counts }
}

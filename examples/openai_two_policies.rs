//! OpenAI's two quotas at once: requests and tokens, each paced in its own unit.
//!
//! A loopback API enforces OpenAI's two policies, 60 requests a minute and 6,000 tokens a
//! minute, each a bucket that refills continuously (1 request and 100 tokens a second) and
//! starts full. It sends OpenAI's headers (`x-ratelimit-{limit,remaining,reset}-{requests,
//! tokens}`, the reset being the time until the bucket is full again) and answers `429` when
//! either bucket has not enough for a request. A request's cost in tokens is what its
//! `x-tokens` header says.
//!
//! Three workers send for 20 s: first 10 s of small requests (10 to 40 tokens: the requests
//! policy is the tighter), then 10 s of large ones (800 to 1,400 tokens: the tokens policy is).
//! Each request carries its cost in a [`TokenCost`] extension. At the end the example prints,
//! per policy, the peak use the server saw against the limit and the 429s it caused, and per
//! phase what was sent.
//!
//! Run: `cargo run --example openai_two_policies`
//!
//! What to expect: no 429 from either policy. In the first phase the requests policy sets the
//! pace and the tokens policy, barely touched, holds nothing back; in the second the tokens
//! policy sets it: a few requests, each waiting until its tokens are back, while the requests
//! policy has room to spare. The limiter's rate of requests stays the one the requests policy's
//! numbers give, never one made of the tokens' numbers. `docs/headers.md` ("Quotas in other
//! units") has the rules.
#![allow(clippy::disallowed_methods)] // a server and a demo read the clock

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::any;
use pacer::{LimiterConfig, LimiterOptions, PacerErrorExt, PacerMiddleware, TokenCost};
use reqwest_middleware::ClientBuilder;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PHASE: Duration = Duration::from_secs(10);
const WORKERS: u64 = 3;

/// One OpenAI policy: a bucket of `limit` that refills continuously over a minute.
struct Bucket {
    limit: f64,
    level: f64,
    /// The most ever in use at once (`limit - level`), and the 429s this policy caused.
    peak_use: f64,
    throttles: u64,
}

impl Bucket {
    fn new(limit: f64) -> Bucket {
        Bucket {
            limit,
            level: limit,
            peak_use: 0.0,
            throttles: 0,
        }
    }

    fn refill(&mut self, elapsed: Duration) {
        self.level = (self.level + self.limit / 60.0 * elapsed.as_secs_f64()).min(self.limit);
    }

    /// The time until the bucket is full again, as a Go duration (`12.345s`).
    fn reset(&self) -> String {
        format!("{:.3}s", (self.limit - self.level) * 60.0 / self.limit)
    }

    fn headers(&self, name: &str, h: &mut HeaderMap) {
        let mut put = |field: String, value: String| {
            h.insert(
                axum::http::HeaderName::try_from(field).unwrap(),
                HeaderValue::from_str(&value).unwrap(),
            );
        };
        put(
            format!("x-ratelimit-limit-{name}"),
            format!("{}", self.limit),
        );
        put(
            format!("x-ratelimit-remaining-{name}"),
            format!("{}", self.level.max(0.0).floor()),
        );
        put(format!("x-ratelimit-reset-{name}"), self.reset());
    }
}

struct Api {
    requests: Bucket,
    tokens: Bucket,
    last: Instant,
}

impl Api {
    fn answer(&mut self, cost: f64) -> (StatusCode, HeaderMap) {
        let now = Instant::now();
        let elapsed = now - self.last;
        self.last = now;
        self.requests.refill(elapsed);
        self.tokens.refill(elapsed);
        let status = if self.requests.level < 1.0 {
            self.requests.throttles += 1;
            StatusCode::TOO_MANY_REQUESTS
        } else if self.tokens.level < cost {
            self.tokens.throttles += 1;
            StatusCode::TOO_MANY_REQUESTS
        } else {
            self.requests.level -= 1.0;
            self.tokens.level -= cost;
            for b in [&mut self.requests, &mut self.tokens] {
                b.peak_use = b.peak_use.max(b.limit - b.level);
            }
            StatusCode::OK
        };
        let mut h = HeaderMap::new();
        self.requests.headers("requests", &mut h);
        self.tokens.headers("tokens", &mut h);
        (status, h)
    }
}

/// What one phase sent.
#[derive(Default)]
struct Sent {
    ok: u64,
    tokens: u64,
    other: u64,
    refused: u64,
}

async fn phase(
    client: &reqwest_middleware::ClientWithMiddleware,
    url: &str,
    costs: [u64; 4],
) -> Sent {
    let until = Instant::now() + PHASE;
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (client, url) = (client.clone(), url.to_owned());
            tokio::spawn(async move {
                let mut sent = Sent::default();
                let mut i = w as usize;
                while let Some(left) = until.checked_duration_since(Instant::now()) {
                    let cost = costs[i % costs.len()];
                    i += 1;
                    let request = client
                        .get(&url)
                        .header("x-tokens", cost)
                        .with_extension(TokenCost(cost))
                        .send();
                    // A request still waiting for its tokens when the phase ends is dropped.
                    match tokio::time::timeout(left, request).await {
                        Ok(Ok(r)) if r.status() == StatusCode::OK => {
                            sent.ok += 1;
                            sent.tokens += cost;
                        }
                        Ok(Ok(_)) => sent.other += 1,
                        Ok(Err(e)) if e.is_rejected() => sent.refused += 1,
                        Ok(Err(e)) => eprintln!("worker {w}: {e}"),
                        Err(_) => {}
                    }
                }
                sent
            })
        })
        .collect();
    let mut all = Sent::default();
    for w in workers {
        let s = w.await.unwrap();
        all.ok += s.ok;
        all.tokens += s.tokens;
        all.other += s.other;
        all.refused += s.refused;
    }
    all
}

#[tokio::main]
async fn main() {
    let api = Arc::new(Mutex::new(Api {
        requests: Bucket::new(60.0),
        tokens: Bucket::new(6_000.0),
        last: Instant::now(),
    }));
    let server = Arc::clone(&api);
    let app = Router::new().fallback(any(move |headers: HeaderMap| {
        let api = Arc::clone(&server);
        async move {
            let cost = headers
                .get("x-tokens")
                .and_then(|v| v.to_str().ok()?.parse::<f64>().ok())
                .unwrap_or(0.0);
            api.lock().unwrap().answer(cost)
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let pacer = PacerMiddleware::builder()
        .limiter("openai", LimiterConfig::new(LimiterOptions::default()))
        .build()
        .expect("valid options");
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();

    let report = |name: &str, s: &Sent| {
        println!(
            "{name}: {:>3} requests answered 200, {:>5} tokens, {} answered otherwise, {} refused",
            s.ok, s.tokens, s.other, s.refused,
        );
    };
    let small = phase(&client, &url, [10, 25, 40, 20]).await;
    report("10 s of small requests (10-40 tokens)   ", &small);
    let large = phase(&client, &url, [800, 1_400, 1_000, 1_200]).await;
    report("10 s of large requests (800-1,400 tokens)", &large);

    let api = api.lock().unwrap();
    for (name, b) in [("requests", &api.requests), ("tokens", &api.tokens)] {
        println!(
            "policy {name:<8}: peak use {:>5.0} of its limit {:>5.0}, 429s {}",
            b.peak_use, b.limit, b.throttles
        );
    }
    let endpoint = pacer.endpoints("openai").unwrap().remove(0);
    let limiter = pacer.state("openai", &endpoint).unwrap().limiter.unwrap();
    println!(
        "the limiter's rate: {:.0} requests/min, from the requests policy's numbers",
        limiter.rate
    );
}

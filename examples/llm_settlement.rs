//! A model API's tokens reserved before the send and settled from the answer's `usage`.
//!
//! A loopback API counts tokens as OpenAI and Anthropic say they do: 6,000 tokens a minute in a
//! bucket that refills continuously (100 a second) and starts full; a request reserves its
//! prompt and its `max_tokens` when it comes (`429` when the bucket holds less), the answer's
//! `x-ratelimit-*-tokens` headers count that reservation, and the bucket is given back what the
//! answer did not use at its end. Each request sends 200 tokens of prompt and may take 1,000;
//! it takes 100 to 300. Its body reports its `usage`, as a chat completion does.
//!
//! Two runs of 20 s, three workers each, every request with `TokenCost(1_200)` and
//! `OutputTokens(1_000)`: one reads each answer's body to its end, so Pacer settles the
//! reservation against the usage and gives the unused tokens back at once; the other drops the
//! body unread, so the reservation stands until the next answer's headers. The example prints
//! what each sent and the tokens the server counted.
//!
//! Run: `cargo run --example llm_settlement`
//!
//! What to expect: no 429 in either run; the run that reads its bodies sends more requests and
//! uses more of the quota (18 requests and 90 % of it against 16 and 79 % on a 2-core machine),
//! each request waiting only for the tokens the server really holds. `docs/llm.md` has the
//! rules.
#![allow(clippy::disallowed_methods)] // a server and a demo read the clock

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::any;
use pacer::{LimiterConfig, LimiterOptions, OutputTokens, PacerMiddleware, TokenCost};
use reqwest_middleware::ClientBuilder;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const RUN: Duration = Duration::from_secs(20);
const LIMIT: f64 = 6_000.0;
const PROMPT: u64 = 200;
const MAX_TOKENS: u64 = 1_000;

/// The API's tokens: a bucket of 6,000 that refills at 100 a second.
struct Tokens {
    level: f64,
    last: Instant,
    used: u64,
    throttles: u64,
}

impl Tokens {
    fn refill(&mut self) {
        let now = Instant::now();
        self.level = (self.level + LIMIT / 60.0 * (now - self.last).as_secs_f64()).min(LIMIT);
        self.last = now;
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        let reset = (LIMIT - self.level) * 60.0 / LIMIT;
        for (name, value) in [
            ("x-ratelimit-limit-tokens", format!("{LIMIT}")),
            (
                "x-ratelimit-remaining-tokens",
                format!("{}", self.level.max(0.0).floor()),
            ),
            ("x-ratelimit-reset-tokens", format!("{reset:.3}s")),
        ] {
            h.insert(name, HeaderValue::from_str(&value).unwrap());
        }
        h
    }
}

/// One request: reserve, answer with the reservation counted, give back what was not used.
fn answer(api: &Mutex<Tokens>, output: u64) -> (StatusCode, HeaderMap, String) {
    let mut t = api.lock().unwrap();
    t.refill();
    let reserved = (PROMPT + MAX_TOKENS) as f64;
    if t.level < reserved {
        t.throttles += 1;
        return (StatusCode::TOO_MANY_REQUESTS, t.headers(), String::new());
    }
    t.level -= reserved;
    let headers = t.headers();
    t.level += (MAX_TOKENS - output) as f64;
    t.used += PROMPT + output;
    let body = format!(
        r#"{{"object":"chat.completion","choices":[{{"message":{{"content":"…"}}}}],"usage":{{"prompt_tokens":{PROMPT},"completion_tokens":{output}}}}}"#
    );
    let mut headers = headers;
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    (StatusCode::OK, headers, body)
}

async fn run(read_bodies: bool) -> (u64, u64, u64, u64) {
    let api = Arc::new(Mutex::new(Tokens {
        level: LIMIT,
        last: Instant::now(),
        used: 0,
        throttles: 0,
    }));
    let served = Arc::clone(&api);
    let n = Arc::new(AtomicU64::new(0));
    let app = Router::new().fallback(any(move || {
        let (api, n) = (Arc::clone(&served), Arc::clone(&n));
        // The answers take 100, 200 and 300 tokens in turn.
        async move { answer(&api, 100 * (1 + n.fetch_add(1, Ordering::Relaxed) % 3)) }
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
        .with(pacer)
        .build();
    let until = Instant::now() + RUN;
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let (mut ok, mut other) = (0, 0);
                while let Some(left) = until.checked_duration_since(Instant::now()) {
                    let request = client
                        .post(&url)
                        .with_extension(TokenCost(PROMPT + MAX_TOKENS))
                        .with_extension(OutputTokens(MAX_TOKENS))
                        .send();
                    match tokio::time::timeout(left, request).await {
                        Ok(Ok(r)) if r.status() == StatusCode::OK => {
                            ok += 1;
                            if read_bodies {
                                r.bytes().await.expect("the body");
                            }
                        }
                        Ok(_) => other += 1,
                        Err(_) => {}
                    }
                }
                (ok, other)
            })
        })
        .collect();
    let (mut ok, mut other) = (0, 0);
    for w in workers {
        let (o, x) = w.await.unwrap();
        (ok, other) = (ok + o, other + x);
    }
    let t = api.lock().unwrap();
    (ok, other, t.used, t.throttles)
}

#[tokio::main]
async fn main() {
    // What 20 s of a quota of 6,000 a minute holds, the bucket's start included.
    let quota = LIMIT + LIMIT / 60.0 * RUN.as_secs_f64();
    for (name, read) in [
        ("bodies read, settled ", true),
        ("bodies dropped unread", false),
    ] {
        let (ok, other, used, throttles) = run(read).await;
        println!(
            "{name}: {ok:>3} requests answered 200, {other} otherwise; the server counted \
             {used:>5} tokens used ({:.0} % of {quota:.0}), {throttles} 429s",
            100.0 * used as f64 / quota
        );
    }
}

//! Shopify's GraphQL Admin API: a bucket of points, reported in each response's body.
//!
//! A loopback API charges each query its calculated cost from a bucket of 1,000 points that
//! fills at 50 points a second, as Shopify's GraphQL Admin API does: a query runs only if the
//! bucket holds its requested cost, and the difference from its actual cost is given back at
//! once. A query that does not fit is refused with a `200` and an error whose code is
//! `THROTTLED`. No header says any of it: the state is in the body's `extensions.cost`.
//!
//! Three workers send queries for 40 s, a mix of two kinds: a product list (requested 202
//! points, actual 102) and a shop lookup (requested 12, actual 2). The example runs twice:
//! with the library's defaults, then with `QueryCost` on ([`LimiterConfig::query_cost`]). It
//! prints what the bucket let through: the points the queries kept against what the bucket can
//! give in that time (1,000 at the start and 50 a second), the same once the first 20 s are
//! over (the steady pace, against the restore rate), and the `THROTTLED` answers, those the
//! server gave and those that reached the caller.
//!
//! Run: `cargo run --release --example shopify_graphql`
//!
//! What to expect: with the defaults every `THROTTLED` answer is a `200` like any other: the
//! limiter never slows down, the server refuses about a million queries, and the caller gets
//! each refusal. With `QueryCost` the limiter paces to the bucket and a refused query waits
//! until its points are back and is sent again: a `THROTTLED` answer at most, none of them
//! reaching the caller, and the restore rate used once the first fill is spent (the pace
//! keeps part of the bucket in reserve, so a run this short gets about 94 % of all it could).
//! `docs/headers.md` ("A GraphQL query's cost") has the rules.
#![allow(clippy::disallowed_methods)] // a server and a demo read the clock

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use pacer::{LimiterConfig, LimiterOptions, PacerMiddleware};
use reqwest_middleware::ClientBuilder;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const RUN: Duration = Duration::from_secs(40);
/// The first fill of the bucket is spent by then; what comes after is the steady pace.
const SETTLED: Duration = Duration::from_secs(20);
const WORKERS: usize = 3;
const MAXIMUM: f64 = 1_000.0;
const RESTORE_RATE: f64 = 50.0;
/// The two kinds of query: (requested cost, actual cost).
const KINDS: [(f64, f64); 2] = [(202.0, 102.0), (12.0, 2.0)];

/// Shopify's bucket of points, and what it let through.
struct Bucket {
    available: f64,
    start: Instant,
    last: Instant,
    points_kept: f64,
    /// Points kept once the run is [`SETTLED`] old.
    settled_points: f64,
    ran: u64,
    throttled: u64,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket {
            available: MAXIMUM,
            start: Instant::now(),
            last: Instant::now(),
            points_kept: 0.0,
            settled_points: 0.0,
            ran: 0,
            throttled: 0,
        }
    }

    /// Runs a query of `requested` points that keeps `actual`, or refuses it.
    fn answer(&mut self, requested: f64, actual: f64) -> String {
        let now = Instant::now();
        let elapsed = (now - self.last).as_secs_f64();
        self.last = now;
        self.available = (self.available + elapsed * RESTORE_RATE).min(MAXIMUM);
        let (head, actual_cost) = if self.available < requested {
            self.throttled += 1;
            (
                r#""errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}]"#,
                "null".to_owned(),
            )
        } else {
            self.available -= actual;
            self.points_kept += actual;
            if now - self.start >= SETTLED {
                self.settled_points += actual;
            }
            self.ran += 1;
            (r#""data":{"shop":{"name":"demo"}}"#, format!("{actual}"))
        };
        format!(
            r#"{{{head},"extensions":{{"cost":{{"requestedQueryCost":{requested},"actualQueryCost":{actual_cost},"throttleStatus":{{"maximumAvailable":{MAXIMUM:.1},"currentlyAvailable":{},"restoreRate":{RESTORE_RATE:.1}}}}}}}}}"#,
            self.available.floor()
        )
    }
}

/// What the callers saw: queries answered with data, and `THROTTLED` answers handed back.
#[derive(Default)]
struct Seen {
    data: u64,
    throttled: u64,
}

async fn run(config: LimiterConfig) -> (Seen, Served) {
    let bucket = Arc::new(Mutex::new(Bucket::new()));
    let server = Arc::clone(&bucket);
    let app = Router::new().route(
        "/admin/api/graphql.json",
        post(move |headers: HeaderMap| {
            let bucket = Arc::clone(&server);
            async move {
                let kind = headers
                    .get("x-kind")
                    .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
                    .unwrap_or(0);
                let (requested, actual) = KINDS[kind % KINDS.len()];
                let body = bucket.lock().unwrap().answer(requested, actual);
                (StatusCode::OK, [("content-type", "application/json")], body)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/admin/api/graphql.json",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let pacer = PacerMiddleware::builder()
        .limiter("shopify", config)
        .build()
        .expect("valid options");
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .build();
    let until = Instant::now() + RUN;
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let mut seen = Seen::default();
                let mut i = w;
                while let Some(left) = until.checked_duration_since(Instant::now()) {
                    i += 1;
                    let request = client
                        .post(&url)
                        .header("x-kind", i % KINDS.len())
                        .body(r#"{"query":"{ products(first: 100) { nodes { id } } }"}"#)
                        .send();
                    // A query still waiting when the run ends is dropped.
                    let Ok(answer) = tokio::time::timeout(left, request).await else {
                        break;
                    };
                    match answer {
                        Ok(r) => {
                            let text = r.text().await.unwrap_or_default();
                            if text.contains("THROTTLED") {
                                seen.throttled += 1;
                            } else {
                                seen.data += 1;
                            }
                        }
                        Err(e) => eprintln!("worker {w}: {e}"),
                    }
                }
                seen
            })
        })
        .collect();
    let mut all = Seen::default();
    for w in workers {
        let s = w.await.unwrap();
        all.data += s.data;
        all.throttled += s.throttled;
    }
    let b = bucket.lock().unwrap();
    let served = Served {
        ran: b.ran,
        points_kept: b.points_kept,
        settled_points: b.settled_points,
        throttled: b.throttled,
    };
    (all, served)
}

/// What the server let through and refused.
struct Served {
    ran: u64,
    points_kept: f64,
    settled_points: f64,
    throttled: u64,
}

#[tokio::main]
async fn main() {
    let can_give = MAXIMUM + RESTORE_RATE * RUN.as_secs_f64();
    for (name, config) in [
        (
            "the defaults         ",
            LimiterConfig::new(LimiterOptions::default()),
        ),
        (
            "with QueryCost       ",
            LimiterConfig::new(LimiterOptions::default()).query_cost(true),
        ),
    ] {
        let (seen, bucket) = run(config).await;
        let settled = RESTORE_RATE * (RUN - SETTLED).as_secs_f64();
        println!(
            "{name}: {:>4} queries ran, {:>5.0} of {can_give:.0} points ({:>3.0} %), after {} s \
             {:>3.0} % of the restore rate; THROTTLED: {:>6} from the server, {:>6} reached \
             the caller",
            bucket.ran,
            bucket.points_kept,
            100.0 * bucket.points_kept / can_give,
            SETTLED.as_secs(),
            100.0 * bucket.settled_points / settled,
            bucket.throttled,
            seen.throttled,
        );
    }
}

//! Loopback load: requests per second through plain reqwest, through Pacer (limits far above the
//! load) and through a governor-based middleware, in the same run, against the same local
//! keep-alive server.
//!
//! Run: `cargo run --release -p reqwest-pacer --example load_bench -- [SECONDS] [CONCURRENCY] [ROUNDS]`
//! (defaults 3 s, 32 tasks, 3 rounds; the rounds interleave the clients so drift in the machine's
//! load hits them alike). The clients: plain reqwest, Pacer, Pacer with `MaxAttempts = 1` (no
//! retry copy), governor. Prints one JSON line per client with the best and median requests/s,
//! then the ratios.
//!
//! `load_bench sequential CLIENT N` (CLIENT: plain, pacer, pacer_no_retry, governor,
//! pacer_headers: Pacer against a route that sends rate-limit fields, or floor and
//! floor_no_retry: the least a limiter that keys by endpoint and retries must do) sends N
//! requests one after another through one client and nothing else: run it under
//! `valgrind --tool=callgrind` for instruction counts per request, which the load of a shared
//! machine does not change.
//!
//! `load_bench only CLIENT SECONDS CONCURRENCY` runs one client alone under load and prints its
//! requests/s: run it under `perf record` to see where one client's time goes.
#![allow(clippy::disallowed_methods)] // a benchmark measures real elapsed time

use axum::Router;
use axum::routing::get;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

use support::{FloorMiddleware, GovernorMiddleware, far_above};

/// A local keep-alive server: `/` answers `ok`; `/limited` answers `ok` with IETF draft-11
/// rate-limit fields whose quota is far above any load (what most real APIs send).
async fn serve() -> String {
    let app = Router::new().route("/", get(|| async { "ok" })).route(
        "/limited",
        get(|| async {
            (
                [
                    ("ratelimit-policy", "\"default\";q=1000000000;w=60"),
                    ("ratelimit", "\"default\";r=999999999;t=60"),
                ],
                "ok",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn run(client: &ClientWithMiddleware, url: &str, secs: u64, concurrency: usize) -> f64 {
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, count, stop) = (
                client.clone(),
                url.to_owned(),
                Arc::clone(&count),
                Arc::clone(&stop),
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let r = client.get(&url).send().await.expect("loopback request");
                    let _ = r.bytes().await;
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let n = count.load(Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    for t in tasks {
        t.await.unwrap();
    }
    n as f64 / elapsed
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The clients, by name: plain reqwest; through Pacer (limits far above the load); through Pacer
/// with `MaxAttempts = 1` (no copy of each request is kept for a retry, so the difference is
/// what the retries cost); through governor.
fn clients() -> [(&'static str, ClientWithMiddleware); 4] {
    let reqwest = reqwest::Client::new();
    let plain = ClientBuilder::new(reqwest.clone()).build();
    let paced = |max_attempts| {
        let max_attempts = std::num::NonZeroU32::new(max_attempts).expect("at least 1");
        let pacer = PacerMiddleware::builder()
            .limiter(
                "bench",
                LimiterConfig::new(far_above()).max_attempts(max_attempts),
            )
            .build()
            .unwrap();
        ClientBuilder::new(reqwest.clone()).with(pacer).build()
    };
    let governed = ClientBuilder::new(reqwest.clone())
        .with(GovernorMiddleware::unlimited())
        .build();
    [
        ("plain_reqwest", plain),
        ("pacer", paced(4)),
        ("pacer_no_retry", paced(1)),
        ("governor", governed),
    ]
}

/// The URL a client is measured against: `pacer_headers` is Pacer against the route that sends
/// rate-limit fields, so that every request goes through the header state.
fn url_for(which: &str, base: &str) -> String {
    match which {
        "pacer_headers" => format!("{base}limited"),
        _ => base.to_owned(),
    }
}

/// One client by name (`plain`, `pacer`, `pacer_no_retry`, `governor`; `pacer_headers` is
/// `pacer`; `floor` and `floor_no_retry`, the least a limiter that retries must do, with and
/// without retries); anything else is plain.
fn client_named(which: &str) -> ClientWithMiddleware {
    let floor = |max_attempts| {
        ClientBuilder::new(reqwest::Client::new())
            .with(FloorMiddleware::new(max_attempts))
            .build()
    };
    match which {
        "floor" => return floor(4),
        "floor_no_retry" => return floor(1),
        _ => {}
    }
    let name = match which {
        "plain" => "plain_reqwest",
        "pacer_headers" => "pacer",
        other => other,
    };
    let all = clients();
    all.iter()
        .find(|(n, _)| *n == name)
        .unwrap_or(&all[0])
        .1
        .clone()
}

/// For the one-client modes: the client named by the argument after the mode, a server, and the
/// URL to send to.
async fn one_client(raw: &[String]) -> (String, ClientWithMiddleware, String) {
    let which = raw.get(1).map_or("plain", String::as_str);
    let url = url_for(which, &serve().await);
    (which.to_owned(), client_named(which), url)
}

#[tokio::main]
async fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some("sequential") {
        let n: usize = raw.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
        let (_, client, url) = one_client(&raw).await;
        for _ in 0..n {
            let r = client.get(&url).send().await.expect("loopback request");
            let _ = r.bytes().await;
        }
        return;
    }
    if raw.first().map(String::as_str) == Some("only") {
        let secs: u64 = raw.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
        let concurrency: usize = raw.get(3).and_then(|a| a.parse().ok()).unwrap_or(32);
        let (which, client, url) = one_client(&raw).await;
        let rps = run(&client, &url, secs, concurrency).await;
        println!("{{\"client\":\"{which}\",\"rps\":{rps:.0}}}");
        return;
    }
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let secs = args.first().copied().unwrap_or(3);
    let concurrency = args.get(1).copied().unwrap_or(32) as usize;
    let rounds = args.get(2).copied().unwrap_or(3) as usize;
    let url = serve().await;
    let clients = clients();

    // Warm the connection pool.
    run(&clients[0].1, &url, 1, concurrency).await;
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
    for _ in 0..rounds {
        for (i, (_, client)) in clients.iter().enumerate() {
            results[i].push(run(client, &url, secs, concurrency).await);
        }
    }
    let mut medians = Vec::new();
    for (i, (name, _)) in clients.iter().enumerate() {
        let best = results[i].iter().copied().fold(0.0, f64::max);
        let med = median(&mut results[i]);
        medians.push(med);
        println!(
            "{{\"client\":\"{name}\",\"median_rps\":{med:.0},\"best_rps\":{best:.0},\"rounds\":{rounds},\"seconds\":{secs},\"concurrency\":{concurrency}}}"
        );
    }
    println!(
        "{{\"pacer_over_plain\":{:.3},\"pacer_no_retry_over_plain\":{:.3},\"pacer_over_governor\":{:.3},\"governor_over_plain\":{:.3}}}",
        medians[1] / medians[0],
        medians[2] / medians[0],
        medians[1] / medians[3],
        medians[3] / medians[0]
    );
}

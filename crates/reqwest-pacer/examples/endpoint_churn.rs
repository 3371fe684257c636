//! A million distinct endpoint keys through one limiter, without a network (the chain ends in a
//! stub that answers at once), printing the endpoints kept and the peak resident memory as it
//! goes: the state stays bounded by `max_endpoints`.
//!
//! Run: `cargo run --release -p reqwest-pacer --example endpoint_churn -- [KEYS] [MAX_ENDPOINTS]`
//! (defaults 1,000,000 and 10,000).

use reqwest_middleware::ClientBuilder;
use reqwest_pacer::{EndpointKey, LimiterConfig, PacerMiddleware};

#[path = "support/mod.rs"]
mod support;

use support::Stub;

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

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let keys = args.next().unwrap_or(1_000_000);
    let max_endpoints = args.next().unwrap_or(10_000);
    let pacer = PacerMiddleware::builder()
        .limiter(
            "churn",
            LimiterConfig::default().max_endpoints(max_endpoints),
        )
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .with(Stub)
        .build();
    println!("keys,endpoints,rss_kib,peak_rss_kib");
    for i in 0..keys {
        client
            .get("http://api.test/x")
            .with_extension(EndpointKey(format!("tenant-{i}")))
            .send()
            .await
            .unwrap();
        if (i + 1) % (keys / 10).max(1) == 0 {
            println!(
                "{},{},{},{}",
                i + 1,
                pacer.endpoint_count("churn").unwrap(),
                status("VmRSS:"),
                status("VmHWM:")
            );
        }
    }
}

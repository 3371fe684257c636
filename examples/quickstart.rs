//! One API, the defaults: put Pacer in front of reqwest and send.
//!
//! The demo API allows 5 requests per second and answers `429` with `Retry-After` beyond that.
//! Twenty workers send 60 requests as fast as they can; Pacer slows them to what the API allows,
//! waits out each `Retry-After`, and retries the throttled requests.
//!
//! Run: `cargo run --example quickstart`

#[path = "support/demo_api.rs"]
mod demo_api;

use pacer::{PacerErrorExt, PacerMiddleware};
use reqwest_middleware::ClientBuilder;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[tokio::main]
async fn main() {
    let api = demo_api::start(5, Duration::from_secs(1), false).await;

    // The whole setup: the middleware with its defaults.
    let pacer = PacerMiddleware::default();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();

    let mut workers = Vec::new();
    for w in 0..20 {
        let client = client.clone();
        let url = format!("{}/orders", api.url);
        workers.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            for _ in 0..3 {
                match client.get(&url).send().await {
                    Ok(r) => statuses.push(r.status().as_u16()),
                    Err(e) if e.is_rejected() => {
                        eprintln!("worker {w}: refused before sending: {e}");
                    }
                    Err(e) => eprintln!("worker {w}: {e}"),
                }
            }
            statuses
        }));
    }
    let mut ok = 0;
    let mut other = 0;
    for w in workers {
        for status in w.await.unwrap() {
            if status == 200 { ok += 1 } else { other += 1 }
        }
    }

    let endpoint = pacer.endpoints("default").unwrap().remove(0);
    let state = pacer.state("default", &endpoint).unwrap();
    let limiter = state.limiter.unwrap();
    println!("requests answered 200:        {ok}");
    println!("requests answered otherwise:  {other}");
    println!(
        "429s the API sent:            {}",
        api.counts.throttled.load(Ordering::Relaxed)
    );
    println!(
        "requests the API accepted:    {}",
        api.counts.accepted.load(Ordering::Relaxed)
    );
    println!(
        "Pacer's rate for {endpoint}: {:.0} units/min (cut {} times)",
        limiter.rate, limiter.decreases
    );
}

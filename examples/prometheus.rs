//! Pacer's metrics in Prometheus: the exporter serves `/metrics` on loopback while two paced
//! clients work against a small API that throttles them now and then.
//!
//! Two limiters, `orders` and `search`, each a client of its own copy of the demo API (at most
//! 100 requests in any sliding 10 s window, 600 a minute; over it, 429 with `Retry-After`; the
//! `search` copy also sends draft-11 `RateLimit` headers). Each has 6 workers sending as fast as
//! they are let, with a queue of 4, so requests are paced, sometimes throttled and sometimes
//! refused. The example also exports each API's limit as `demo_api_limit_units_per_minute`, so
//! the dashboard can draw the rate against it.
//!
//! Run: `cargo run --example prometheus [-- SECONDS]` (default 300 s), then scrape
//! `http://127.0.0.1:9464/metrics` (`PACER_METRICS_ADDR` changes the address), e.g. with
//! `curl -s http://127.0.0.1:9464/metrics | grep '^pacer_'`, or point a Prometheus at it and
//! import `docs/grafana/pacer.json` into Grafana. `docs/metrics.md` lists the metrics.

#[path = "support/demo_api.rs"]
mod demo_api;
#[path = "support/prometheus_exporter.rs"]
mod prometheus_exporter;

use pacer::{LimiterConfig, LimiterOptions, PacerErrorExt, PacerMiddleware};
use reqwest_middleware::ClientBuilder;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

const QUOTA: usize = 100;
const WINDOW: Duration = Duration::from_secs(10);
const WORKERS: usize = 6;

struct Client {
    name: &'static str,
    api: demo_api::DemoApi,
    refused: Arc<AtomicU64>,
}

async fn start(name: &'static str, headers: bool, until: Instant) -> Client {
    let api = demo_api::start(QUOTA, WINDOW, headers).await;
    let per_minute = QUOTA as f64 * 60.0 / WINDOW.as_secs_f64();
    metrics::gauge!(prometheus_exporter::SERVER_LIMIT, "limiter" => name).set(per_minute);
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(300.0);
    options.queue_limit = 4;
    let pacer = PacerMiddleware::builder()
        .limiter(name, LimiterConfig::new(options))
        .build()
        .expect("valid options");
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .build();
    let refused = Arc::new(AtomicU64::new(0));
    for _ in 0..WORKERS {
        let (client, url, refused) = (
            client.clone(),
            format!("{}/{name}", api.url),
            Arc::clone(&refused),
        );
        tokio::spawn(async move {
            while Instant::now() < until {
                match client.get(&url).send().await {
                    Ok(_) => {}
                    Err(e) if e.is_rejected() => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        return;
                    }
                }
            }
        });
    }
    Client { name, api, refused }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u64 = match std::env::args().nth(1) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("seconds expected, not {s:?}"))?,
        None => 300,
    };
    let addr: SocketAddr = std::env::var("PACER_METRICS_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:9464".to_owned())
        .parse()?;
    // Installed before the first request; Pacer registers its metrics with it then.
    prometheus_exporter::builder(addr)?.install()?;
    println!("scrape http://{addr}/metrics (for {seconds} s)");

    let until = Instant::now() + Duration::from_secs(seconds);
    let clients = [
        start("orders", false, until).await,
        start("search", true, until).await,
    ];
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    tick.tick().await;
    while Instant::now() < until {
        tick.tick().await;
        for c in &clients {
            println!(
                "{:<7} accepted {:>5}  429s {:>4}  refused {:>5}",
                c.name,
                c.api.counts.accepted.load(Ordering::Relaxed),
                c.api.counts.throttled.load(Ordering::Relaxed),
                c.refused.load(Ordering::Relaxed),
            );
        }
    }
    Ok(())
}

//! Pacer's own controller finds a hidden quota and holds just under it; with the server's
//! rate-limit headers, the limiter follows the server's own numbers.
//!
//! Three clients, each against its own copy of the demo API, which accepts at most 100 requests
//! in any sliding 10 s window (600 a minute) and tells nobody: AIMD (the default controller),
//! Pacer's controller (`Controller = "Pacer"`, with `QuotaWindow` set to the API's window), and
//! Pacer's controller again against a copy of the API that also sends IETF draft-11
//! `RateLimit-Policy` and `RateLimit` fields. Each has 12 workers sending as fast as they are let,
//! starting at 300 a minute, for 45 s. Every 5 s the example prints each limiter's rate; at the
//! end, the share of the quota each got and the 429s it cost, and what each learned of the API's
//! limiter (its kind, limit and window).
//!
//! Run: `cargo run --example learn_the_limit`
//!
//! What to expect (a shared machine moves the figures a little):
//! - AIMD climbs 120 a minute every 10 s, reaches the quota after about 30 s and saws under it.
//! - Pacer's controller grows a quarter a second until the first 429. It takes the requests the
//!   server accepted over the window as the limit and climbs back over 30 s (`RecoveryTime`) to
//!   1.5 % under it.
//! - Following the headers, the rate is what the server says is left, and hardly a request is
//!   refused.
//!
//! `docs/controllers.md` explains each.

#[path = "support/demo_api.rs"]
mod demo_api;

use pacer::{ControllerKind, LimiterConfig, LimiterOptions, PacerErrorExt, PacerMiddleware};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The hidden quota: requests per window.
const QUOTA: usize = 100;
const WINDOW: Duration = Duration::from_secs(10);
const RUN: Duration = Duration::from_secs(45);
const WORKERS: usize = 12;

struct Contender {
    name: &'static str,
    api: demo_api::DemoApi,
    pacer: PacerMiddleware,
    client: ClientWithMiddleware,
    refused: Arc<AtomicU64>,
}

async fn contender(name: &'static str, controller: ControllerKind, headers: bool) -> Contender {
    let api = demo_api::start(QUOTA, WINDOW, headers).await;
    let mut options = LimiterOptions::default();
    options.controller = controller;
    options.initial_units_per_minute = Some(300.0);
    // Pacer's estimate is what the server accepted over its window.
    options.quota_window = WINDOW;
    let pacer = PacerMiddleware::builder()
        .limiter("demo", LimiterConfig::new(options))
        .build()
        .expect("valid options");
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();
    Contender {
        name,
        api,
        pacer,
        client,
        refused: Arc::new(AtomicU64::new(0)),
    }
}

impl Contender {
    /// Starts the workers; they stop at `until`.
    fn send_until(&self, until: Instant) -> Vec<tokio::task::JoinHandle<()>> {
        (0..WORKERS)
            .map(|_| {
                let client = self.client.clone();
                let url = format!("{}/orders", self.api.url);
                let refused = Arc::clone(&self.refused);
                tokio::spawn(async move {
                    while Instant::now() < until {
                        match client.get(&url).send().await {
                            Ok(_) => {}
                            Err(e) if e.is_rejected() => {
                                // Refused before sending (the queue or the wait was too long).
                                refused.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                            Err(e) => {
                                eprintln!("error: {e}");
                                return;
                            }
                        }
                    }
                })
            })
            .collect()
    }

    /// The limiter's rate now, units per minute (before the first request, none).
    fn rate(&self) -> Option<f64> {
        let endpoint = self.pacer.endpoints("demo").ok()?.into_iter().next()?;
        Some(self.pacer.state("demo", &endpoint).ok()?.limiter?.rate)
    }

    /// What the limiter learned of the API's own limiter (none before a 429).
    fn server(&self) -> Option<pacer::ServerModel> {
        let endpoint = self.pacer.endpoints("demo").ok()?.into_iter().next()?;
        self.pacer.state("demo", &endpoint).ok()?.server
    }
}

#[tokio::main]
async fn main() {
    let contenders = [
        contender("AIMD", ControllerKind::Aimd, false).await,
        contender("Pacer", ControllerKind::Pacer, false).await,
        contender("Pacer + headers", ControllerKind::Pacer, true).await,
    ];
    let per_minute = QUOTA as f64 * 60.0 / WINDOW.as_secs_f64();
    println!(
        "hidden quota: {QUOTA} requests per {} s ({per_minute:.0} a minute)\n",
        WINDOW.as_secs()
    );
    print!("{:>4}", "s");
    for c in &contenders {
        print!("{:>17}", c.name);
    }
    println!("   (limiter rate, requests a minute)");

    let start = Instant::now();
    let workers: Vec<_> = contenders
        .iter()
        .flat_map(|c| c.send_until(start + RUN))
        .collect();
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(5), Duration::from_secs(5));
    while start.elapsed() < RUN {
        tick.tick().await;
        print!("{:>4}", start.elapsed().as_secs());
        for c in &contenders {
            match c.rate() {
                Some(r) => print!("{r:>17.0}"),
                None => print!("{:>17}", "-"),
            }
        }
        println!();
    }
    // What the API accepted within the run; requests still waiting or in flight are dropped.
    let counts: Vec<(u64, u64, u64)> = contenders
        .iter()
        .map(|c| {
            (
                c.api.counts.accepted.load(Ordering::Relaxed),
                c.api.counts.throttled.load(Ordering::Relaxed),
                c.refused.load(Ordering::Relaxed),
            )
        })
        .collect();
    for w in &workers {
        w.abort();
    }

    // The quota's pace over the run, QUOTA every WINDOW (as the simulator counts its share; a
    // window that starts empty lets a client that bursts at the start take a little more).
    let most = QUOTA as f64 * RUN.as_secs_f64() / WINDOW.as_secs_f64();
    println!(
        "\n{:<16}{:>10}{:>12}{:>8}{:>9}",
        "", "accepted", "of quota", "429s", "refused"
    );
    for (c, (accepted, throttled, refused)) in contenders.iter().zip(counts) {
        println!(
            "{:<16}{accepted:>10}{:>11.0}%{throttled:>8}{refused:>9}",
            c.name,
            accepted as f64 / most * 100.0,
        );
    }
    println!("\nwhat each learned of the API's limiter (docs/server-model.md):");
    for c in &contenders {
        match c.server() {
            Some(m) => println!(
                "{:<16}{}, {:.0} per {:?} (confidence {:.2}{})",
                c.name,
                m.kind,
                m.limit,
                m.window,
                m.confidence,
                if m.from_fields {
                    ", from its fields"
                } else {
                    ""
                }
            ),
            None => println!("{:<16}nothing yet (no 429)", c.name),
        }
    }
}

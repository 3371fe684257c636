//! Keys and costs: one rate per API area, named limiters, and requests that cost more than one
//! unit.
//!
//! - The `github` limiter keys requests by host and first path segment, so `/search` (which the
//!   demo API limits to its own small quota) never slows `/repos` down.
//! - A `batch` request is charged 10 units with the `Cost` extension; a health check is free.
//! - The `reports` limiter is chosen per request with `UseLimiter`.
//!
//! Run: `cargo run --example per_endpoint`

#[path = "support/demo_api.rs"]
mod demo_api;

use pacer::{Cost, KeyMode, LimiterConfig, LimiterOptions, PacerMiddleware, UseLimiter};
use reqwest_middleware::ClientBuilder;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let repos = demo_api::start(20, Duration::from_secs(1), false).await;
    let search = demo_api::start(2, Duration::from_secs(1), false).await;

    let mut reports = LimiterOptions::default();
    reports.initial_units_per_minute = Some(120.0);
    reports.min_units_per_minute = 60.0;
    reports.max_units_per_minute = 240.0;

    let pacer = PacerMiddleware::builder()
        .limiter(
            "github",
            LimiterConfig::default().endpoint_key(KeyMode::HostAndFirstSegment),
        )
        .limiter("reports", LimiterConfig::new(reports))
        .default_limiter("github")
        .build()
        .expect("valid options");
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();

    #[allow(clippy::disallowed_methods)] // the example reports real elapsed time
    let started = Instant::now();
    // Search is slow; repos must not wait for it.
    let search_client = client.clone();
    let search_url = format!("{}/search", search.url);
    let searching = tokio::spawn(async move {
        for _ in 0..8 {
            let _ = search_client.get(&search_url).send().await;
        }
    });
    for i in 0..20 {
        client
            .get(format!("{}/repos/{i}", repos.url))
            .send()
            .await
            .unwrap();
    }
    println!("20 repos requests done after {:?}", started.elapsed());
    searching.await.unwrap();
    println!("8 search requests done after {:?}", started.elapsed());

    // A batch costs 10 units; a health check is free.
    client
        .post(format!("{}/repos/batch", repos.url))
        .with_extension(Cost(10))
        .send()
        .await
        .unwrap();
    client
        .get(format!("{}/repos/health", repos.url))
        .with_extension(Cost(0))
        .send()
        .await
        .unwrap();

    // Another limiter, chosen per request.
    client
        .get(format!("{}/reports/daily", repos.url))
        .with_extension(UseLimiter::new("reports"))
        .send()
        .await
        .unwrap();

    for limiter in pacer.limiter_names() {
        for endpoint in pacer.endpoints(limiter).unwrap() {
            let s = pacer.state(limiter, &endpoint).unwrap().limiter.unwrap();
            println!(
                "{limiter:8} {endpoint:32} rate {:6.0}/min  units {:4}  throttled {}",
                s.rate, s.stats.granted_units, s.stats.throttled
            );
        }
    }
}

//! Limiters from a configuration file: the .NET adaptive limiter's `appsettings.json` shape,
//! loaded unchanged.
//!
//! Loads `config/appsettings.json` (two limiters: `orders-api` with AIMD, `search-api` with
//! CUBIC), prints what each limiter got, then sends requests through the default limiter to a
//! demo API that allows 5 requests per second.
//!
//! `PACER__…` environment variables override the file, e.g.
//! `PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE=900`. A bad value is
//! reported with its full path: try
//! `PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MINUNITSPERMINUTE=0`.
//!
//! In an application, enable Pacer's `config` feature and call `pacer::from_config_file`; this
//! example uses the `pacer-config` crate directly so that it runs without `--features config`.
//!
//! Run: `cargo run --example from_config`

#[path = "support/demo_api.rs"]
mod demo_api;

use pacer::UseLimiter;
use pacer_config::ConfigLoader;
use reqwest_middleware::ClientBuilder;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[tokio::main]
async fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/appsettings.json");
    let settings = match ConfigLoader::new().file(path).env().load() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("the configuration ({path} and PACER__ variables) is not valid:\n{e}");
            std::process::exit(1);
        }
    };

    println!("from {path}:");
    for (name, s) in settings.limiters() {
        let default = if name == settings.default_limiter() {
            " (default)"
        } else {
            ""
        };
        println!("  {name}{default}");
        println!("    options:      {}", s.options);
        println!("    throttling:   {:?}", s.throttling);
        println!("    endpoint key: {}", s.endpoint_key.as_str());
        let c = s.classifier.statuses();
        println!(
            "    throttled:    {:?}, overloaded {:?}, with Retry-After {:?}, when exhausted {:?}, gRPC {:?}",
            c.throttled,
            c.overloaded,
            c.throttled_with_retry_after,
            c.throttled_when_exhausted,
            c.grpc_throttled
        );
    }

    // The same call an application makes: file → ready middleware.
    let pacer = settings.build().expect("loaded settings build");
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();

    let api = demo_api::start(5, Duration::from_secs(1), true).await;
    let mut workers = Vec::new();
    for _ in 0..4 {
        let client = client.clone();
        let url = format!("{}/orders", api.url);
        workers.push(tokio::spawn(async move {
            let mut ok = 0;
            for _ in 0..5 {
                if let Ok(r) = client.get(&url).send().await {
                    ok += usize::from(r.status().is_success());
                }
            }
            ok
        }));
    }
    let mut ok = 0;
    for w in workers {
        ok += w.await.unwrap();
    }
    // One request through the other limiter, chosen per request.
    let search = client
        .get(format!("{}/search", api.url))
        .with_extension(UseLimiter::new("search-api"))
        .send()
        .await
        .map(|r| r.status().as_u16());

    println!();
    println!("orders-api: {ok} of 20 requests answered 200");
    println!("search-api: answered {search:?}");
    println!(
        "the API accepted {} and sent {} 429s",
        api.counts.accepted.load(Ordering::Relaxed),
        api.counts.throttled.load(Ordering::Relaxed)
    );
    for name in pacer.limiter_names() {
        for endpoint in pacer.endpoints(name).unwrap() {
            let state = pacer.state(name, &endpoint).unwrap();
            if let Some(l) = state.limiter {
                println!("{name} {endpoint}: {:.0} units/min", l.rate);
            }
        }
    }
}

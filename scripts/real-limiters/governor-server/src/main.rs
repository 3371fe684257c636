//! One route, `GET /`, behind tower_governor's GCRA, shared by every client (its global key):
//! `LIMIT` requests a `WINDOW` seconds, a burst of `LIMIT` (the window's quota at once, as the
//! simulator's `gcra` shape), on `PORT`. Refusals are tower_governor's own 429: `Retry-After` and
//! `x-ratelimit-after` in whole seconds, rounded down; with `FIELDS=headers`, also its
//! `x-ratelimit-limit` and `x-ratelimit-remaining` (`use_headers`).

use axum::{Router, routing::get};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::GlobalKeyExtractor;

fn var(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let (window, limit, port) = (var("WINDOW", 10), var("LIMIT", 100), var("PORT", 8085));
    let period = Duration::from_secs(window) / u32::try_from(limit).expect("LIMIT fits in u32");
    let mut builder = GovernorConfigBuilder::default().key_extractor(GlobalKeyExtractor);
    builder
        .period(period)
        .burst_size(u32::try_from(limit).expect("LIMIT fits in u32"));
    if std::env::var("FIELDS").as_deref() == Ok("headers") {
        builder.use_headers();
    }
    let config = Arc::new(builder.finish().expect("a period and a burst above 0"));
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(GovernorLayer::new(config));
    let listener =
        tokio::net::TcpListener::bind(("127.0.0.1", u16::try_from(port).expect("a port")))
            .await
            .expect("the port is free");
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
    .expect("serving");
}

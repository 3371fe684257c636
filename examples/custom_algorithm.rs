//! Your own proactive throttling algorithm: keep a reserve of the quota for interactive traffic.
//!
//! The demo API reports its quota in IETF draft-11 `RateLimit` headers. This algorithm lets
//! background requests use the quota only down to a 30 % reserve, then spreads them over what is
//! left of the window. The server-ordered stop (`Retry-After`, or nothing left until the reset)
//! still applies above it.
//!
//! Run: `cargo run --example custom_algorithm`

#[path = "support/demo_api.rs"]
mod demo_api;

use pacer::{
    LimiterConfig, PacerMiddleware, ThrottlingAlgorithm, ThrottlingContext, ThrottlingResult,
};
use reqwest_middleware::ClientBuilder;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Debug)]
struct KeepReserve {
    /// The fraction of the quota kept back.
    reserve: f64,
}

impl ThrottlingAlgorithm for KeepReserve {
    fn evaluate(&self, ctx: &ThrottlingContext<'_>) -> ThrottlingResult {
        let info = ctx.info();
        let (Some(fraction), Some(reset)) = (info.remaining_fraction(), info.reset_after()) else {
            return ThrottlingResult::NO_THROTTLE;
        };
        if fraction > self.reserve {
            return ThrottlingResult::NO_THROTTLE;
        }
        // Below the reserve: wait out the window in proportion to how deep into it we are.
        let depth = 1.0 - fraction / self.reserve;
        ThrottlingResult::throttle(reset.mul_f64(depth), "keeping the reserve")
    }
}

#[tokio::main]
async fn main() {
    let api = demo_api::start(10, Duration::from_secs(2), true).await;
    let pacer = PacerMiddleware::builder()
        .limiter(
            "background",
            LimiterConfig::default().throttling(KeepReserve { reserve: 0.3 }),
        )
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();
    for _ in 0..25 {
        client
            .get(format!("{}/sync", api.url))
            .send()
            .await
            .unwrap();
    }
    let endpoint = pacer.endpoints("background").unwrap().remove(0);
    let info = pacer.state("background", &endpoint).unwrap().headers;
    println!(
        "accepted {}, 429s {}; last reported remaining: {:?}",
        api.counts.accepted.load(Ordering::Relaxed),
        api.counts.throttled.load(Ordering::Relaxed),
        info.and_then(|i| i.remaining())
    );
}

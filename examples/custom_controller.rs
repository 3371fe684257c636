//! Your own rate controller: the `StepController` of the .NET adaptive limiter's docs, plugged
//! into a named limiter.
//!
//! It halves the rate on a throttle and climbs a fixed step every 30 s while requests wait. It is
//! written against the .NET adaptive limiter's pure contract (`RateController`: the whole state
//! in, a rate out), so it runs in a `PureController`. The limiter does the rest: the lock, the clock, the bounds, the instance share, the cooldown, the
//! pause and the rule that a request sent before the last cut does not cut again.
//!
//! Run: `cargo run --example custom_controller`

#[path = "support/demo_api.rs"]
mod demo_api;

use pacer::{LimiterConfig, PacerMiddleware, PureController, RateController, RateControllerState};
use reqwest_middleware::ClientBuilder;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Halves on a throttle; climbs `step` units per minute (for the whole budget) every 30 s.
#[derive(Debug, Clone)]
struct StepController {
    step: f64,
}

impl RateController for StepController {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        (state.rate / 2.0).max(state.min_rate)
    }

    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        if !state.waited || state.since_last_increase < Duration::from_secs(30) {
            return None;
        }
        Some(state.rate + self.step / f64::from(state.instance_count))
    }
}

#[tokio::main]
async fn main() {
    let api = demo_api::start(4, Duration::from_secs(1), false).await;
    let pacer = PacerMiddleware::builder()
        .limiter(
            "billing-api",
            LimiterConfig::default()
                .controller(|| PureController::new(StepController { step: 30.0 })),
        )
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();
    for _ in 0..30 {
        client
            .get(format!("{}/invoices", api.url))
            .send()
            .await
            .unwrap();
    }
    let endpoint = pacer.endpoints("billing-api").unwrap().remove(0);
    let s = pacer
        .state("billing-api", &endpoint)
        .unwrap()
        .limiter
        .unwrap();
    println!(
        "rate {:.0} units/min after {} cuts; the API sent {} 429s for {} accepted requests",
        s.rate,
        s.decreases,
        api.counts.throttled.load(Ordering::Relaxed),
        api.counts.accepted.load(Ordering::Relaxed)
    );
}

//! Fleets through the middleware: processes (here, middlewares) sharing one store share one
//! learned rate and count each other.

use crate::retry_after::endpoint;
use crate::support::*;
use pacer_core::{FleetOptions, FleetStore, MemoryFleetStore, RealClock};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::sync::Arc;
use std::time::Duration;
use wiremock::ResponseTemplate;

/// Fleet options for a test: a fast period, a short lease.
fn fast() -> FleetOptions {
    let mut o = FleetOptions::default();
    o.period = Duration::from_millis(50);
    o.lease = Duration::from_millis(300);
    o
}

fn member(store: &Arc<dyn FleetStore>) -> PacerMiddleware {
    let mut options = generous();
    options.initial_units_per_minute = Some(6_000.0);
    PacerMiddleware::builder()
        .limiter(
            "api",
            LimiterConfig::new(options).fleet(Arc::clone(store), fast()),
        )
        .build()
        .unwrap()
}

/// Waits (in real time, at most 5 s) until `done` holds.
async fn eventually(done: impl FnMut() -> bool) -> bool {
    eventually_within(Duration::from_secs(5), done).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_count_each_other_and_one_throttle_cuts_the_rate_of_both() {
    let (server, _script) = scripted(vec![ok(), throttled("1"), ok()]).await;
    let store: Arc<dyn FleetStore> = Arc::new(MemoryFleetStore::new(RealClock::new()));
    let (a, b) = (member(&store), member(&store));
    let key = endpoint(&server);
    client(&a).get(server.uri()).send().await.unwrap();
    client(&b).get(server.uri()).send().await.unwrap();
    let count = |p: &PacerMiddleware| {
        p.state("api", &key)
            .unwrap()
            .limiter
            .map_or(0, |s| s.instance_count)
    };
    assert!(
        eventually(|| count(&a) == 2 && count(&b) == 2).await,
        "each counts two members: {} and {}",
        count(&a),
        count(&b)
    );
    // b meets a 429 (the script's second answer) and is sent again after its Retry-After.
    let answered = client(&b).get(server.uri()).send().await.unwrap();
    assert_eq!(answered.status(), 200);
    let rate = |p: &PacerMiddleware| p.state("api", &key).unwrap().limiter.unwrap().rate;
    // One cut of the fleet's 6,000: each member sends half of what is left, a as well as b.
    assert!(
        eventually(|| rate(&a) < 3_000.0 && (rate(&a) - rate(&b)).abs() < 1.0).await,
        "a {} and b {}",
        rate(&a),
        rate(&b)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_goes_away_leaves_the_fleet() {
    let (server, _script) = scripted(vec![ResponseTemplate::new(200)]).await;
    let store: Arc<dyn FleetStore> = Arc::new(MemoryFleetStore::new(RealClock::new()));
    let a = member(&store);
    let key = endpoint(&server);
    client(&a).get(server.uri()).send().await.unwrap();
    {
        let b = member(&store);
        client(&b).get(server.uri()).send().await.unwrap();
        let count = || {
            a.state("api", &key)
                .unwrap()
                .limiter
                .unwrap()
                .instance_count
        };
        assert!(eventually(|| count() == 2).await, "{}", count());
    }
    // b's middleware is dropped: its endpoint, its member and its task with it.
    let count = || {
        a.state("api", &key)
            .unwrap()
            .limiter
            .unwrap()
            .instance_count
    };
    assert!(eventually(|| count() == 1).await, "{}", count());
}

/// A fleet's options built in code are held to the rules a configuration file's are: an absurd
/// one is refused by `build`, named.
#[test]
fn fleet_options_built_in_code_are_checked() {
    let mut options = pacer_core::FleetOptions::default();
    options.period = std::time::Duration::from_nanos(1);
    let store = std::sync::Arc::new(pacer_core::MemoryFleetStore::new(
        pacer_core::RealClock::new(),
    ));
    let e = reqwest_pacer::PacerMiddleware::builder()
        .limiter(
            "api",
            reqwest_pacer::LimiterConfig::default().fleet(store, options),
        )
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("Fleet.Period"), "{e}");
    assert!(e.contains("must be at least 50ms"), "{e}");
}

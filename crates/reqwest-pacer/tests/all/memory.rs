//! Across a restart: what the middleware's endpoints learnt, remembered, serialized and
//! recalled by a fresh middleware (`PacerMiddleware::remember` and `recall`).

use crate::retry_after::endpoint;
use crate::support::*;
use pacer_core::{Clock, ManualClock, PacerMemory};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

fn middleware_on(clock: &ManualClock) -> PacerMiddleware {
    PacerMiddleware::builder()
        .limiter("api", LimiterConfig::default())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_restarted_client_starts_at_the_rate_it_had_learnt() {
    let clock = ManualClock::new();
    let (server, _script) =
        serve_script(Script::new(vec![ok(), throttled("1"), ok()]).on(&clock)).await;
    let pacer = middleware_on(&clock);
    let client = client(&pacer);
    for _ in 0..2 {
        let _ = drive(&clock, client.get(server.uri()).send())
            .await
            .unwrap();
    }
    let before = pacer
        .state("api", &endpoint(&server))
        .unwrap()
        .limiter
        .unwrap();
    assert!(before.limiting, "the throttle ended the unlimited start");
    let json = serde_json::to_string(&pacer.remember()).unwrap();

    // The next process, ten minutes later.
    let later = ManualClock::with_system_origin(clock.system_now() + Duration::from_secs(600));
    let fresh = middleware_on(&later);
    let memory: PacerMemory = serde_json::from_str(&json).unwrap();
    let recalled = fresh.recall(&memory);
    assert_eq!((recalled.endpoints, recalled.skipped), (1, 0));
    let after = fresh
        .state("api", &endpoint(&server))
        .unwrap()
        .limiter
        .unwrap();
    assert!(after.limiting, "it limits from its first request");
    assert_eq!(after.rate, before.rate);
    // Once it has had a response, what it learns itself stands: a recall changes nothing.
    let _ = drive(
        &later,
        crate::support::client(&fresh).get(server.uri()).send(),
    )
    .await
    .unwrap();
    assert_eq!(fresh.recall(&memory).skipped, 1);
}

#[test]
fn a_memory_older_than_the_idle_ttl_or_of_another_limiter_is_not_recalled() {
    let json = r#"{"saved_at":"2026-01-01T00:00:00.000Z","limiters":{
        "api":[{"key":"https://api.example.com:443","rate":600.0,"controller":{"limit":640.0,"firm":true}}],
        "other":[{"key":"https://x.example.com:443","rate":60.0}]}}"#;
    let memory: PacerMemory = serde_json::from_str(json).unwrap();
    let saved = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    assert_eq!(memory.saved_at, saved);
    // An hour and a second after: older than `EndpointIdleTtl`'s default hour.
    let late = ManualClock::with_system_origin(saved + Duration::from_secs(3601));
    let recalled = middleware_on(&late).recall(&memory);
    assert_eq!((recalled.endpoints, recalled.skipped), (0, 1));
    assert_eq!(recalled.unknown_limiters, ["other"]);
    // Within the hour, with `InstanceCount` 2: half the remembered rate.
    let soon = ManualClock::with_system_origin(saved + Duration::from_secs(60));
    let mut options = pacer_core::LimiterOptions::default();
    options.instance_count = 2;
    let pacer = PacerMiddleware::builder()
        .limiter("api", LimiterConfig::new(options))
        .clock(Arc::new(soon))
        .build()
        .unwrap();
    assert_eq!(pacer.recall(&memory).endpoints, 1);
    let limiter = pacer
        .state("api", "https://api.example.com:443")
        .unwrap()
        .limiter
        .unwrap();
    assert_eq!(limiter.rate, 300.0);
}

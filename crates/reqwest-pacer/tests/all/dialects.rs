//! A declared dialect paces and stops an endpoint as a built-in one does.

use crate::support::*;
use pacer_core::ManualClock;
use reqwest_pacer::{DeclaredDialect, LimiterConfig, TimeUnit};
use std::time::Duration;
use wiremock::ResponseTemplate;

/// The time between the first request (answered `first`) and the next one to reach the server
/// (answered 200), on a manual clock; `repeat` sends a second request after the first returns
/// (else the second is the middleware's own retry of a throttle).
async fn gap(config: LimiterConfig, first: ResponseTemplate, repeat: bool) -> Duration {
    let clock = ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![first, ok()]).on(&clock)).await;
    let pacer = pacer_on(&clock, config);
    let client = client(&pacer);
    let rounds = if repeat { 2 } else { 1 };
    for _ in 0..rounds {
        let response = drive(&clock, client.get(server.uri()).send()).await;
        let _ = response.unwrap();
    }
    assert_eq!(script.calls(), 2);
    script.gap(0, 1)
}

/// An API with its own spelling: `X-Quota-Left` and a reset in milliseconds.
fn quota_api() -> DeclaredDialect {
    DeclaredDialect::builder("quota")
        .limit("X-Quota-Limit")
        .remaining("X-Quota-Left")
        .reset("X-Quota-Reset")
        .reset_unit(TimeUnit::Milliseconds)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_declared_remaining_of_0_stops_the_endpoint_until_its_reset_as_a_built_in_one_does() {
    let builtin = ResponseTemplate::new(429)
        .insert_header("x-ratelimit-limit", "60")
        .insert_header("x-ratelimit-remaining", "0")
        .insert_header("x-ratelimit-reset", "3");
    let declared = ResponseTemplate::new(429)
        .insert_header("x-quota-limit", "60")
        .insert_header("x-quota-left", "0")
        .insert_header("x-quota-reset", "3000");
    let builtin_gap = gap(LimiterConfig::new(generous()), builtin, false).await;
    let declared_gap = gap(
        LimiterConfig::new(generous()).dialect(quota_api()),
        declared.clone(),
        false,
    )
    .await;
    for g in [builtin_gap, declared_gap] {
        assert!(
            g >= Duration::from_secs(3) && g <= Duration::from_millis(3_100),
            "{builtin_gap:?} {declared_gap:?}"
        );
    }
    // Without the dialect the same 429 is a bare one: held for `PauseWithoutRetryAfter`.
    let bare_gap = gap(LimiterConfig::new(generous()), declared, false).await;
    assert!(bare_gap < Duration::from_secs(2), "{bare_gap:?}");
}

/// Trello's documented fields, declared as docs/dialects.md shows: a spent token quota on a
/// success holds the next request for the interval the server states (in milliseconds).
#[tokio::test]
async fn trellos_spent_quota_holds_the_next_request_for_its_interval() {
    let trello = DeclaredDialect::builder("trello-token")
        .limit("x-rate-limit-api-token-max")
        .remaining("x-rate-limit-api-token-remaining")
        .window_header("x-rate-limit-api-token-interval-ms")
        .window_unit(TimeUnit::Milliseconds)
        .build()
        .unwrap();
    let spent = ResponseTemplate::new(200)
        .insert_header("x-rate-limit-api-token-interval-ms", "2000")
        .insert_header("x-rate-limit-api-token-max", "100")
        .insert_header("x-rate-limit-api-token-remaining", "0");
    let held = gap(
        LimiterConfig::new(generous()).dialect(trello),
        spent.clone(),
        true,
    )
    .await;
    assert!(
        held >= Duration::from_secs(2) && held <= Duration::from_millis(2_100),
        "{held:?}"
    );
    // Without the dialect the built-in reading sees a remaining without a limit or window,
    // and does not hold the next request for the interval.
    let free = gap(LimiterConfig::new(generous()), spent, true).await;
    assert!(free < Duration::from_secs(2), "{free:?}");
}

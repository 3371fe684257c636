use crate::support::*;
use pacer_core::ManualClock;
use reqwest_pacer::LimiterConfig;
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test]
async fn githubs_secondary_limit_403_with_retry_after_is_a_throttle() {
    let server = MockServer::start().await;
    let secondary = ResponseTemplate::new(403)
        .insert_header("retry-after", "1")
        .set_body_string("You have exceeded a secondary rate limit");
    let clock = ManualClock::new();
    let script = Script::new(vec![secondary, ok()]).on(&clock);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()));
    let client = client(&pacer);
    let response = drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    let gap = script.gap(0, 1);
    assert!(
        gap >= Duration::from_secs(1) && gap < Duration::from_millis(1_010),
        "{gap:?}"
    );
}

#[tokio::test]
async fn githubs_primary_limit_403_with_remaining_0_waits_for_the_reset() {
    let server = MockServer::start().await;
    let clock = ManualClock::new();
    let reset = unix_secs_after(&clock, 2);
    let primary = ResponseTemplate::new(403)
        .insert_header("x-ratelimit-limit", "60")
        .insert_header("x-ratelimit-remaining", "0")
        .insert_header("x-ratelimit-reset", reset.to_string().as_str())
        .insert_header("x-ratelimit-resource", "core");
    let script = Script::new(vec![primary, ok()]).on(&clock);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()));
    let client = client(&pacer);
    let response = drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    // The reset is exactly 2 s away on the manual clock's whole-second wall time; the retry goes
    // then, once the limiter that followed the spent quota has its unit (2.1 s in all).
    let gap = script.gap(0, 1);
    assert!(
        gap >= Duration::from_secs(2) && gap <= Duration::from_millis(2_100),
        "{gap:?}"
    );
}

#[tokio::test]
async fn a_403_without_a_rate_limit_sign_is_not_retried() {
    let (server, script) = scripted(vec![ResponseTemplate::new(403), ok()]).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(script.calls(), 1);
}

/// GitHub's secondary limit as its docs show it: a 403 with a JSON body that says so and no
/// `Retry-After`. "Wait for at least one minute before retrying": the retry goes a minute later
/// (with a `MaxWait` that allows it), and the rate is cut.
#[tokio::test]
async fn githubs_secondary_limit_in_the_body_alone_waits_a_minute() {
    let server = MockServer::start().await;
    let secondary = ResponseTemplate::new(403).set_body_raw(
        r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}"#,
        "application/json; charset=utf-8",
    );
    let clock = ManualClock::new();
    let script = Script::new(vec![secondary, ok()]).on(&clock);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let mut options = generous();
    options.max_wait = Duration::from_secs(120);
    let pacer = pacer_on(&clock, LimiterConfig::new(options));
    let response = drive(&clock, client(&pacer).get(server.uri()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    let gap = script.gap(0, 1);
    assert!(
        gap >= Duration::from_secs(60) && gap < Duration::from_millis(60_010),
        "{gap:?}"
    );
    let state = pacer
        .state("api", &crate::retry_after::endpoint(&server))
        .unwrap();
    assert_eq!(state.limiter.unwrap().decreases, 1, "the rate was cut");
}

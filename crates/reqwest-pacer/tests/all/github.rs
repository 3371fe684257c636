use crate::support::*;
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test]
async fn githubs_secondary_limit_403_with_retry_after_is_a_throttle() {
    let server = MockServer::start().await;
    let secondary = ResponseTemplate::new(403)
        .insert_header("retry-after", "1")
        .set_body_string("You have exceeded a secondary rate limit");
    let script = Script::new(vec![secondary, ok()]);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    assert!(script.gap(0, 1) >= Duration::from_secs(1));
}

#[tokio::test]
async fn githubs_primary_limit_403_with_remaining_0_waits_for_the_reset() {
    let server = MockServer::start().await;
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2;
    let primary = ResponseTemplate::new(403)
        .insert_header("x-ratelimit-limit", "60")
        .insert_header("x-ratelimit-remaining", "0")
        .insert_header("x-ratelimit-reset", reset.to_string().as_str())
        .insert_header("x-ratelimit-resource", "core");
    let script = Script::new(vec![primary, ok()]);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    // The reset is a whole second 1 to 2 s away.
    assert!(
        script.gap(0, 1) >= Duration::from_millis(900),
        "{:?}",
        script.gap(0, 1)
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

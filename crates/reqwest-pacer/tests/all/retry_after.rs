use crate::support::*;
use std::time::{Duration, SystemTime};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

#[tokio::test]
async fn a_429_with_retry_after_in_seconds_waits_then_succeeds() {
    let (server, script) = scripted(vec![throttled("1"), ok()]).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2, "exactly one retry reached the server");
    assert!(
        script.gap(0, 1) >= Duration::from_secs(1),
        "{:?}",
        script.gap(0, 1)
    );
    let state = pacer.state("api", &endpoint(&server)).unwrap();
    let limiter = state.limiter.unwrap();
    assert_eq!(limiter.stats.throttled, 1);
    assert_eq!(limiter.decreases, 1, "the throttle cut the rate");
}

#[tokio::test]
async fn a_429_with_an_http_date_waits_until_that_date() {
    let server = MockServer::start().await;
    let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    let script = Script::new(vec![throttled(&at), ok()]);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    // The date has a resolution of a second: at least one second passed.
    assert!(
        script.gap(0, 1) >= Duration::from_secs(1),
        "{:?}",
        script.gap(0, 1)
    );
}

#[tokio::test]
async fn after_the_last_attempt_the_caller_gets_the_servers_last_response_unchanged() {
    let server = MockServer::start().await;
    let last = throttled("0")
        .insert_header("x-last", "yes")
        .set_body_string("slow down");
    let script = Script::new(vec![throttled("0"), throttled("0"), last]);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let mut options = generous();
    options.max_attempts = 3;
    let pacer = pacer(options);
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(script.calls(), 3);
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["x-last"], "yes");
    assert_eq!(response.text().await.unwrap(), "slow down");
}

#[tokio::test]
async fn a_retry_after_longer_than_max_wait_returns_the_429_without_a_retry() {
    let (server, script) = scripted(vec![throttled("120"), ok()]).await;
    let pacer = pacer(generous()); // MaxWait 30 s
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(script.calls(), 1);
    // The next request is refused at once, without reaching the server.
    let err = client(&pacer).get(server.uri()).send().await.unwrap_err();
    use reqwest_pacer::PacerErrorExt;
    let r = err.rejection().expect("a rejection");
    assert_eq!(r.kind(), "wait_too_long:server_stop");
    assert!(r.needed_wait().unwrap() > Duration::from_secs(100));
    assert_eq!(script.calls(), 1);
}

pub(crate) fn endpoint(server: &MockServer) -> String {
    let url: reqwest::Url = server.uri().parse().unwrap();
    format!("http://{}:{}", url.host_str().unwrap(), url.port().unwrap())
}

//! Not every 429 is a throttle: `x-should-retry: false` is never retried, a JSON body that says
//! the account is out of credit neither cuts the rate nor retries, and a rule of one's own can
//! read a 429's body.

use crate::retry_after::endpoint;
use crate::support::*;
use http::{HeaderMap, StatusCode};
use pacer_core::{RateLimitInfo, Signal};
use reqwest_pacer::{
    BODY_LIMIT, BodyVerdict, DefaultClassifier, LimiterConfig, PacerMiddleware, PacerResponseExt,
    ThrottleClassifier,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const QUOTA: &str = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;

/// A server that answers with `script`.
async fn serving(script: &Script) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    server
}

fn quota_429(content_type: &str) -> ResponseTemplate {
    ResponseTemplate::new(429).set_body_raw(QUOTA, content_type)
}

/// (requests throttled, rate cuts) of the endpoint.
fn throttles(pacer: &PacerMiddleware, server: &MockServer) -> (u64, u64) {
    let limiter = pacer
        .state("api", &endpoint(server))
        .unwrap()
        .limiter
        .unwrap();
    (limiter.stats.throttled, limiter.decreases)
}

#[tokio::test]
async fn a_429_with_x_should_retry_false_is_sent_once_and_still_cuts_the_rate() {
    let script = Script::new(vec![
        throttled("0").insert_header("x-should-retry", "false"),
        ok(),
    ]);
    let server = serving(&script).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(script.calls(), 1, "not retried");
    assert_eq!(throttles(&pacer, &server), (1, 1), "still a throttle");
    assert!(!response.is_quota_exhausted());
}

#[tokio::test]
async fn a_429_with_x_should_retry_true_is_retried_as_any_other() {
    let script = Script::new(vec![
        throttled("0").insert_header("x-should-retry", "true"),
        ok(),
    ]);
    let server = serving(&script).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
}

#[tokio::test]
async fn x_should_retry_false_on_a_success_changes_nothing() {
    let script = Script::new(vec![ok().insert_header("x-should-retry", "false")]);
    let server = serving(&script).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(throttles(&pacer, &server), (0, 0));
}

#[tokio::test]
async fn an_insufficient_quota_429_is_sent_once_cuts_nothing_and_comes_back_marked_and_whole() {
    // A Retry-After longer than MaxWait: were it a stop, the next request would be refused.
    let script = Script::new(vec![
        quota_429("application/json").insert_header("retry-after", "120"),
        ok(),
    ]);
    let server = serving(&script).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(script.calls(), 1, "not retried");
    assert_eq!(throttles(&pacer, &server), (0, 0), "not a throttle");
    let mark = response.quota_exhausted().expect("marked").clone();
    assert_eq!(mark.code(), "insufficient_quota");
    assert_eq!(mark.limiter(), "api");
    assert_eq!(mark.endpoint(), endpoint(&server));
    assert_eq!(response.url().as_str(), format!("{}/", server.uri()));
    assert_eq!(response.headers()["retry-after"], "120");
    // The body read and handed on knows its length (its size hint held, no panic).
    assert_eq!(response.content_length(), Some(QUOTA.len() as u64));
    assert_eq!(response.text().await.unwrap(), QUOTA, "the body is intact");
    // No stop was kept: the next request goes.
    let next = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(next.status(), 200);
    assert_eq!(script.calls(), 2);
}

#[tokio::test]
async fn the_quota_body_as_text_is_an_ordinary_429() {
    let script = Script::new(vec![quota_429("text/plain"), ok()]);
    let server = serving(&script).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2, "retried");
    assert_eq!(throttles(&pacer, &server), (1, 1));
}

#[tokio::test]
async fn the_quota_body_on_a_500_is_an_ordinary_500() {
    let script = Script::new(vec![
        ResponseTemplate::new(500).set_body_raw(QUOTA, "application/json"),
        ok(),
    ]);
    let server = serving(&script).await;
    let pacer = pacer(generous());
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(script.calls(), 1);
    assert!(!response.is_quota_exhausted());
    assert_eq!(throttles(&pacer, &server), (0, 0));
    assert_eq!(response.text().await.unwrap(), QUOTA);
}

#[tokio::test]
async fn a_quota_body_longer_than_the_limit_is_an_ordinary_429_and_reaches_the_caller_whole() {
    let long = format!("{QUOTA}{}", " ".repeat(BODY_LIMIT));
    let script = Script::new(vec![
        ResponseTemplate::new(429).set_body_raw(long.clone(), "application/json"),
    ]);
    let server = serving(&script).await;
    let pacer = pacer_with(LimiterConfig::new(generous()).max_attempts(attempts(2)));
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(script.calls(), 2, "retried");
    assert!(!response.is_quota_exhausted());
    assert_eq!(throttles(&pacer, &server).0, 2);
    assert_eq!(response.text().await.unwrap(), long);
}

/// A provider whose words for "no credit" are its own, and which says "do not retry" in its body.
#[derive(Debug)]
struct Provider;

impl ThrottleClassifier for Provider {
    fn classify(&self, status: StatusCode, headers: &HeaderMap, info: &RateLimitInfo) -> Signal {
        DefaultClassifier::default().classify(status, headers, info)
    }

    fn classify_body(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Option<BodyVerdict> {
        let text = std::str::from_utf8(body).ok()?;
        if text.contains("billing_hard_limit_reached") {
            return Some(BodyVerdict::QuotaExhausted {
                code: "billing_hard_limit_reached".into(),
            });
        }
        if text.contains("\"retryable\":false") {
            return Some(BodyVerdict::NoRetry);
        }
        DefaultClassifier::default().classify_body(status, headers, body)
    }
}

fn provider_pacer() -> PacerMiddleware {
    PacerMiddleware::builder()
        .limiter("api", LimiterConfig::new(generous()).classifier(Provider))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_rule_of_ones_own_reads_the_body() {
    let billing = r#"{"error":{"code":"billing_hard_limit_reached"}}"#;
    let script = Script::new(vec![
        ResponseTemplate::new(429).set_body_raw(billing, "application/json"),
        ok(),
    ]);
    let server = serving(&script).await;
    let pacer = provider_pacer();
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(script.calls(), 1);
    assert_eq!(
        response.quota_exhausted().map(|q| q.code().to_owned()),
        Some("billing_hard_limit_reached".to_owned())
    );
    assert_eq!(throttles(&pacer, &server), (0, 0));
}

#[tokio::test]
async fn a_rule_of_ones_own_can_forbid_a_retry_and_keep_the_throttle() {
    let script = Script::new(vec![
        throttled("0").set_body_raw(r#"{"retryable":false}"#, "application/json"),
        ok(),
    ]);
    let server = serving(&script).await;
    let pacer = provider_pacer();
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(script.calls(), 1, "not retried");
    assert_eq!(throttles(&pacer, &server), (1, 1), "still a throttle");
}

#[tokio::test]
async fn a_rule_of_ones_own_keeps_the_built_in_one() {
    let script = Script::new(vec![quota_429("application/json"), ok()]);
    let server = serving(&script).await;
    let pacer = provider_pacer();
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(script.calls(), 1);
    assert!(response.is_quota_exhausted());
}

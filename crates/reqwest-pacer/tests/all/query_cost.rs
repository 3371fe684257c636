//! A GraphQL API's calculated query cost (Shopify's `extensions.cost`), read from the body of
//! each JSON response when the limiter is asked to (`QueryCost`).

use crate::retry_after::endpoint;
use crate::support::*;
use pacer_core::ManualClock;
use reqwest_pacer::{LimiterConfig, PacerResponseExt};
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Shopify's answer to a query of `requested` points when its bucket of 1,000 holds
/// `available`, 50 coming back a second: refused (`THROTTLED`, with a 200) or run.
fn graphql(requested: u64, available: u64, throttled: bool) -> ResponseTemplate {
    let (head, actual) = if throttled {
        (
            r#""errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}]"#,
            "null".to_owned(),
        )
    } else {
        (r#""data":{"shop":{"name":"a"}}"#, requested.to_string())
    };
    let body = format!(
        r#"{{{head},"extensions":{{"cost":{{"requestedQueryCost":{requested},"actualQueryCost":{actual},"throttleStatus":{{"maximumAvailable":1000.0,"currentlyAvailable":{available},"restoreRate":50.0}}}}}}}}"#
    );
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

/// A GraphQL endpoint: every POST answered by `script`.
async fn serving(script: &Script) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    server
}

const QUERY: &str = r#"{"query":"{ shop { name } }"}"#;

#[tokio::test]
async fn a_query_refused_for_its_cost_waits_for_its_points_then_is_sent_again() {
    let clock = ManualClock::new();
    let script = Script::new(vec![graphql(300, 200, true), graphql(300, 300, false)]).on(&clock);
    let server = serving(&script).await;
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()).query_cost(true));
    let request = client(&pacer).post(server.uri()).body(QUERY).send();
    let response = drive(&clock, request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2, "sent again");
    // 100 points missing, 50 back a second; then one unit at the limiter's rate, which follows
    // the bucket's pace (3 queries of 300 points per 20 s, held at the limiter's minimum of 600
    // a minute: 100 ms).
    let gap = script.gap(0, 1);
    assert!(gap >= Duration::from_secs(2), "{gap:?}");
    assert!(gap <= Duration::from_millis(2_100), "{gap:?}");
    let limiter = pacer
        .state("api", &endpoint(&server))
        .unwrap()
        .limiter
        .unwrap();
    assert_eq!(
        limiter.rate, 600.0,
        "paced to the bucket, within the limiter's bounds"
    );
    assert_eq!(response.paced().map(|p| p.attempts()), Some(2));
    let limiter = pacer
        .state("api", &endpoint(&server))
        .unwrap()
        .limiter
        .unwrap();
    assert_eq!(limiter.stats.throttled, 1, "a throttle, though a 200");
    let length = response.content_length();
    let text = response.text().await.unwrap();
    assert_eq!(length, Some(text.len() as u64), "its size hint holds");
    assert!(
        text.starts_with(r#"{"data":{"shop""#),
        "the body is intact: {text}"
    );
}

#[tokio::test]
async fn without_query_cost_the_body_is_not_read() {
    let script = Script::new(vec![graphql(300, 200, true), graphql(300, 300, false)]);
    let server = serving(&script).await;
    let pacer = pacer(generous());
    let response = client(&pacer)
        .post(server.uri())
        .body(QUERY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 1, "a 200 like any other");
    let state = pacer.state("api", &endpoint(&server)).unwrap();
    assert_eq!(state.limiter.unwrap().stats.throttled, 0);
    assert!(state.headers.is_none(), "nothing read");
}

#[tokio::test]
async fn a_bucket_that_holds_no_next_query_holds_it_until_one_fits() {
    let clock = ManualClock::new();
    // 50 of the next query's 100 points are there: 1 s until the rest are back, then one unit at
    // the limiter's rate (the bucket's pace, 10 queries per 20 s, held at the minimum of 600 a
    // minute: 100 ms).
    let script = Script::new(vec![graphql(100, 50, false), graphql(100, 100, false)]).on(&clock);
    let server = serving(&script).await;
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()).query_cost(true));
    let client = client(&pacer);
    for _ in 0..2 {
        let response = drive(&clock, client.post(server.uri()).body(QUERY).send()).await;
        assert_eq!(response.unwrap().status(), 200);
    }
    assert_eq!(script.calls(), 2);
    let gap = script.gap(0, 1);
    assert!(gap >= Duration::from_secs(1), "{gap:?}");
    assert!(gap <= Duration::from_millis(1_100), "{gap:?}");
}

#[tokio::test]
async fn a_refusal_whose_bucket_says_nothing_is_still_a_throttle() {
    // `THROTTLED`, but a bucket of 0 points that never fills: nothing says when, the refusal
    // stands all the same.
    let unsound = ResponseTemplate::new(200).set_body_raw(
        r#"{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{"requestedQueryCost":2,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":0.0,"currentlyAvailable":0,"restoreRate":0.0}}}}"#,
        "application/json",
    );
    let clock = ManualClock::new();
    let script = Script::new(vec![unsound, graphql(2, 900, false)]).on(&clock);
    let server = serving(&script).await;
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()).query_cost(true));
    let request = client(&pacer).post(server.uri()).body(QUERY).send();
    let response = drive(&clock, request).await.unwrap();
    assert_eq!(script.calls(), 2, "sent again");
    assert_eq!(response.paced().map(|p| p.attempts()), Some(2));
    let limiter = pacer
        .state("api", &endpoint(&server))
        .unwrap()
        .limiter
        .unwrap();
    assert_eq!(
        limiter.stats.throttled, 1,
        "a throttle, though a 200 with no bucket"
    );
}

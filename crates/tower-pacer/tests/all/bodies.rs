//! What the layer reads of a response's body — a 429's JSON for the classifier, a GraphQL
//! response's cost with `QueryCost` on — and the body it hands on whole.

use crate::support::{drive, hyper_client, recorded, serve_bodies};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use pacer_core::{LimiterOptions, ManualClock, Rules};
use std::sync::Arc;
use std::time::Duration;
use tower_layer::Layer;
use tower_pacer::{Paced, PacerLayer, QuotaExhausted};
use tower_service::Service;

const QUOTA: &str = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;

fn options() -> LimiterOptions {
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(6_000.0);
    options
}

fn post(base: &str) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("{base}/graphql"))
        .header("content-type", "application/json")
        .body(Full::from(r#"{"query":"{ shop { name } }"}"#))
        .unwrap()
}

/// Shopify's answer to a query of `requested` points when its bucket of 1,000 holds
/// `available`, 50 back a second: refused (`THROTTLED`, with a 200) or run.
fn graphql(requested: u64, available: u64, throttled: bool) -> String {
    let head = if throttled {
        r#""errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]"#
    } else {
        r#""data":{"shop":{"name":"a"}}"#
    };
    format!(
        r#"{{{head},"extensions":{{"cost":{{"requestedQueryCost":{requested},"actualQueryCost":null,"throttleStatus":{{"maximumAvailable":1000.0,"currentlyAvailable":{available},"restoreRate":50.0}}}}}}}}"#
    )
}

async fn text<B>(response: http::Response<B>) -> String
where
    B: http_body::Body,
    B::Error: std::fmt::Debug,
{
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn an_insufficient_quota_429_is_sent_once_cuts_nothing_and_reaches_the_caller_whole() {
    let base = serve_bodies(vec![
        (429, "application/json", QUOTA.to_owned()),
        (200, "text/plain", "ok".to_owned()),
    ])
    .await;
    let layer = PacerLayer::builder(options()).build().unwrap();
    let mut service = layer.layer(hyper_client());
    let response = service.call(post(&base)).await.unwrap();
    assert_eq!(response.status(), 429, "not retried");
    let snapshot = layer.limiter(&base).expect("the endpoint is known");
    assert_eq!(snapshot.stats.throttled, 0, "not a throttle");
    let mark = response
        .extensions()
        .get::<QuotaExhausted>()
        .expect("marked");
    assert_eq!(
        (mark.code(), mark.limiter(), mark.endpoint()),
        ("insufficient_quota", "default", base.as_str())
    );
    assert_eq!(
        response.extensions().get::<Paced>().map(Paced::attempts),
        Some(1)
    );
    let hint = http_body::Body::size_hint(response.body());
    assert_eq!(hint.exact(), Some(QUOTA.len() as u64), "read whole: exact");
    assert_eq!(text(response).await, QUOTA, "the body is intact");
}

#[tokio::test]
async fn a_graphql_query_refused_for_its_cost_waits_for_its_points_then_is_sent_again() {
    let base = serve_bodies(vec![
        (200, "application/json", graphql(300, 200, true)),
        (200, "application/json", graphql(300, 300, false)),
    ])
    .await;
    let clock = ManualClock::new();
    let layer = PacerLayer::builder(options())
        .rules(Rules::default().with_query_cost(true))
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    let response = drive(&clock, service.call(post(&base))).await.unwrap();
    assert_eq!(response.status(), 200);
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "sent again");
    // 100 points missing, 50 back a second.
    assert!(sent[1] - sent[0] >= Duration::from_secs(2), "{sent:?}");
    let snapshot = layer.limiter(&base).expect("the endpoint is known");
    assert_eq!(snapshot.stats.throttled, 1, "a throttle, though a 200");
    let paced = response
        .extensions()
        .get::<Paced>()
        .expect("marked")
        .clone();
    assert_eq!(paced.attempts(), 2);
    assert!(paced.waited() >= Duration::from_secs(2), "{paced:?}");
    assert!(response.extensions().get::<QuotaExhausted>().is_none());
    assert!(text(response).await.starts_with(r#"{"data""#));
}

#[tokio::test]
async fn without_query_cost_a_graphql_refusal_is_a_200_like_any_other_and_its_body_unread() {
    let refused = graphql(300, 200, true);
    let base = serve_bodies(vec![(200, "application/json", refused.clone())]).await;
    let layer = PacerLayer::builder(options()).build().unwrap();
    let mut service = layer.layer(hyper_client());
    let response = service.call(post(&base)).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(layer.limiter(&base).unwrap().stats.throttled, 0);
    assert_eq!(text(response).await, refused);
}

#[tokio::test]
async fn a_body_longer_than_the_limit_reaches_the_caller_whole_and_unjudged() {
    // A 429 whose JSON is longer than BODY_LIMIT: an ordinary 429, retried.
    let long = format!(
        r#"{{"error":{{"type":"insufficient_quota"}},"pad":"{}"}}"#,
        "x".repeat(pacer_core::BODY_LIMIT)
    );
    let base = serve_bodies(vec![(429, "application/json", long.clone())]).await;
    let clock = ManualClock::new();
    let layer = PacerLayer::builder(options())
        .max_attempts(std::num::NonZeroU32::new(2).unwrap())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    let response = drive(&clock, service.call(post(&base))).await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(sent.lock().unwrap().len(), 2, "a throttle: sent again");
    assert_eq!(text(response).await, long);
}

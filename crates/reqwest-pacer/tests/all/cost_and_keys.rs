use crate::support::*;
use pacer_core::LimiterOptions;
use reqwest_pacer::{Cost, EndpointKey, KeyMode, LimiterConfig, PacerErrorExt, PacerMiddleware};
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

/// 600 units per minute with a 1 s bucket: 10 units at once, then 10 per second.
fn ten_per_second() -> LimiterOptions {
    let mut o = fixed_rate(600.0);
    o.max_wait = Duration::from_millis(200);
    o
}

#[tokio::test]
async fn a_request_is_charged_its_cost_and_a_free_request_neither_waits_nor_counts() {
    let server = MockServer::start().await;
    let script = Script::new(vec![ok()]);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer(ten_per_second());
    let client = client(&pacer);
    client
        .get(server.uri())
        .with_extension(Cost(8))
        .send()
        .await
        .unwrap();
    // 2 units left: 5 more would wait 300 ms, past MaxWait.
    let err = client
        .get(server.uri())
        .with_extension(Cost(5))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_rejected());
    // Free requests go through however many.
    for _ in 0..20 {
        client
            .get(server.uri())
            .with_extension(Cost(0))
            .send()
            .await
            .unwrap();
    }
    assert_eq!(script.calls(), 21);
    let endpoint = crate::retry_after::endpoint(&server);
    let s = pacer.state("api", &endpoint).unwrap().limiter.unwrap();
    assert_eq!(s.stats.granted_units, 8.0);
}

#[tokio::test]
async fn separate_endpoints_do_not_slow_each_other() {
    let a = MockServer::start().await;
    let b = MockServer::start().await;
    let (sa, sb) = (Script::new(vec![ok()]), Script::new(vec![ok()]));
    Mock::given(method("GET"))
        .respond_with(sa.clone())
        .mount(&a)
        .await;
    Mock::given(method("GET"))
        .respond_with(sb.clone())
        .mount(&b)
        .await;
    let pacer = pacer(ten_per_second());
    let client = client(&pacer);
    for _ in 0..10 {
        client.get(a.uri()).send().await.unwrap();
    }
    // a's bucket is empty; b's is full.
    for _ in 0..10 {
        client.get(b.uri()).send().await.unwrap();
    }
    assert!(
        client.get(a.uri()).send().await.is_ok(),
        "waits 100 ms, within MaxWait"
    );
    assert_eq!((sa.calls(), sb.calls()), (11, 10));
    assert_eq!(pacer.endpoints("api").unwrap().len(), 2);
}

#[tokio::test]
async fn an_endpoint_key_extension_and_a_key_mode_group_requests() {
    let server = answering_ok().await;
    let pacer = PacerMiddleware::builder()
        .limiter(
            "api",
            LimiterConfig::new(ten_per_second()).endpoint_key(KeyMode::HostAndFirstSegment),
        )
        .build()
        .unwrap();
    let client = client(&pacer);
    client
        .get(format!("{}/search?q=secret", server.uri()))
        .send()
        .await
        .unwrap();
    client
        .get(format!("{}/repos/x", server.uri()))
        .send()
        .await
        .unwrap();
    client
        .get(format!("{}/repos/y", server.uri()))
        .with_extension(EndpointKey::new("tenant-42"))
        .send()
        .await
        .unwrap();
    let endpoints = pacer.endpoints("api").unwrap();
    let base = crate::retry_after::endpoint(&server);
    assert_eq!(
        endpoints,
        [
            format!("{base}/repos"),
            format!("{base}/search"),
            "tenant-42".to_owned()
        ]
    );
    assert!(endpoints.iter().all(|e| !e.contains("secret")));
}

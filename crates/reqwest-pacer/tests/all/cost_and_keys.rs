use crate::support::*;
use pacer_core::LimiterOptions;
use reqwest_pacer::{
    Cost, CostFn, EndpointKey, KeyMode, LimiterConfig, PacerErrorExt, PacerMiddleware, RejectReason,
};
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
    let (server, script) = scripted(vec![ok()]).await;
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

/// 600 units per minute at most, a 1 s bucket and a 1 s MaxWait: one request may cost at most
/// 10 × (1 + 1) = 20 units.
fn at_most_twenty() -> LimiterOptions {
    let mut o = fixed_rate(600.0);
    o.max_wait = Duration::from_secs(1);
    o
}

#[tokio::test]
async fn a_cost_of_u64_max_is_refused_with_its_cost_and_the_next_request_goes_at_once() {
    let (server, script) = scripted(vec![ok()]).await;
    let pacer = pacer(at_most_twenty());
    let client = client(&pacer);
    let err = client
        .get(server.uri())
        .with_extension(Cost(u64::MAX))
        .send()
        .await
        .unwrap_err();
    let r = err.rejection().unwrap();
    assert_eq!(
        r.reason(),
        &RejectReason::CostAboveLimit {
            cost: u64::MAX,
            max: 20
        }
    );
    assert_eq!(r.kind(), "cost_above_limit");
    assert!(
        r.to_string()
            .contains("costs 18446744073709551615 units, more than the 20")
    );
    assert_eq!(script.calls(), 0, "nothing reached the server");
    // The endpoint is not blocked: a full bucket is there, so ten requests go at once.
    for _ in 0..10 {
        client.get(server.uri()).send().await.unwrap();
    }
    assert_eq!(script.calls(), 10);
    let endpoint = crate::retry_after::endpoint(&server);
    let s = pacer.state("api", &endpoint).unwrap().limiter.unwrap();
    assert_eq!((s.stats.granted_units, s.stats.waited_requests), (10.0, 0));
}

#[tokio::test]
async fn a_cost_function_with_a_huge_cost_for_one_path_refuses_only_that_path() {
    let (server, _script) = scripted(vec![ok()]).await;
    let config = LimiterConfig::new(at_most_twenty()).cost(CostFn(|r: &reqwest::Request| {
        if r.url().path() == "/huge" {
            1 << 40
        } else {
            1
        }
    }));
    let pacer = PacerMiddleware::builder()
        .limiter("api", config)
        .build()
        .unwrap();
    let client = client(&pacer);
    for _ in 0..3 {
        let err = client
            .get(format!("{}/huge", server.uri()))
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.rejection().unwrap().kind(), "cost_above_limit");
        client
            .get(format!("{}/small", server.uri()))
            .send()
            .await
            .unwrap();
    }
    let paths: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.url.path().to_owned())
        .collect();
    assert_eq!(paths, vec!["/small"; 3]);
}

#[tokio::test]
async fn a_cost_just_at_the_bound_is_sent_and_one_more_is_refused() {
    let clock = pacer_core::ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![ok()]).on(&clock)).await;
    let pacer = pacer_on(&clock, reqwest_pacer::LimiterConfig::new(at_most_twenty()));
    let client = client(&pacer);
    let above = client.get(server.uri()).with_extension(Cost(21));
    let err = drive(&clock, above.send()).await.unwrap_err();
    assert_eq!(
        err.rejection().unwrap().reason(),
        &RejectReason::CostAboveLimit { cost: 21, max: 20 }
    );
    let at_bound = client.get(server.uri()).with_extension(Cost(20));
    drive(&clock, at_bound.send()).await.unwrap();
    assert_eq!(script.calls(), 1);
    // It left 10 units of debt, one second at the rate: MaxWait exactly. A request right after
    // it would wait the debt and its own unit, 1.1 s: refused.
    let err = drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap_err();
    assert_eq!(err.rejection().unwrap().kind(), "wait_too_long:queue");
    // 200 ms later it fits within MaxWait: it waits the debt out and goes when the debt and
    // its unit are paid, 1.1 s after the take.
    clock.advance(Duration::from_millis(200));
    drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    assert_eq!(script.gap(0, 1), Duration::from_millis(1_100));
    assert_eq!(script.calls(), 2);
}

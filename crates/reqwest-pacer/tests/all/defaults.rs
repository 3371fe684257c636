//! `PacerMiddleware::default()` holds nothing back until the server throttles.

use crate::support::client;
use reqwest_pacer::PacerMiddleware;
use std::sync::Arc;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_default_middleware_sends_a_burst_to_a_server_that_never_throttles_without_waits() {
    const TASKS: usize = 50;
    const EACH: usize = 20;
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let pacer = PacerMiddleware::default();
    let client = Arc::new(client(&pacer));
    let url = Arc::new(server.uri());
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (client, url) = (Arc::clone(&client), Arc::clone(&url));
            tokio::spawn(async move {
                let mut ok = 0;
                for _ in 0..EACH {
                    let r = client.get(url.as_str()).send().await.expect("not refused");
                    assert_eq!(r.status(), 200);
                    ok += 1;
                }
                ok
            })
        })
        .collect();
    let mut sent = 0;
    for t in tasks {
        sent += t.await.unwrap();
    }
    assert_eq!(sent, TASKS * EACH);
    let limiter = pacer.default_limiter().to_owned();
    let endpoints = pacer.endpoints(&limiter).unwrap();
    assert_eq!(endpoints.len(), 1);
    let s = pacer
        .state(&limiter, &endpoints[0])
        .unwrap()
        .limiter
        .unwrap();
    assert!(
        !s.limiting,
        "no throttle came: the limiter does not limit yet"
    );
    assert_eq!(s.stats.granted_requests, (TASKS * EACH) as u64);
    assert_eq!(s.stats.waited_requests, 0);
    assert_eq!(
        s.stats.rejected_wait + s.stats.rejected_queue_full + s.stats.rejected_cost,
        0
    );
}

#[tokio::test]
async fn the_default_middleware_starts_limiting_at_the_first_429() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let pacer = PacerMiddleware::default();
    let client = client(&pacer);
    let r = client.get(server.uri()).send().await.unwrap();
    assert_eq!(r.status(), 200, "the throttled request was sent again");
    let limiter = pacer.default_limiter().to_owned();
    let endpoint = pacer.endpoints(&limiter).unwrap().remove(0);
    let s = pacer.state(&limiter, &endpoint).unwrap().limiter.unwrap();
    assert!(s.limiting);
    assert_eq!(s.stats.throttled, 1);
    assert!(s.rate < 6000.0, "started from what was sent: {}", s.rate);
}

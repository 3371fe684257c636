//! Strict windows from configuration hold back requests through the middleware.

use crate::support::*;
use pacer_config::WindowStoreSettings;
use reqwest_middleware::ClientBuilder;
use reqwest_pacer::PacerErrorExt;
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    server
}

/// Sends 5 requests through a middleware built from `config`; returns the refusals.
async fn send_five(config: &str, server: &MockServer) -> Vec<String> {
    let pacer = toml(config).unwrap().build().unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .build();
    let mut refusals = Vec::new();
    for _ in 0..5 {
        if let Err(e) = client.get(server.uri()).send().await {
            refusals.push(
                e.rejection()
                    .map_or("other".into(), |r| r.kind().to_owned()),
            );
        }
    }
    refusals
}

async fn received(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn a_configured_memory_window_holds_back_what_it_must() {
    let server = server().await;
    let refused = send_five(
        r#"
        [adaptive_rate_limiting.limiters.api]
        max_wait = "1s"
        [[adaptive_rate_limiting.limiters.api.windows]]
        name = "daily"
        limit = 3
        per = "1d"
        "#,
        &server,
    )
    .await;
    assert_eq!(received(&server).await, 3);
    assert_eq!(refused, ["wait_too_long:window"; 2]);
}

#[test]
fn windows_are_read_with_their_defaults() {
    let s = json(
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "api": { "Windows": [
            { "Limit": 30, "Per": "00:10:00" },
            { "Name": "shared", "Limit": 5, "Per": "1s", "Frames": 20,
              "Store": "redis://127.0.0.1:6379", "KeyPrefix": "app:", "OnStoreFailure": "FailClosed" }
        ] } } } }"#,
    );
    let s = match s {
        Ok(s) => s,
        // Without the `redis` feature a Redis store is refused, clearly.
        Err(e) if cfg!(not(feature = "redis")) => {
            assert!(
                lines(&e)[0].contains("needs Pacer's `redis` feature"),
                "{e}"
            );
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let w = &s.limiter("api").unwrap().windows;
    assert_eq!(w.len(), 2);
    assert_eq!(
        (w[0].name.as_str(), w[0].limit, w[0].frames),
        ("window-0", 30, 10)
    );
    assert_eq!(w[0].per, Duration::from_secs(600));
    assert_eq!(w[0].store, WindowStoreSettings::Memory);
    assert_eq!(w[1].frames, 20);
    assert_eq!(
        w[1].store,
        WindowStoreSettings::Redis {
            url: "redis://127.0.0.1:6379".into(),
            key_prefix: Some("app:".into())
        }
    );
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_configured_redis_window_is_shared_by_two_middlewares() {
    let url = pacer_redis::testing::url();
    let prefix = pacer_redis::testing::unique_prefix();
    let config = format!(
        r#"
        [adaptive_rate_limiting.limiters.api]
        max_wait = "1s"
        [[adaptive_rate_limiting.limiters.api.windows]]
        name = "shared"
        limit = 4
        per = "1d"
        store = "{url}"
        key_prefix = "{prefix}"
        on_store_failure = "FailClosed"
        "#
    );
    // Two "processes" with the same configuration, to the same endpoint: together they send 4.
    let server = server().await;
    let first = send_five(&config, &server).await;
    assert_eq!((received(&server).await, first.len()), (4, 1));
    let second = send_five(&config, &server).await;
    assert_eq!(received(&server).await, 4);
    assert_eq!(second, ["wait_too_long:window"; 5]);
}

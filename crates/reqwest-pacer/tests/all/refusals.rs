//! Refusals that are not this client's rate, through the middleware: Stripe's `lock_timeout`
//! and concurrency limiters, Discord's shared and global limits (docs/responses.md).

use crate::retry_after::endpoint;
use crate::support::*;
use pacer_core::{KeyMode, ManualClock};
use reqwest_pacer::LimiterConfig;
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Stripe's `lock_timeout` (a 429 with that code) and a 429 of its concurrency limiter
/// (`Stripe-Rate-Limited-Reason: endpoint-concurrency`): the request alone is sent again a
/// second later (`PauseWithoutRetryAfter`); the rate is not cut and the endpoint is not
/// stopped, so the next request goes at once.
#[tokio::test]
async fn stripe_s_contention_retries_the_request_alone() {
    let lock = ResponseTemplate::new(429).set_body_raw(
        r#"{"error":{"code":"lock_timeout","message":"This object cannot be accessed right now because another API request or Stripe process is currently accessing it.","type":"invalid_request_error"}}"#,
        "application/json",
    );
    let concurrency = ResponseTemplate::new(429)
        .insert_header("stripe-rate-limited-reason", "endpoint-concurrency")
        .set_body_raw(
            r#"{"error":{"code":"rate_limit","message":"Too many concurrent requests.","type":"invalid_request_error"}}"#,
            "application/json",
        );
    for refusal in [lock, concurrency] {
        let clock = ManualClock::new();
        let (server, script) =
            serve_script(Script::new(vec![refusal, ok(), ok()]).on(&clock)).await;
        let pacer = pacer_on(&clock, LimiterConfig::new(generous()));
        let client = client(&pacer);
        let first = drive(&clock, client.get(server.uri()).send())
            .await
            .unwrap();
        assert_eq!(first.status(), 200);
        let retry = script.gap(0, 1);
        assert!(
            retry >= Duration::from_secs(1) && retry < Duration::from_millis(1_010),
            "{retry:?}"
        );
        let next = drive(&clock, client.get(server.uri()).send())
            .await
            .unwrap();
        assert_eq!(next.status(), 200);
        assert!(
            script.gap(1, 2) < Duration::from_millis(10),
            "nothing held the next"
        );
        let limiter = pacer
            .state("api", &endpoint(&server))
            .unwrap()
            .limiter
            .unwrap();
        assert_eq!(limiter.decreases, 0, "the rate was not cut");
    }
}

/// Discord's global limit (`X-RateLimit-Global: true`) holds every endpoint of the limiter for
/// its `Retry-After`; a shared one (`X-RateLimit-Scope: shared`) holds its endpoint without a
/// cut.
#[tokio::test]
async fn discord_s_global_limit_holds_every_endpoint() {
    let server = MockServer::start().await;
    let clock = ManualClock::new();
    let global = ResponseTemplate::new(429)
        .insert_header("retry-after", "3")
        .insert_header("x-ratelimit-global", "true")
        .insert_header("x-ratelimit-scope", "global")
        .set_body_raw(
            r#"{"message":"You are being rate limited.","retry_after":2.5,"global":true}"#,
            "application/json",
        );
    let channels = Script::new(vec![global, ok()]).on(&clock);
    let guilds = Script::new(vec![ok()]).on(&clock);
    Mock::given(method("GET"))
        .and(path("/channels"))
        .respond_with(channels.clone())
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/guilds"))
        .respond_with(guilds.clone())
        .mount(&server)
        .await;
    let config = LimiterConfig::new(generous()).endpoint_key(KeyMode::HostAndFirstSegment);
    let pacer = pacer_on(&clock, config);
    let client = client(&pacer);
    let first = tokio::spawn({
        let (client, uri) = (client.clone(), format!("{}/channels", server.uri()));
        async move { client.get(uri).send().await.unwrap().status() }
    });
    // Until the middleware has read the refusal (its endpoint's rate was cut).
    let channels_key = format!("{}/channels", endpoint(&server));
    let read = eventually_within(Duration::from_secs(5), || {
        pacer
            .state("api", &channels_key)
            .ok()
            .and_then(|s| s.limiter)
            .is_some_and(|l| l.decreases == 1)
    })
    .await;
    assert!(read, "the refusal was read");
    let started = pacer_core::Clock::now(&clock);
    let other = drive(
        &clock,
        client.get(format!("{}/guilds", server.uri())).send(),
    )
    .await
    .unwrap();
    assert_eq!(other.status(), 200);
    let waited = pacer_core::Clock::now(&clock) - started;
    assert!(
        waited >= Duration::from_secs(3),
        "another endpoint waited: {waited:?}"
    );
    assert_eq!(drive(&clock, first).await.unwrap(), 200);
}

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

/// Discord's buckets (`EndpointKey = DiscordRoute`): two routes of one channel that Discord
/// names the same bucket (`X-RateLimit-Bucket`) share one rate once a response said so: a
/// 429 on one stops the other. Discord's docs, "Rate Limits": "the bucket … shared across
/// routes", per major parameter.
#[tokio::test]
async fn routes_that_share_a_discord_bucket_share_a_stop() {
    let server = MockServer::start().await;
    let clock = ManualClock::new();
    let bucket = |t: ResponseTemplate| {
        t.insert_header("x-ratelimit-limit", "5")
            .insert_header("x-ratelimit-remaining", "4")
            .insert_header("x-ratelimit-reset-after", "1")
            .insert_header("x-ratelimit-bucket", "41f9cd5d28af77da04563bcb1d67fdfd")
    };
    let throttled = bucket(ResponseTemplate::new(429))
        .insert_header("retry-after", "3")
        .insert_header("x-ratelimit-scope", "user");
    let messages = Script::new(vec![bucket(ok()), throttled, bucket(ok())]).on(&clock);
    let message = Script::new(vec![bucket(ok())]).on(&clock);
    Mock::given(path("/api/v10/channels/223/messages"))
        .respond_with(messages.clone())
        .mount(&server)
        .await;
    Mock::given(path("/api/v10/channels/223/messages/1049"))
        .respond_with(message.clone())
        .mount(&server)
        .await;
    let config = LimiterConfig::new(generous()).endpoint_key(KeyMode::DiscordRoute);
    let pacer = pacer_on(&clock, config);
    let client = client(&pacer);
    let (list, edit) = (
        format!("{}/api/v10/channels/223/messages", server.uri()),
        format!("{}/api/v10/channels/223/messages/1049", server.uri()),
    );
    // Each route's first response names the bucket.
    drive(&clock, client.get(&list).send()).await.unwrap();
    drive(&clock, client.get(&edit).send()).await.unwrap();
    // A 429 on the list route (retried after 3 s) stops the bucket: the edit route waits too.
    let first = tokio::spawn({
        let (client, list) = (client.clone(), list.clone());
        async move { client.get(list).send().await.unwrap().status() }
    });
    let read = eventually_within(Duration::from_secs(5), || messages.calls() >= 2).await;
    assert!(read);
    let bucket_key = format!(
        "{}#41f9cd5d28af77da04563bcb1d67fdfd/channels/223",
        endpoint(&server)
    );
    let stopped = eventually_within(Duration::from_secs(5), || {
        pacer
            .state("api", &bucket_key)
            .ok()
            .and_then(|s| s.limiter)
            .is_some_and(|l| l.stats.throttled == 1)
    })
    .await;
    assert!(stopped, "the throttle reached the bucket's endpoint");
    let started = pacer_core::Clock::now(&clock);
    drive(&clock, client.get(&edit).send()).await.unwrap();
    let waited = pacer_core::Clock::now(&clock) - started;
    assert!(
        waited >= Duration::from_secs(3),
        "the other route waited: {waited:?}"
    );
    assert_eq!(drive(&clock, first).await.unwrap(), 200);
}

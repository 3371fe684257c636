//! Quotas in other units (OpenAI's tokens): each policy paces what it counts.

use crate::retry_after::endpoint;
use crate::support::*;
use pacer_core::{ManualClock, QuotaUnit};
use reqwest_pacer::{
    LimiterConfig, PacerErrorExt, PacerMiddleware, RejectReason, TokenCost, WaitCause,
};
use std::time::Duration;
use wiremock::{MockServer, ResponseTemplate};

/// OpenAI's headers: 60 requests (59 left, full in 1 s), and `tokens` as given.
fn openai(limit: u64, remaining: u64, reset: &str) -> ResponseTemplate {
    with_openai(ok(), limit, remaining, reset)
}

fn with_openai(t: ResponseTemplate, limit: u64, remaining: u64, reset: &str) -> ResponseTemplate {
    with_requests(t)
        .insert_header("x-ratelimit-limit-tokens", limit.to_string().as_str())
        .insert_header(
            "x-ratelimit-remaining-tokens",
            remaining.to_string().as_str(),
        )
        .insert_header("x-ratelimit-reset-tokens", reset)
}

fn requests_only() -> ResponseTemplate {
    with_requests(ok())
}

fn with_requests(t: ResponseTemplate) -> ResponseTemplate {
    t.insert_header("x-ratelimit-limit-requests", "60")
        .insert_header("x-ratelimit-remaining-requests", "59")
        .insert_header("x-ratelimit-reset-requests", "1s")
}

async fn serve(response: ResponseTemplate) -> (MockServer, Script) {
    let (server, script) = scripted(vec![response]).await;
    (server, script)
}

fn pacer_with(config: LimiterConfig) -> PacerMiddleware {
    PacerMiddleware::builder()
        .limiter("api", config.no_throttling())
        .build()
        .unwrap()
}

/// The same on `clock`, serving `response` with arrivals timed on it.
async fn on_clock(
    clock: &ManualClock,
    config: LimiterConfig,
    response: ResponseTemplate,
) -> (MockServer, Script, PacerMiddleware) {
    let (server, script) = serve_script(Script::new(vec![response]).on(clock)).await;
    (server, script, pacer_on(clock, config.no_throttling()))
}

#[tokio::test]
async fn the_tokens_policy_never_sets_the_request_rate() {
    // Tokens far scarcer than requests: read as requests they would give 17 a minute.
    let (both, _) = serve(openai(150_000, 100, "6m0s")).await;
    let (requests, _) = serve(requests_only()).await;
    let mut rates = Vec::new();
    for server in [&both, &requests] {
        let pacer = pacer_with(LimiterConfig::new(generous()));
        client(&pacer).get(server.uri()).send().await.unwrap();
        let state = pacer.state("api", &endpoint(server)).unwrap();
        rates.push(state.limiter.unwrap().rate);
    }
    assert_eq!(
        rates[0], rates[1],
        "the same rate with or without the tokens policy"
    );
    assert!(rates[0] > 1000.0, "paced to the requests: {rates:?}");
}

#[tokio::test]
async fn a_request_whose_tokens_are_not_there_waits_for_the_refill() {
    // 100 of 1,000 left, full in 9 s: 100 tokens come back a second; 300 are there in 2 s.
    let clock = ManualClock::new();
    let (server, script, pacer) = on_clock(
        &clock,
        LimiterConfig::new(generous()),
        openai(1_000, 100, "9s"),
    )
    .await;
    let client = client(&pacer);
    drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    let costly = client.get(server.uri()).with_extension(TokenCost(300));
    drive(&clock, costly.send()).await.unwrap();
    // 200 more tokens at 100 a second: 2 s, to the rounding of the refill.
    let gap = script.gap(0, 1);
    assert!(
        gap >= Duration::from_millis(1_990) && gap <= Duration::from_millis(2_010),
        "{gap:?}"
    );
}

#[tokio::test]
async fn a_refill_longer_than_max_wait_is_refused_with_its_cause() {
    let (server, script) = serve(openai(1_000, 100, "9s")).await;
    let mut options = generous();
    options.max_wait = Duration::from_secs(1);
    let pacer = pacer_with(LimiterConfig::new(options));
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap();
    let err = client
        .get(server.uri())
        .with_extension(TokenCost(300))
        .send()
        .await
        .unwrap_err();
    match err.rejection().unwrap().reason() {
        RejectReason::WaitTooLong { cause, needed, .. } => {
            assert_eq!(*cause, WaitCause::UnitQuota);
            assert!(*needed >= Duration::from_millis(1_900), "{needed:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(script.calls(), 1, "nothing sent");
}

#[tokio::test]
async fn a_cost_above_the_limit_is_refused_before_it_is_sent() {
    let (server, script) = serve(openai(1_000, 1_000, "0s")).await;
    // The estimator's count, unless the request says otherwise.
    let pacer = pacer_with(LimiterConfig::new(generous()).token_estimator(|_| Some(5_000)));
    let client = client(&pacer);
    client
        .get(server.uri())
        .with_extension(TokenCost(10))
        .send()
        .await
        .unwrap();
    let err = client.get(server.uri()).send().await.unwrap_err();
    assert_eq!(
        err.rejection().unwrap().reason(),
        &RejectReason::AboveQuotaLimit {
            policy: Some("tokens".into()),
            unit: QuotaUnit::Tokens,
            limit: 1_000,
            cost: 5_000,
        }
    );
    assert_eq!(err.rejection().unwrap().kind(), "above_quota_limit");
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn a_request_of_unknown_tokens_waits_only_for_an_exhausted_quota() {
    // Not exhausted: no wait at all for a request that says nothing of its tokens.
    let (server, script) = serve(openai(1_000, 1, "59s")).await;
    let pacer = pacer_with(LimiterConfig::new(generous()));
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap();
    client.get(server.uri()).send().await.unwrap();
    assert_eq!(script.calls(), 2);
    // Exhausted: until the reset (1 s), though a token comes back every millisecond.
    let clock = ManualClock::new();
    let (server, script, pacer) = on_clock(
        &clock,
        LimiterConfig::new(generous()),
        openai(1_000, 0, "1s"),
    )
    .await;
    let client = crate::support::client(&pacer);
    drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    let gap = script.gap(0, 1);
    assert!(
        gap >= Duration::from_millis(990) && gap <= Duration::from_millis(1_010),
        "{gap:?}"
    );
}

#[tokio::test]
async fn an_exhausted_tokens_quota_holds_a_request_for_its_tokens_not_until_full() {
    // A 429 with no tokens left, full again in 10 s: 100 tokens a second come back. A request
    // of 50 tokens waits half a second, not the 10 s until the quota is full (over MaxWait).
    let throttle = with_openai(ResponseTemplate::new(429), 1_000, 0, "10s");
    let clock = ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![throttle, ok()]).on(&clock)).await;
    let mut options = generous();
    options.max_wait = Duration::from_secs(3);
    // The fields said when the tokens are back: no `PauseWithoutRetryAfter` on top.
    let pacer = pacer_on(&clock, LimiterConfig::new(options).no_throttling());
    let client = client(&pacer);
    let request = client.get(server.uri()).with_extension(TokenCost(50));
    let response = drive(&clock, request.send()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    let gap = script.gap(0, 1);
    assert!(
        gap >= Duration::from_millis(490) && gap <= Duration::from_millis(510),
        "{gap:?}"
    );
}

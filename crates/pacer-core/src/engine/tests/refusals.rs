//! Refusals that are not (only) this client's rate: a penalty, contention, a shared limit, a
//! global one (`RefusalClass`), each as its vendor documents it.

use super::*;
use crate::RefusalClass;

fn read_body_of(status: u16, fields: &[(&'static str, &str)], body: &[u8]) -> Reading {
    let rules = Rules::default();
    let status = StatusCode::from_u16(status).unwrap();
    let mut h = headers(fields);
    h.insert("content-type", "application/json".parse().unwrap());
    let said = rules.judge_body(status, &h, body);
    rules.read(
        status,
        &h,
        said.verdict.as_ref(),
        SystemTime::UNIX_EPOCH + secs(1_700_000_000),
        Duration::from_secs(300),
    )
}

/// The endpoint's stop at `now`: what `hold` asks of the next request.
fn stop(engine: &Engine, endpoint: &Endpoint, now: Timestamp) -> Duration {
    engine
        .hold(
            &Rules::default(),
            endpoint,
            now,
            Duration::from_secs(300),
            true,
        )
        .wait
}

/// GitHub's REST API docs ("Rate limits for the REST API"), a secondary limit's answer.
const GITHUB_SECONDARY: &[u8] = br#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 1A2B:3C4D:5E6F.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}"#;

#[test]
fn github_s_secondary_limit_is_a_penalty_of_at_least_a_minute_that_doubles() {
    let (engine, endpoint) = engine_and_endpoint("api.github.com");
    // A 403 that says nothing in its headers: a throttle, for its body.
    let first = read_body_of(403, &[], GITHUB_SECONDARY);
    assert_eq!(first.refusal(), RefusalClass::Penalty);
    assert!(matches!(first.signal(), Signal::Throttled { .. }));
    let after = engine.after(&endpoint, first, 1, at(0), at(0));
    assert!(after.retry);
    assert!(after.changes.rate.is_some(), "the rate is cut");
    assert_eq!(
        stop(&engine, &endpoint, at(0)),
        secs(60),
        "at least a minute"
    );
    // Again within twice its stop: twice as long; a Retry-After longer than that wins.
    let again = read_body_of(429, &[], GITHUB_SECONDARY);
    let _ = engine.after(&endpoint, again, 1, at(61), at(61));
    assert_eq!(stop(&engine, &endpoint, at(61)), secs(120));
    let again = read_body_of(403, &[("retry-after", "250")], GITHUB_SECONDARY);
    let _ = engine.after(&endpoint, again, 1, at(200), at(200));
    assert_eq!(stop(&engine, &endpoint, at(200)), secs(250));
    // Long after: back to a minute.
    let later = read_body_of(403, &[], GITHUB_SECONDARY);
    let _ = engine.after(&endpoint, later, 1, at(5_000), at(5_000));
    assert_eq!(stop(&engine, &endpoint, at(5_000)), secs(60));
    // A 403 of another kind is no throttle.
    let forbidden = read_body_of(
        403,
        &[],
        br#"{"message":"Must have admin rights to Repository."}"#,
    );
    assert_eq!(forbidden.signal(), Signal::Neutral);
}

/// Stripe's error codes: `lock_timeout`, a 429.
const STRIPE_LOCK: &[u8] = br#"{"error":{"code":"lock_timeout","doc_url":"https://stripe.com/docs/error-codes/lock-timeout","message":"This object cannot be accessed right now because another API request or Stripe process is currently accessing it. If you see this error intermittently, retry the request. If you see this error frequently and are making multiple concurrent requests to a single object, make your requests serially or at a lower rate.","type":"invalid_request_error"}}"#;

#[test]
fn stripe_s_lock_timeout_and_concurrency_limits_retry_the_request_alone() {
    for (fields, body) in [
        (&[][..], STRIPE_LOCK),
        (
            &[("stripe-rate-limited-reason", "endpoint-concurrency")][..],
            &br#"{"error":{"code":"rate_limit","type":"invalid_request_error"}}"#[..],
        ),
        (
            &[("stripe-rate-limited-reason", "global-concurrency")][..],
            &b"{}"[..],
        ),
    ] {
        let (engine, endpoint) = engine_and_endpoint("api.stripe.com");
        let reading = read_body_of(429, fields, body);
        assert_eq!(reading.refusal(), RefusalClass::Contention, "{fields:?}");
        let after = engine.after(&endpoint, reading, 1, at(0), at(0));
        assert!(after.retry, "sent again");
        assert_eq!(
            after.retry_in,
            Some(secs(1)),
            "after PauseWithoutRetryAfter"
        );
        assert!(after.changes.rate.is_none(), "the rate is not cut");
        assert!(!endpoint.limiter().is_limiting(), "nor does limiting start");
        assert_eq!(stop(&engine, &endpoint, at(0)), Duration::ZERO, "no stop");
    }
    // `global-rate` is the rate; `Stripe-Should-Retry: false` is honoured.
    let rate = read_body_of(429, &[("stripe-rate-limited-reason", "global-rate")], b"{}");
    assert_eq!(rate.refusal(), RefusalClass::Rate);
    let no = read_body_of(429, &[("stripe-should-retry", "false")], b"{}");
    assert!(no.retry_refused());
}

#[test]
fn discord_s_shared_scope_stops_without_a_cut_and_global_stops_every_endpoint() {
    let (engine, endpoint) = engine_and_endpoint("discord.com/channels");
    let shared = read_body_of(
        429,
        &[("retry-after", "5"), ("x-ratelimit-scope", "shared")],
        br#"{"message":"You are being rate limited.","retry_after":4.5,"global":false}"#,
    );
    assert_eq!(shared.refusal(), RefusalClass::Shared);
    let after = engine.after(&endpoint, shared, 1, at(0), at(0));
    assert!(after.retry);
    assert!(after.changes.rate.is_none(), "not this client's rate");
    assert_eq!(
        stop(&engine, &endpoint, at(0)),
        secs(5),
        "but its Retry-After holds"
    );

    let other = engine.endpoint(
        "discord.com/guilds",
        at(10),
        || Limiter::new(LimiterOptions::default()).unwrap(),
        |_| {},
    );
    let global = read_body_of(
        429,
        &[
            ("retry-after", "7"),
            ("x-ratelimit-global", "true"),
            ("x-ratelimit-scope", "global"),
        ],
        br#"{"message":"You are being rate limited.","retry_after":6.5,"global":true}"#,
    );
    assert_eq!(global.refusal(), RefusalClass::Global);
    let after = engine.after(&endpoint, global, 1, at(10), at(10));
    assert!(after.changes.rate.is_some(), "the rate is cut");
    assert_eq!(
        stop(&engine, &other, at(10)),
        secs(7),
        "every endpoint stops"
    );
    assert_eq!(stop(&engine, &other, at(17)), Duration::ZERO);
}

#[test]
fn a_model_api_s_refusal_for_tokens_with_requests_left_cuts_no_rate() {
    // OpenAI's rate-limit guide: a bare 429 with the six fields; here 300 requests are left
    // and 200 tokens, fewer than the request needed.
    let openai = |requests_left: &str| {
        read_body_of(
            429,
            &[
                ("x-ratelimit-limit-requests", "500"),
                ("x-ratelimit-remaining-requests", requests_left),
                ("x-ratelimit-reset-requests", "120ms"),
                ("x-ratelimit-limit-tokens", "30000"),
                ("x-ratelimit-remaining-tokens", "200"),
                ("x-ratelimit-reset-tokens", "3s"),
            ],
            br#"{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}"#,
        )
    };
    let (engine, endpoint) = engine_and_endpoint("api.openai.com/v1/chat/completions");
    let for_tokens = openai("300");
    assert_eq!(for_tokens.refusal(), RefusalClass::Tokens);
    let after = engine.after(&endpoint, for_tokens, 1, at(0), at(0));
    assert!(after.retry, "sent again once its tokens are back");
    assert!(after.changes.rate.is_none(), "the request rate is not cut");
    assert_eq!(
        stop(&engine, &endpoint, at(0)),
        Duration::ZERO,
        "no stop for every request: the budget in tokens holds those that need tokens"
    );

    // No request left: the request rate is what the server lacked.
    let (engine, endpoint) = engine_and_endpoint("api.openai.com/v1/chat/completions");
    let for_requests = openai("0");
    assert_eq!(for_requests.refusal(), RefusalClass::Rate);
    let after = engine.after(&endpoint, for_requests, 1, at(0), at(0));
    assert!(after.changes.rate.is_some(), "the rate is cut");

    // Anthropic's 429 says `retry-after`: the endpoint stops for it, the rate is not cut.
    let (engine, endpoint) = engine_and_endpoint("api.anthropic.com/v1/messages");
    let anthropic = read_body_of(
        429,
        &[
            ("retry-after", "4"),
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "41"),
            ("anthropic-ratelimit-requests-reset", "2023-11-14T22:13:21Z"),
            ("anthropic-ratelimit-input-tokens-limit", "30000"),
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            ("anthropic-ratelimit-input-tokens-reset", "2023-11-14T22:13:24Z"),
        ],
        br#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization"}}"#,
    );
    assert_eq!(anthropic.refusal(), RefusalClass::Tokens);
    let after = engine.after(&endpoint, anthropic, 1, at(0), at(0));
    assert!(after.changes.rate.is_none());
    assert_eq!(stop(&engine, &endpoint, at(0)), secs(4));

    // Fields in requests only (no budget in tokens): a refusal with requests left is the rate.
    let plain = read_body_of(
        429,
        &[("x-ratelimit-limit", "100"), ("x-ratelimit-remaining", "3")],
        b"{}",
    );
    assert_eq!(plain.refusal(), RefusalClass::Rate);
}

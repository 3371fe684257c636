//! Tokens reserved before the send and settled from the usage the answer reports: an
//! over-estimate given back, an under-estimate charged, a stream settled at its end, a refused
//! or failed request refunded.

use crate::retry_after::endpoint;
use crate::support::*;
use pacer_core::ManualClock;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_pacer::{LimiterConfig, OutputTokens, PacerMiddleware, TokenCost};
use wiremock::ResponseTemplate;

/// An OpenAI answer: 10,000 tokens a minute, `remaining` left, and `body` of `content_type`.
fn openai(remaining: u64, content_type: &str, body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("x-ratelimit-limit-tokens", "10000")
        .insert_header(
            "x-ratelimit-remaining-tokens",
            remaining.to_string().as_str(),
        )
        .insert_header("x-ratelimit-reset-tokens", "6m0s")
        .set_body_raw(body.as_bytes().to_vec(), content_type)
}

/// A chat completion's JSON with its usage.
fn completion(prompt: u64, completion: u64) -> String {
    format!(
        r#"{{"object":"chat.completion","choices":[{{"message":{{"content":"hi"}}}}],
        "usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion}}}}}"#
    )
}

/// The tokens left in the endpoint's budget (the clock stands still: nothing refills).
fn available(pacer: &PacerMiddleware, server: &wiremock::MockServer) -> u64 {
    let state = pacer.state("api", &endpoint(server)).unwrap();
    state.budgets.budgets()[0].left().unwrap()
}

async fn setup(second: ResponseTemplate) -> (wiremock::MockServer, PacerMiddleware) {
    let (server, pacer, _) = setup_with(vec![second], reqwest::Client::new()).await;
    (server, pacer)
}

/// A server whose first answer tells the budget (10,000 tokens), then `later`; the limiter on a
/// clock that stands still (nothing refills), and `inner` behind it.
async fn setup_with(
    later: Vec<ResponseTemplate>,
    inner: reqwest::Client,
) -> (wiremock::MockServer, PacerMiddleware, ClientWithMiddleware) {
    let first = openai(10_000, "application/json", &completion(0, 0));
    let (server, _) = scripted([vec![first], later].concat()).await;
    let config = LimiterConfig::new(generous()).no_throttling();
    let pacer = pacer_on(&ManualClock::new(), config);
    let client = ClientBuilder::new(inner).with(pacer.clone()).build();
    let first = client.get(server.uri()).send().await.unwrap();
    first.text().await.unwrap();
    assert_eq!(available(&pacer, &server), 10_000);
    (server, pacer, client)
}

#[tokio::test]
async fn an_over_estimate_is_given_back_when_the_body_is_read() {
    // The server counted the reservation (1,200) when the request came; it used 250.
    let answer = openai(8_800, "application/json", &completion(200, 50));
    let (server, pacer) = setup(answer).await;
    let response = client(&pacer)
        .get(server.uri())
        .with_extension(TokenCost(1_200))
        .with_extension(OutputTokens(1_000))
        .send()
        .await
        .unwrap();
    assert_eq!(available(&pacer, &server), 8_800, "not read yet");
    let body = response.text().await.unwrap();
    assert!(
        body.contains("chat.completion"),
        "the caller reads the body: {body}"
    );
    assert_eq!(available(&pacer, &server), 9_750, "950 given back");
}

#[tokio::test]
async fn an_under_estimate_is_charged() {
    let answer = openai(9_900, "application/json", &completion(200, 300));
    let (server, pacer) = setup(answer).await;
    let response = client(&pacer)
        .get(server.uri())
        .with_extension(TokenCost(100))
        .send()
        .await
        .unwrap();
    response.bytes().await.unwrap();
    assert_eq!(available(&pacer, &server), 9_500, "400 more charged");
}

#[tokio::test]
async fn a_stream_is_settled_at_its_end_and_an_unread_one_not_at_all() {
    let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n\
        data: {\"choices\":[],\"usage\":{\"prompt_tokens\":200,\"completion_tokens\":50}}\n\n\
        data: [DONE]\n\n";
    let answer = openai(8_800, "text/event-stream", stream);
    let (server, pacer) = setup(answer).await;
    let client = client(&pacer);
    let send = || {
        client
            .get(server.uri())
            .with_extension(TokenCost(1_200))
            .with_extension(OutputTokens(1_000))
            .send()
    };
    let response = send().await.unwrap();
    assert_eq!(available(&pacer, &server), 8_800);
    let mut response = response;
    let mut read = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        read.extend_from_slice(&chunk);
    }
    assert_eq!(read, stream.as_bytes(), "the caller reads the same bytes");
    assert_eq!(available(&pacer, &server), 9_750);
    // Dropped unread: the reservation stands until the server's next numbers.
    drop(send().await.unwrap());
    assert_eq!(available(&pacer, &server), 8_800, "the server's numbers");
}

#[tokio::test]
async fn a_refused_or_failed_request_refunds_its_tokens() {
    let slow = ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(5));
    // A client that gives up on a send after 200 ms.
    let inner = reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(200))
        .build()
        .unwrap();
    let later = vec![ResponseTemplate::new(500), slow];
    let (server, pacer, client) = setup_with(later, inner).await;
    let cost = |n| client.get(server.uri()).with_extension(TokenCost(n));
    // An error answered nothing: the 1,000 come back.
    let response = cost(1_000).send().await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(available(&pacer, &server), 10_000);
    // A send that fails (no answer in time) gives them back too.
    assert!(cost(2_000).send().await.is_err());
    assert_eq!(available(&pacer, &server), 10_000);
}

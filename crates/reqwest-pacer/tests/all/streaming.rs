use crate::support::*;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

#[tokio::test]
async fn a_streaming_body_is_never_sent_twice() {
    let server = MockServer::start().await;
    let script = Script::new(vec![throttled("0"), ok()]);
    Mock::given(method("POST"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer(generous());
    let chunks: Vec<Result<&'static str, std::io::Error>> = vec![Ok("a"), Ok("b")];
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let response = client(&pacer)
        .post(server.uri())
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429, "the caller gets the throttle back");
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn a_buffered_body_is_sent_again() {
    let server = MockServer::start().await;
    let script = Script::new(vec![throttled("0"), ok()]);
    Mock::given(method("POST"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer(generous());
    let response = client(&pacer)
        .post(server.uri())
        .body("payload")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    let received = server.received_requests().await.unwrap();
    assert!(received.iter().all(|r| r.body == b"payload"));
}

//! The layer settles a request's tokens from the usage its answer's body reports, as the
//! caller reads it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use pacer_core::{LimiterOptions, ManualClock};
use std::future::Ready;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_pacer::{EndpointKey, OutputTokens, PacerLayer, TokenCost};
use tower_service::Service;

/// An OpenAI-like API: 10,000 tokens a minute, `remaining` from a counter it lowers by what
/// each request reserves, and a stream of events whose last one reports 200 + 50 tokens used.
#[derive(Clone, Default)]
struct Api {
    remaining: Arc<AtomicU64>,
}

impl Service<http::Request<Full<Bytes>>> for Api {
    type Response = http::Response<Full<Bytes>>;
    type Error = std::convert::Infallible;
    type Future = Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Full<Bytes>>) -> Self::Future {
        let reserved = request.extensions().get::<TokenCost>().map_or(0, |t| t.0);
        let remaining = self.remaining.fetch_sub(reserved, Ordering::SeqCst) - reserved;
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\
            data: {\"choices\":[],\"usage\":{\"prompt_tokens\":200,\"completion_tokens\":50}}\n\n\
            data: [DONE]\n\n";
        let response = http::Response::builder()
            .header("content-type", "text/event-stream")
            .header("x-ratelimit-limit-tokens", "10000")
            .header("x-ratelimit-remaining-tokens", remaining.to_string())
            .header("x-ratelimit-reset-tokens", "6m0s")
            .body(Full::from(body))
            .unwrap();
        std::future::ready(Ok(response))
    }
}

#[tokio::test]
async fn a_stream_s_usage_gives_back_what_its_reservation_took_above_it() {
    let clock = ManualClock::new();
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(6_000.0);
    let layer = PacerLayer::builder(options)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let api = Api::default();
    api.remaining.store(10_000, Ordering::SeqCst);
    let mut service = layer.layer(api);
    let request = |tokens: Option<u64>| {
        let mut request = http::Request::get("http://api.test/v1/chat/completions")
            .body(Full::default())
            .unwrap();
        request
            .extensions_mut()
            .insert(EndpointKey("openai".into()));
        if let Some(t) = tokens {
            request.extensions_mut().insert(TokenCost(t));
            request.extensions_mut().insert(OutputTokens(1_000));
        }
        request
    };
    let available = || layer.budgets("openai").budgets()[0].left();
    // The first answer tells the budget; its body is not read.
    drop(service.call(request(None)).await.unwrap());
    assert_eq!(available(), Some(10_000));
    let response = service.call(request(Some(1_200))).await.unwrap();
    assert_eq!(
        available(),
        Some(8_800),
        "the server counted the reservation"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        body.ends_with(b"data: [DONE]\n\n"),
        "the caller reads it all"
    );
    assert_eq!(available(), Some(9_750), "950 given back at its end");
}

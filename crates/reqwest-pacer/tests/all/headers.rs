use crate::support::*;
use pacer_core::{Clock, ManualClock, RealClock, Timestamp};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A server with a fixed window of `limit` requests per `window` that says so in IETF draft-11
/// headers on every response, and answers 429 when the window is used up.
#[derive(Clone)]
struct Draft11 {
    limit: u64,
    window: Duration,
    state: Arc<parking_lot::Mutex<(Timestamp, u64)>>,
    throttled: Arc<AtomicUsize>,
    /// The server's time: the limiter's manual clock, or the real one.
    clock: Arc<dyn Clock>,
}

impl Respond for Draft11 {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let now = self.clock.now();
        let mut st = self.state.lock();
        if now - st.0 >= self.window {
            *st = (now, 0);
        }
        let reset = (self.window - (now - st.0)).as_secs_f64().ceil().max(1.0) as u64;
        let policy = format!("\"w\";q={};w={}", self.limit, self.window.as_secs());
        if st.1 >= self.limit {
            self.throttled.fetch_add(1, Ordering::SeqCst);
            return ResponseTemplate::new(429)
                .insert_header("ratelimit-policy", policy.as_str())
                .insert_header("ratelimit", format!("\"w\";r=0;t={reset}").as_str())
                .insert_header("retry-after", reset.to_string().as_str());
        }
        st.1 += 1;
        let remaining = self.limit - st.1;
        ResponseTemplate::new(200)
            .insert_header("ratelimit-policy", policy.as_str())
            .insert_header(
                "ratelimit",
                format!("\"w\";r={remaining};t={reset}").as_str(),
            )
    }
}

#[tokio::test]
async fn pacing_to_ratelimit_headers_keeps_the_server_free_of_429s() {
    let server = MockServer::start().await;
    let clock = ManualClock::new();
    let api = Draft11 {
        limit: 5,
        window: Duration::from_secs(1),
        state: Arc::new(parking_lot::Mutex::new((clock.now(), 0))),
        throttled: Arc::default(),
        clock: Arc::new(clock.clone()),
    };
    Mock::given(method("GET"))
        .respond_with(api.clone())
        .mount(&server)
        .await;
    // The adaptive rate alone would not hold back.
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()));
    let client = client(&pacer);
    for _ in 0..12 {
        let response = drive(&clock, client.get(server.uri()).send()).await;
        assert_eq!(response.unwrap().status(), 200);
    }
    assert_eq!(api.throttled.load(Ordering::SeqCst), 0);
    // 12 requests at 5 per window: the third window, two boundaries after the first request.
    assert!(
        clock.now() - Timestamp::ZERO >= Duration::from_secs(2),
        "{:?}",
        clock.now()
    );
    let endpoint = crate::retry_after::endpoint(&server);
    let headers = pacer.state("api", &endpoint).unwrap().headers;
    assert!(headers.is_some_and(|h| h.limit() == Some(5)));
}

/// The endpoint's adaptive limiter follows the server's numbers: after one response, a burst of
/// concurrent requests is paced to "remaining over the time to the reset" instead of going out
/// at the limiter's own (here generous) rate.
#[tokio::test]
async fn a_concurrent_burst_is_paced_to_the_server_s_remaining_and_reset() {
    let server = MockServer::start().await;
    let api = Draft11 {
        limit: 8,
        window: Duration::from_secs(1),
        state: Arc::new(parking_lot::Mutex::new((Timestamp::ZERO, 0))),
        throttled: Arc::default(),
        clock: Arc::new(RealClock::new()),
    };
    Mock::given(method("GET"))
        .respond_with(api.clone())
        .mount(&server)
        .await;
    let pacer = PacerMiddleware::builder()
        .limiter("api", LimiterConfig::new(generous()).no_throttling())
        .build()
        .unwrap();
    let client = client(&pacer);
    assert_eq!(client.get(server.uri()).send().await.unwrap().status(), 200);
    let endpoint = crate::retry_after::endpoint(&server);
    let limiter = pacer.state("api", &endpoint).unwrap().limiter.unwrap();
    assert!(
        limiter.rate < 2_000.0,
        "7 left for under a second: the server's pace, not 60,000 a minute ({})",
        limiter.rate
    );
    let burst = (0..24).map(|_| {
        let client = client.clone();
        let uri = server.uri();
        async move { client.get(uri).send().await.unwrap().status() }
    });
    let statuses = futures_util::future::join_all(burst).await;
    assert!(statuses.iter().all(|s| s.as_u16() == 200), "{statuses:?}");
    let throttled = api.throttled.load(Ordering::SeqCst);
    assert!(
        throttled <= 2,
        "at most 2 of 24 requests over three windows met a 429, got {throttled}"
    );
}

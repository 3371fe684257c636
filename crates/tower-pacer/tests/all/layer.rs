//! The layer in front of a hyper-util client, on a manual clock.

use crate::support::{Recorded, drive, hyper_client, recorded, serve, serve_late};
use bytes::Bytes;
use http_body_util::Full;
use pacer_core::{Clock, LimiterOptions, ManualClock, WaitCause};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_layer::Layer;
use tower_pacer::{
    Cost, EndpointKey, MaxWait, PacerLayer, PacerLayerBuilder, RejectReason, Rejection, TimedOut,
    TotalTimeout,
};
use tower_service::Service;

fn options() -> LimiterOptions {
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(60.0);
    options.max_wait = Duration::from_secs(30);
    options
}

/// A layer of `options` that sends a throttled request 3 times in all.
fn builder(options: LimiterOptions) -> PacerLayerBuilder {
    PacerLayer::builder(options).max_attempts(NonZeroU32::new(3).unwrap())
}

fn get(base: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(format!("{base}/items"))
        .body(Full::default())
        .unwrap()
}

#[tokio::test]
async fn a_throttle_is_retried_after_its_retry_after_and_the_caller_gets_the_success() {
    let base = serve(vec![(429, vec![("retry-after", "4")]), (200, vec![])]).await;
    let clock = ManualClock::new();
    let layer = builder(options())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    let response = drive(&clock, service.call(get(&base))).await.unwrap();
    assert_eq!(response.status(), 200);
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "the throttled attempt and its retry");
    assert!(
        sent[1] - sent[0] >= Duration::from_secs(4),
        "the retry waited for the Retry-After: {sent:?}"
    );
    let snapshot = layer.limiter(&base).expect("the endpoint is known");
    assert_eq!(snapshot.stats.throttled, 1);
}

#[tokio::test]
async fn a_retry_after_beyond_max_wait_refuses_the_next_request_before_it_is_sent() {
    let base = serve(vec![(429, vec![("retry-after", "600")]), (200, vec![])]).await;
    let clock = ManualClock::new();
    let mut opts = options();
    opts.max_retry_after = Duration::from_secs(3600);
    let layer = PacerLayer::builder(opts)
        .max_attempts(NonZeroU32::MIN)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut service = layer.layer(hyper_client());
    let first = drive(&clock, service.call(get(&base))).await.unwrap();
    assert_eq!(
        first.status(),
        429,
        "one attempt: the throttle is the answer"
    );
    let refused = drive(&clock, service.call(get(&base))).await.unwrap_err();
    // The middleware's refusal: the reason, the limiter, the endpoint, what was done.
    let rejection = refused.downcast_ref::<Rejection>().expect("a refusal");
    assert_eq!(
        rejection.reason(),
        &RejectReason::WaitTooLong {
            cause: WaitCause::ServerStop,
            needed: Duration::from_secs(600),
            max_wait: Duration::from_secs(30),
        }
    );
    assert_eq!(rejection.kind(), "wait_too_long:server_stop");
    assert_eq!(rejection.limiter(), "default");
    assert_eq!(rejection.endpoint(), base, "the key of scheme://host:port");
    assert_eq!(
        (rejection.paced().attempts(), rejection.paced().waited()),
        (0, Duration::ZERO)
    );
    assert!(
        refused
            .to_string()
            .contains("refused by limiter \"default\""),
        "{refused}"
    );
}

/// A body read once, as a stream is: it cannot be sent again.
struct Once(Full<Bytes>);

impl http_body::Body for Once {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_frame(cx)
    }
}

impl tower_pacer::ReplayBody for Once {
    fn replay(&self) -> Option<Self> {
        None
    }
}

#[tokio::test]
async fn a_body_that_cannot_be_sent_again_is_sent_once() {
    let base = serve(vec![(429, vec![("retry-after", "1")]), (200, vec![])]).await;
    let clock = ManualClock::new();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let layer = builder(options())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Once>();
    let mut service = layer.layer(Recorded {
        inner: client,
        clock: clock.clone(),
        sent: Arc::clone(&sent),
    });
    let request = http::Request::post(format!("{base}/upload"))
        .body(Once(Full::from("chunk")))
        .unwrap();
    let response = drive(&clock, service.call(request)).await.unwrap();
    assert_eq!(response.status(), 429, "the throttle is the answer");
    assert_eq!(sent.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn x_should_retry_false_is_not_sent_again() {
    let base = serve(vec![
        (429, vec![("x-should-retry", "false")]),
        (200, vec![]),
    ])
    .await;
    let clock = ManualClock::new();
    let layer = builder(options())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    let response = drive(&clock, service.call(get(&base))).await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(
        sent.lock().unwrap().len(),
        1,
        "the server said not to retry"
    );
}

#[tokio::test]
async fn requests_are_paced_at_the_limiter_s_rate() {
    let base = serve(vec![(200, vec![])]).await;
    let clock = ManualClock::new();
    let mut opts = options();
    // Held at 30 a minute: successes do not raise it.
    opts.min_units_per_minute = 30.0;
    opts.max_units_per_minute = 30.0;
    opts.initial_units_per_minute = Some(30.0);
    let layer = builder(opts)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    for _ in 0..6 {
        let response = drive(&clock, service.call(get(&base))).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let sent = sent.lock().unwrap().clone();
    // 30 a minute: one every 2 s once the burst is spent.
    let last_gap = sent[5] - sent[4];
    assert_eq!(last_gap, Duration::from_secs(2), "{sent:?}");
}

#[tokio::test]
async fn requests_of_no_units_neither_wait_nor_move_the_rate() {
    let base = serve(vec![(429, vec![("retry-after", "5")]), (200, vec![])]).await;
    let clock = ManualClock::new();
    let layer = builder(options())
        .cost(|method, _, _| u64::from(method != http::Method::HEAD))
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut service = layer.layer(hyper_client());
    let head = http::Request::head(format!("{base}/items"))
        .body(Full::default())
        .unwrap();
    let response = drive(&clock, service.call(head)).await.unwrap();
    assert_eq!(response.status(), 429, "a free request is sent once");
    let snapshot = layer.limiter(&base).expect("the endpoint is known");
    assert_eq!(snapshot.stats.throttled, 0, "no units: no rate moved");
    // Its Retry-After still holds the next paid request.
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mut recorded = layer.layer(Recorded {
        inner: hyper_client(),
        clock: clock.clone(),
        sent: Arc::clone(&sent),
    });
    let _ = drive(&clock, recorded.call(get(&base))).await.unwrap();
    assert!(sent.lock().unwrap()[0] >= Duration::from_secs(5));
}

#[test]
fn invalid_options_are_refused_when_the_layer_is_built() {
    let mut opts = LimiterOptions::default();
    opts.min_units_per_minute = -1.0;
    let e = PacerLayer::new(opts).unwrap_err();
    assert!(e.to_string().contains("MinUnitsPerMinute"), "{e}");
}

#[tokio::test]
async fn a_request_s_own_cost_key_and_max_wait_are_honoured() {
    let base = serve(vec![(200, vec![])]).await;
    let clock = ManualClock::new();
    let mut opts = options();
    // Held at 60 a minute with a bucket of one second: one unit a second, one in hand.
    opts.min_units_per_minute = 60.0;
    opts.max_units_per_minute = 60.0;
    opts.burst = Duration::from_secs(1);
    let layer = builder(opts)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    let with = |ext: fn(&mut http::Extensions)| {
        let mut request = get(&base);
        ext(request.extensions_mut());
        request
    };
    // Its own key: an endpoint of its own.
    let keyed = with(|e| {
        e.insert(EndpointKey::new("tenant-42"));
    });
    drive(&clock, service.call(keyed)).await.unwrap();
    assert!(layer.limiter("tenant-42").is_some());
    assert!(layer.limiter(&base).is_none(), "the URL's key was not used");
    // Its own cost: 3 units, two seconds of debt at one a second.
    drive(
        &clock,
        service.call(with(|e| {
            e.insert(Cost(3));
        })),
    )
    .await
    .unwrap();
    // Its own MaxWait, shorter than that debt: refused unsent.
    let refused = drive(
        &clock,
        service.call(with(|e| {
            e.insert(MaxWait(Duration::from_millis(500)));
        })),
    )
    .await
    .unwrap_err();
    let reason = refused
        .downcast_ref::<Rejection>()
        .expect("a refusal")
        .reason();
    assert_eq!(reason.kind(), "wait_too_long:queue");
    // The limiter's own MaxWait (30 s) lets the next one wait the debt out.
    drive(&clock, service.call(get(&base))).await.unwrap();
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[2] - sent[1], Duration::from_secs(3), "{sent:?}");
}

#[tokio::test]
async fn a_strict_window_never_lets_more_than_its_limit_through_in_any_span() {
    let base = serve(vec![(200, vec![])]).await;
    let clock = ManualClock::new();
    let window = pacer_core::WindowLimit::new(
        "w",
        3,
        Duration::from_millis(500),
        pacer_core::MemoryWindowStore::new(clock.clone()),
    )
    .unwrap();
    let mut opts = options();
    opts.initial_units_per_minute = Some(60_000.0);
    opts.max_units_per_minute = 60_000.0;
    let layer = builder(opts)
        .window(window)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    for _ in 0..7 {
        let response = drive(&clock, service.call(get(&base))).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let sent = sent.lock().unwrap().clone();
    for i in 0..4 {
        assert!(
            sent[i + 3] - sent[i] >= Duration::from_millis(500),
            "requests {i} and {} only {:?} apart",
            i + 3,
            sent[i + 3] - sent[i]
        );
    }
    // A request costing more than the window ever admits is refused unsent.
    let mut big = get(&base);
    big.extensions_mut().insert(Cost(4));
    let err = drive(&clock, service.call(big)).await.unwrap_err();
    let reason = err.downcast_ref::<Rejection>().expect("a refusal").reason();
    assert_eq!(reason.kind(), "above_window_limit");
}

#[tokio::test]
async fn a_request_whose_tokens_are_not_there_waits_for_the_refill() {
    // OpenAI's fields: 100 of 1,000 tokens left, full in 9 s: 100 come back a second, so 300
    // are there 2 s later.
    let openai = vec![
        ("x-ratelimit-limit-requests", "6000"),
        ("x-ratelimit-remaining-requests", "5999"),
        ("x-ratelimit-reset-requests", "1s"),
        ("x-ratelimit-limit-tokens", "1000"),
        ("x-ratelimit-remaining-tokens", "100"),
        ("x-ratelimit-reset-tokens", "9s"),
    ];
    let base = serve(vec![(200, openai)]).await;
    let clock = ManualClock::new();
    let mut opts = options();
    opts.initial_units_per_minute = Some(60_000.0);
    opts.max_units_per_minute = 60_000.0;
    let layer = builder(opts)
        .rules(tower_pacer::Rules::default().with_algorithm(None))
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    drive(&clock, service.call(get(&base))).await.unwrap();
    let mut costly = get(&base);
    costly.extensions_mut().insert(tower_pacer::TokenCost(300));
    drive(&clock, service.call(costly)).await.unwrap();
    let sent = sent.lock().unwrap().clone();
    let gap = sent[1] - sent[0];
    assert!(
        gap >= Duration::from_millis(1_990) && gap <= Duration::from_millis(2_010),
        "{sent:?}"
    );
    // More than the quota ever holds: refused unsent.
    let mut huge = get(&base);
    huge.extensions_mut().insert(tower_pacer::TokenCost(5_000));
    let err = drive(&clock, service.call(huge)).await.unwrap_err();
    let reason = err.downcast_ref::<Rejection>().expect("a refusal").reason();
    assert_eq!(reason.kind(), "above_quota_limit");
}

#[tokio::test]
async fn a_total_timeout_abandons_a_send_still_running_when_it_ends_on_the_layer_s_clock() {
    // The server answers in 5 s of real time; the manual clock reaches the timeout first.
    let base = serve_late(Duration::from_secs(5)).await;
    let clock = ManualClock::new();
    let layer = builder(options())
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut service = layer.layer(hyper_client());
    let mut request = get(&base);
    request
        .extensions_mut()
        .insert(TotalTimeout(Duration::from_millis(300)));
    let start = clock.now();
    let e = drive(&clock, service.call(request)).await.unwrap_err();
    let timed_out = e.downcast_ref::<TimedOut>().expect("timed out");
    assert_eq!(timed_out.timeout, Duration::from_millis(300), "{e}");
    assert_eq!(
        (timed_out.paced.attempts(), timed_out.paced.limiter()),
        (1, "default")
    );
    assert_eq!(clock.now() - start, Duration::from_millis(300));
    let snapshot = layer.limiter(&base).expect("the endpoint is known");
    assert_eq!(
        (snapshot.stats.throttled, snapshot.stats.successes),
        (0, 0),
        "an abandoned send is neutral to the rate"
    );
}

#[tokio::test]
async fn a_total_timeout_shorter_than_the_server_s_stop_is_refused_before_the_send() {
    let base = serve(vec![(429, vec![("retry-after", "5")]), (200, vec![])]).await;
    let clock = ManualClock::new();
    let layer = PacerLayer::builder(options())
        .max_attempts(NonZeroU32::MIN)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    let first = drive(&clock, service.call(get(&base))).await.unwrap();
    assert_eq!(first.status(), 429);
    let mut request = get(&base);
    request
        .extensions_mut()
        .insert(TotalTimeout(Duration::from_secs(1)));
    let e = drive(&clock, service.call(request)).await.unwrap_err();
    assert_eq!(
        e.downcast_ref::<Rejection>().map(Rejection::reason),
        Some(&RejectReason::PastTimeout {
            cause: WaitCause::ServerStop,
            timeout: Duration::from_secs(1),
        })
    );
    assert_eq!(sent.lock().unwrap().len(), 1, "the second was never sent");
}

#[tokio::test]
async fn a_request_the_token_estimator_prices_waits_for_its_tokens() {
    // OpenAI's fields: 100 of 1,000 tokens left, full in 9 s: 100 come back a second.
    let openai = vec![
        ("x-ratelimit-limit-requests", "60"),
        ("x-ratelimit-remaining-requests", "59"),
        ("x-ratelimit-reset-requests", "1s"),
        ("x-ratelimit-limit-tokens", "1000"),
        ("x-ratelimit-remaining-tokens", "100"),
        ("x-ratelimit-reset-tokens", "9s"),
    ];
    let base = serve(vec![(200, openai)]).await;
    let clock = ManualClock::new();
    let layer = builder(options())
        .rules(pacer_core::Rules::default().with_algorithm(None))
        .token_estimator(|method, _, _| (method == http::Method::POST).then_some(300))
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let (mut service, sent) = recorded(&layer, &clock);
    drive(&clock, service.call(get(&base))).await.unwrap();
    let post = http::Request::post(format!("{base}/completions"))
        .body(Full::default())
        .unwrap();
    drive(&clock, service.call(post)).await.unwrap();
    let sent = sent.lock().unwrap().clone();
    let gap = sent[1] - sent[0];
    // 200 more tokens at 100 a second: 2 s, to the rounding of the refill.
    assert!(
        gap >= Duration::from_millis(1_990) && gap <= Duration::from_millis(2_010),
        "{gap:?}"
    );
}

/// What the layer's endpoints learnt outlives it: `remember`, then `recall` in a fresh layer
/// (docs/restarts.md).
#[tokio::test]
async fn a_fresh_layer_recalls_what_the_last_one_learnt() {
    let base = serve(vec![(429, vec![("retry-after", "1")]), (200, vec![])]).await;
    let clock = ManualClock::new();
    let layer = builder(LimiterOptions::default())
        .clock(Arc::new(clock.clone()))
        .name("orders")
        .build()
        .unwrap();
    let (mut service, _) = recorded(&layer, &clock);
    let response = drive(&clock, service.call(get(&base))).await.unwrap();
    assert_eq!(response.status(), 200);
    let learnt = layer.limiter(&base).unwrap();
    assert!(learnt.limiting);
    let memory = layer.remember();
    assert_eq!(memory.limiters["orders"].len(), 1);

    let fresh = builder(LimiterOptions::default())
        .clock(Arc::new(clock.clone()))
        .name("orders")
        .build()
        .unwrap();
    let recalled = fresh.recall(&memory);
    assert_eq!((recalled.endpoints, recalled.skipped), (1, 0));
    let started = fresh.limiter(&base).unwrap();
    assert!(started.limiting);
    assert_eq!(started.rate, learnt.rate);
    // Under another name, nothing is recalled.
    let other = builder(LimiterOptions::default())
        .name("search")
        .build()
        .unwrap();
    assert_eq!(other.recall(&memory).unknown_limiters, ["orders"]);
}

/// Halves on a throttle, never climbs: a controller of the user's, told apart from the
/// built-in ones by its cut.
#[derive(Debug)]
struct Halve;

impl pacer_core::RateController for Halve {
    fn on_throttled(&mut self, state: &pacer_core::RateControllerState) -> f64 {
        state.rate / 2.0
    }
    fn on_success(&mut self, _: &pacer_core::RateControllerState) -> Option<f64> {
        None
    }
}

#[tokio::test]
async fn a_controller_of_one_s_own_paces_each_endpoint() {
    let base = serve(vec![(429, vec![]), (200, vec![])]).await;
    let clock = ManualClock::new();
    let mut opts = options();
    opts.initial_units_per_minute = Some(600.0);
    let layer = PacerLayer::builder(opts)
        .max_attempts(NonZeroU32::MIN)
        .controller(|| pacer_core::PureController::new(Halve))
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut service = layer.layer(hyper_client());
    let first = drive(&clock, service.call(get(&base))).await.unwrap();
    assert_eq!(first.status(), 429);
    let limiter = layer.limiter(&base).expect("the endpoint is known");
    assert_eq!(limiter.rate, 300.0, "the user's cut, not a built-in one");
}

#[tokio::test]
async fn the_instance_count_set_live_reaches_every_endpoint_now_and_later() {
    let (first, second) = (
        serve(vec![(200, vec![])]).await,
        serve(vec![(200, vec![])]).await,
    );
    let clock = ManualClock::new();
    let mut opts = options();
    opts.initial_units_per_minute = Some(600.0);
    let layer = builder(opts)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let mut service = layer.layer(hyper_client());
    drive(&clock, service.call(get(&first))).await.unwrap();
    let before = layer.limiter(&first).unwrap();
    assert_eq!(before.instance_count, 1);
    layer.set_instance_count(3).unwrap();
    let now = layer.limiter(&first).unwrap();
    assert_eq!(now.instance_count, 3, "an endpoint that was there");
    assert!(
        (now.rate - before.rate / 3.0).abs() < 1e-9,
        "its share: {} of {}",
        now.rate,
        before.rate
    );
    drive(&clock, service.call(get(&second))).await.unwrap();
    assert_eq!(
        layer.limiter(&second).unwrap().instance_count,
        3,
        "an endpoint made after"
    );
    let refused = layer.set_instance_count(0).unwrap_err();
    assert!(refused.to_string().contains("InstanceCount"), "{refused}");
    assert_eq!(
        layer.limiter(&first).unwrap().instance_count,
        3,
        "unchanged"
    );
}

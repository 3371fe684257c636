//! `MaxConcurrent` through the layer, on a manual clock: a request waits for the response of
//! the one in flight, a dropped request gives its slot back, and the wait counts in `MaxWait`.
//! The server answers when the test opens its gate.

use crate::support::hyper_client;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use pacer_core::{LimiterOptions, LimiterSnapshot, ManualClock, WaitCause};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tower_layer::Layer;
use tower_pacer::{MaxConcurrent, PacerLayer, RejectReason, Rejection};
use tower_service::Service;

/// A server that counts the requests that reach it and answers each only when the test lets
/// one more through.
struct Gate {
    url: String,
    arrived: Arc<AtomicUsize>,
    permits: Arc<Semaphore>,
}

impl Gate {
    async fn new() -> Gate {
        let arrived = Arc::new(AtomicUsize::new(0));
        let permits = Arc::new(Semaphore::new(0));
        let (count, gate) = (Arc::clone(&arrived), Arc::clone(&permits));
        let app = Router::new().fallback(move || {
            let (count, gate) = (Arc::clone(&count), Arc::clone(&gate));
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                gate.acquire().await.expect("never closed").forget();
                "ok"
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Gate {
            url,
            arrived,
            permits,
        }
    }

    fn arrived(&self) -> usize {
        self.arrived.load(Ordering::SeqCst)
    }

    fn open(&self) {
        self.permits.add_permits(1);
    }
}

/// A layer on `clock` allowing `cap` requests in flight, each waiting at most `max_wait`.
fn layer(clock: &ManualClock, cap: u32, max_wait: Duration) -> PacerLayer {
    let mut options = LimiterOptions::default();
    options.max_concurrent = NonZeroU32::new(cap);
    options.max_wait = max_wait;
    PacerLayer::builder(options)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap()
}

fn get(url: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(format!("{url}/items"))
        .body(Full::default())
        .unwrap()
}

fn limiter(layer: &PacerLayer, gate: &Gate) -> LimiterSnapshot {
    layer.limiter(&gate.url).expect("the endpoint is known")
}

/// Waits for what other tasks do, a few milliseconds of real time at a time, at most 5,000
/// times (never for a clock the test drives).
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..5_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(done(), "{what}");
}

#[tokio::test]
async fn a_second_request_waits_for_the_first_s_response() {
    let clock = ManualClock::new();
    let gate = Gate::new().await;
    let layer = layer(&clock, 1, Duration::from_secs(30));
    let mut service = layer.layer(hyper_client());
    let first = tokio::spawn(service.call(get(&gate.url)));
    until("the first reached the server", || gate.arrived() == 1).await;
    let second = tokio::spawn(service.call(get(&gate.url)));
    until("the second waits", || limiter(&layer, &gate).queue_len == 1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(gate.arrived(), 1, "not sent while the first is in flight");
    clock.advance(Duration::from_secs(2));
    gate.open();
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    until("the second is sent", || gate.arrived() == 2).await;
    gate.open();
    let second = second.await.unwrap().unwrap();
    let paced = second.extensions().get::<pacer_core::Paced>().unwrap();
    assert_eq!(paced.waited(), Duration::from_secs(2));
    assert_eq!(limiter(&layer, &gate).in_flight, 0);
}

#[tokio::test]
async fn a_dropped_request_future_gives_its_slot_back() {
    let clock = ManualClock::new();
    let gate = Gate::new().await;
    let layer = layer(&clock, 1, Duration::from_secs(30));
    let mut service = layer.layer(hyper_client());
    let first = tokio::spawn(service.call(get(&gate.url)));
    until("the first reached the server", || gate.arrived() == 1).await;
    let second = tokio::spawn(service.call(get(&gate.url)));
    until("the second waits", || limiter(&layer, &gate).queue_len == 1).await;
    first.abort();
    let _ = first.await;
    until("the slot went to the second", || gate.arrived() == 2).await;
    second.abort();
    let _ = second.await;
    until("nothing in flight", || {
        limiter(&layer, &gate).in_flight == 0
    })
    .await;
    for _ in 0..3 {
        gate.open();
    }
    let last = service.call(get(&gate.url)).await.unwrap();
    assert_eq!(last.status(), 200);
}

#[tokio::test]
async fn the_wait_for_a_slot_counts_in_max_wait_and_is_refused_with_a_typed_error() {
    let clock = ManualClock::new();
    let gate = Gate::new().await;
    let layer = layer(&clock, 5, Duration::from_secs(2));
    let mut service = layer.layer(hyper_client());
    let first = tokio::spawn(service.call(get(&gate.url)));
    until("the first reached the server", || gate.arrived() == 1).await;
    // The limiter allows 5; this request allows itself 1.
    let mut own = get(&gate.url);
    own.extensions_mut().insert(MaxConcurrent(1));
    let own = tokio::spawn(service.call(own));
    until("it waits", || limiter(&layer, &gate).queue_len == 1).await;
    clock.advance(Duration::from_secs(2));
    let refused = own.await.unwrap().unwrap_err();
    let refused = refused
        .downcast_ref::<Rejection>()
        .expect("a refusal")
        .reason();
    assert_eq!(
        refused,
        &RejectReason::WaitTooLong {
            cause: WaitCause::Concurrency,
            needed: Duration::from_secs(2),
            max_wait: Duration::from_secs(2),
        }
    );
    assert_eq!(gate.arrived(), 1, "never sent");
    gate.open();
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(limiter(&layer, &gate).in_flight, 0);
}

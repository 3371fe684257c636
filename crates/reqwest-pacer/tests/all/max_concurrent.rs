//! `MaxConcurrent`, the limiter's and a request's own: a request waits for the response of the
//! one in flight, a dropped request gives its slot back, and the wait counts in `MaxWait`.
//! Pacer's time is a manual clock; the server answers when the test opens its gate.

use crate::support::*;
use axum::Router;
use pacer_core::{Clock, LimiterSnapshot, ManualClock};
use reqwest_middleware::ClientWithMiddleware;
use reqwest_pacer::{
    LimiterConfig, MaxConcurrent, PacerErrorExt, PacerMiddleware, PacerResponseExt, RejectReason,
    WaitCause,
};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// A server that counts the requests that reach it and answers each only when the test lets
/// one more through ([`Gate::open`]).
#[derive(Clone)]
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

    /// Lets one answer go.
    fn open(&self) {
        self.permits.add_permits(1);
    }
}

/// The middleware on `clock`, at most `cap` in flight (`None`: no cap), with a `MaxWait`.
fn paced(clock: &ManualClock, cap: Option<u32>, max_wait: Duration) -> PacerMiddleware {
    let mut o = generous();
    o.max_concurrent = cap.and_then(NonZeroU32::new);
    o.max_wait = max_wait;
    pacer_on(clock, LimiterConfig::new(o))
}

fn limiter(pacer: &PacerMiddleware, gate: &Gate) -> LimiterSnapshot {
    let state = pacer.state("api", &gate.url).expect("the endpoint");
    state.limiter.expect("its limiter")
}

async fn until(what: &str, done: impl FnMut() -> bool) {
    assert!(
        eventually_within(Duration::from_secs(10), done).await,
        "{what}"
    );
}

fn send(
    client: &ClientWithMiddleware,
    url: &str,
) -> tokio::task::JoinHandle<reqwest_middleware::Result<reqwest::Response>> {
    let request = client.get(url);
    tokio::spawn(async move { request.send().await })
}

/// Lets the spawned tasks run: a request that could go would reach the server.
async fn let_run() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn a_second_request_waits_for_the_first_s_response() {
    let clock = ManualClock::new();
    let gate = Gate::new().await;
    let pacer = paced(&clock, Some(1), Duration::from_secs(30));
    let client = client(&pacer);
    let first = send(&client, &gate.url);
    until("the first reached the server", || gate.arrived() == 1).await;
    let second = send(&client, &gate.url);
    until("the second waits in the queue", || {
        limiter(&pacer, &gate).queue_len == 1
    })
    .await;
    let_run().await;
    assert_eq!(gate.arrived(), 1, "not sent while the first is in flight");
    assert_eq!(limiter(&pacer, &gate).in_flight, 1);
    clock.advance(Duration::from_secs(3));
    gate.open();
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    until("the second is sent once the first is answered", || {
        gate.arrived() == 2
    })
    .await;
    gate.open();
    let second = second.await.unwrap().unwrap();
    assert_eq!(second.paced().unwrap().waited(), Duration::from_secs(3));
    let s = limiter(&pacer, &gate);
    assert_eq!((s.in_flight, s.queue_len), (0, 0));
}

#[tokio::test]
async fn a_dropped_request_future_gives_its_slot_back() {
    let clock = ManualClock::new();
    let gate = Gate::new().await;
    let pacer = paced(&clock, Some(1), Duration::from_secs(30));
    let client = client(&pacer);
    let first = send(&client, &gate.url);
    until("the first reached the server", || gate.arrived() == 1).await;
    let waiting = send(&client, &gate.url);
    until("the second waits", || limiter(&pacer, &gate).queue_len == 1).await;
    // Dropped mid-send: its slot goes to the request waiting for it.
    first.abort();
    let _ = first.await;
    until("the waiting one is sent", || gate.arrived() == 2).await;
    // Dropped while waiting, and dropped mid-send again: nothing is left in flight.
    let third = send(&client, &gate.url);
    until("the third waits", || limiter(&pacer, &gate).queue_len == 1).await;
    third.abort();
    let _ = third.await;
    waiting.abort();
    let _ = waiting.await;
    until("nothing in flight", || {
        limiter(&pacer, &gate).in_flight == 0
    })
    .await;
    assert_eq!(limiter(&pacer, &gate).queue_len, 0);
    gate.open();
    gate.open();
    gate.open();
    let last = client.get(&gate.url).send().await.unwrap();
    assert_eq!(last.status(), 200);
}

#[tokio::test]
async fn the_wait_for_a_slot_counts_in_max_wait_and_is_refused_with_a_typed_error() {
    let clock = ManualClock::new();
    let gate = Gate::new().await;
    let pacer = paced(&clock, Some(1), Duration::from_secs(2));
    let client = client(&pacer);
    let first = send(&client, &gate.url);
    until("the first reached the server", || gate.arrived() == 1).await;
    let second = send(&client, &gate.url);
    until("the second waits", || limiter(&pacer, &gate).queue_len == 1).await;
    clock.advance(Duration::from_millis(1_999));
    let_run().await;
    assert!(!second.is_finished());
    clock.advance(Duration::from_millis(1));
    let err = second.await.unwrap().unwrap_err();
    let r = err.rejection().expect("a refusal");
    assert_eq!(
        r.reason(),
        &RejectReason::WaitTooLong {
            cause: WaitCause::Concurrency,
            needed: Duration::from_secs(2),
            max_wait: Duration::from_secs(2),
        }
    );
    assert_eq!(r.kind(), "wait_too_long:concurrency");
    assert_eq!(gate.arrived(), 1, "never sent");
    gate.open();
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(limiter(&pacer, &gate).in_flight, 0);
}

#[tokio::test]
async fn a_request_s_own_cap_waits_below_it_whatever_the_limiter_allows() {
    let clock = ManualClock::new();
    let gate = Gate::new().await;
    let pacer = paced(&clock, None, Duration::from_secs(30));
    let client = client(&pacer);
    let (a, b) = (send(&client, &gate.url), send(&client, &gate.url));
    until("two in flight", || gate.arrived() == 2).await;
    let own = client.get(&gate.url).with_extension(MaxConcurrent(2));
    let own = tokio::spawn(async move { own.send().await });
    until("it waits", || limiter(&pacer, &gate).queue_len == 1).await;
    let_run().await;
    assert_eq!(gate.arrived(), 2);
    gate.open();
    until("one answered: it goes", || gate.arrived() == 3).await;
    gate.open();
    gate.open();
    for task in [a, b, own] {
        assert_eq!(task.await.unwrap().unwrap().status(), 200);
    }
    assert_eq!(limiter(&pacer, &gate).in_flight, 0);
}

#[tokio::test]
async fn a_retry_takes_a_new_slot_once_its_first_attempt_is_answered() {
    let clock = ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![throttled("1"), ok()]).on(&clock)).await;
    let mut o = generous();
    o.max_concurrent = NonZeroU32::new(1);
    let pacer = pacer_on(&clock, LimiterConfig::new(o));
    let client = client(&pacer);
    let response = drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.paced().unwrap().attempts(), 2);
    assert_eq!(script.calls(), 2);
    let key = crate::retry_after::endpoint(&server);
    let s = pacer.state("api", &key).unwrap().limiter.unwrap();
    assert_eq!((s.in_flight, s.stats.granted_requests), (0, 2));
    assert!(clock.now() >= pacer_core::Timestamp::ZERO + Duration::from_secs(1));
}

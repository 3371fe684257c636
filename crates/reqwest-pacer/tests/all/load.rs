//! Load and cancellation without a network: the chain ends in a stub that answers at once, so
//! tens of thousands of requests take seconds.

use crate::support::{eventually_within, fixed_rate};
use http::Extensions;
use pacer_core::{Clock, ManualClock};
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};
use reqwest_pacer::{EndpointKey, LimiterConfig, PacerErrorExt, PacerMiddleware};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Answers every request with an empty 200 without sending it, and counts them.
#[derive(Clone, Default)]
pub(crate) struct Stub(pub(crate) Arc<AtomicUsize>);

#[async_trait::async_trait]
impl Middleware for Stub {
    async fn handle(
        &self,
        _: Request,
        _: &mut Extensions,
        _: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(Response::from(http::Response::new("")))
    }
}

pub(crate) fn stubbed(pacer: &PacerMiddleware, stub: &Stub) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .with(stub.clone())
        .build()
}

/// At most a minute: the tasks waited for are ready to run, not waiting on any clock.
const READY_WITHIN: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_requests_with_random_cancellations_leave_nothing_behind() {
    const N: usize = 10_000;
    // 5,000 units/s with a bucket of 500, on a manual clock: 500 go at once, the rest wait in
    // the queue, and only the clock's steps below let them out (the last about 1.9 s in), so
    // the cancellations (within the first 1.5 s) meet requests still waiting however fast or
    // slow the machine runs the tasks.
    let clock = ManualClock::new();
    let mut o = fixed_rate(300_000.0);
    o.burst = Duration::from_millis(100);
    o.queue_limit = N;
    o.max_wait = Duration::from_secs(120);
    let pacer = PacerMiddleware::builder()
        .limiter("load", LimiterConfig::new(o))
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let stub = Stub::default();
    let client = stubbed(&pacer, &stub);
    let alive_before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();

    // A small deterministic generator (xorshift) picks who is cancelled, and when.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut tasks = Vec::with_capacity(N);
    let mut cancel_after = Vec::with_capacity(N);
    for _ in 0..N {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client.get("http://api.test/orders").send().await
        }));
        cancel_after.push((next() % 2 == 0).then(|| Duration::from_micros(next() % 1_500_000)));
    }
    // Every request has reached the limiter: sent, or waiting in its queue.
    let queued = || {
        pacer.endpoints("load").unwrap().first().map_or(0, |e| {
            pacer.state("load", e).unwrap().limiter.unwrap().queue_len
        })
    };
    assert!(
        eventually_within(READY_WITHIN, || stub.0.load(Ordering::Relaxed) + queued()
            == N)
        .await,
        "every request sent or queued"
    );
    assert_eq!(
        stub.0.load(Ordering::Relaxed),
        500,
        "the bucket's 500 at once"
    );
    // The clock in steps of 10 ms; each step's cancellations before it moves on.
    let start = clock.now();
    let step = Duration::from_millis(10);
    let mut at = Duration::ZERO;
    while at < Duration::from_millis(1_500) {
        for (task, after) in tasks.iter().zip(&cancel_after) {
            if after.is_some_and(|a| a >= at && a < at + step) {
                task.abort();
            }
        }
        at += step;
        clock.set(start.saturating_add(at));
        tokio::task::yield_now().await;
    }
    // The rest run out on the clock.
    let (mut ok, mut refused, mut cancelled) = (0, 0, 0);
    for task in tasks {
        match clock.drive(task).await {
            Ok(Ok(response)) => {
                assert_eq!(response.status(), 200);
                ok += 1;
            }
            Ok(Err(e)) => {
                assert!(e.is_rejected(), "only typed refusals: {e}");
                refused += 1;
            }
            Err(join) => {
                assert!(join.is_cancelled(), "no task panicked: {join}");
                cancelled += 1;
            }
        }
    }
    assert_eq!(ok + refused + cancelled, N);
    assert!(cancelled > 0 && ok > 0, "ok {ok}, cancelled {cancelled}");
    assert_eq!(
        stub.0.load(Ordering::Relaxed),
        ok,
        "every sent request answered; none sent twice"
    );
    let endpoint = pacer.endpoints("load").unwrap().remove(0);
    let s = pacer.state("load", &endpoint).unwrap().limiter.unwrap();
    assert_eq!(s.queue_len, 0);
    assert_eq!(s.queued_units, 0.0);
    // Granted but cancelled before sending: given back, so granted − refunded = sent.
    assert_eq!(s.stats.granted_units - s.stats.refunded_units, ok as f64);
    assert!(
        eventually_within(READY_WITHIN, || {
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
                <= alive_before
        })
        .await,
        "no task left behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_state_stays_bounded_over_a_hundred_thousand_distinct_keys() {
    const KEYS: usize = 100_000;
    const MAX_ENDPOINTS: usize = 1_000;
    let pacer = PacerMiddleware::builder()
        .limiter(
            "churn",
            LimiterConfig::default()
                .max_endpoints(MAX_ENDPOINTS)
                .endpoint_idle_ttl(Duration::from_secs(3600)),
        )
        .build()
        .unwrap();
    let stub = Stub::default();
    let client = stubbed(&pacer, &stub);
    for i in 0..KEYS {
        client
            .get("http://api.test/x")
            .with_extension(EndpointKey(format!("tenant-{i}")))
            .send()
            .await
            .unwrap();
        if i % 10_000 == 0 {
            let n = pacer.endpoint_count("churn").unwrap();
            assert!(n <= MAX_ENDPOINTS + 16, "{n} endpoints after {i} keys");
        }
    }
    assert_eq!(stub.0.load(Ordering::Relaxed), KEYS);
    assert!(pacer.endpoint_count("churn").unwrap() <= MAX_ENDPOINTS + 16);
    // Resident memory over a million keys is measured by the `endpoint_churn` example (other
    // tests of this binary run alongside, so the process's RSS says nothing of this one).
}

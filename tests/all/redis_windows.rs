use pacer::redis::RedisWindowStore;
use pacer::redis::testing::{Server, free_port, unique_prefix, url};
use pacer::{
    LimiterConfig, LimiterOptions, PacerError, PacerErrorExt, PacerMiddleware, StoreFailure,
    StrictWindow,
};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

#[derive(Clone, Default)]
struct Count(Arc<AtomicUsize>);

impl Respond for Count {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        self.0.fetch_add(1, Ordering::SeqCst);
        ResponseTemplate::new(200)
    }
}

async fn server() -> (MockServer, Count) {
    let server = MockServer::start().await;
    let count = Count::default();
    Mock::given(method("GET"))
        .respond_with(count.clone())
        .mount(&server)
        .await;
    (server, count)
}

fn options(instances: u32) -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(60_000.0);
    o.min_units_per_minute = 600.0;
    o.max_units_per_minute = 60_000.0;
    o.max_wait = Duration::from_secs(30);
    o.instance_count = instances;
    o
}

async fn store(url: &str, prefix: &str) -> RedisWindowStore {
    RedisWindowStore::builder()
        .key_prefix(prefix)
        .response_timeout(Duration::from_millis(300))
        .connection_timeout(Duration::from_millis(300))
        .connect_lazy(url)
        .expect("a valid URL")
}

/// One "process": a middleware whose limiter carries the window kept at `url`/`prefix`.
async fn process(
    url: &str,
    prefix: &str,
    limit: u64,
    per: Duration,
    policy: StoreFailure,
    instances: u32,
) -> (PacerMiddleware, ClientWithMiddleware) {
    let window = StrictWindow::new("w", limit, per, store(url, prefix).await)
        .unwrap()
        .on_store_failure(policy);
    let pacer = PacerMiddleware::builder()
        .limiter("api", LimiterConfig::new(options(instances)).window(window))
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();
    (pacer, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_strict_window_through_redis() {
    let (api, count) = server().await;
    let prefix = unique_prefix();
    let per = Duration::from_millis(500);
    let limit = 4;
    let (_, a) = process(url(), &prefix, limit, per, StoreFailure::FailClosed, 2).await;
    let (_, b) = process(url(), &prefix, limit, per, StoreFailure::FailClosed, 2).await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let client = if i % 2 == 0 { a.clone() } else { b.clone() };
        let uri = api.uri();
        tasks.push(tokio::spawn(async move { client.get(uri).send().await }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().status(), 200);
    }
    let elapsed = started.elapsed();
    assert_eq!(count.0.load(Ordering::SeqCst), 16);
    // 16 requests at 4 per half second, shared: at least three more windows after the first.
    assert!(elapsed >= Duration::from_millis(1400), "{elapsed:?}");
}

#[tokio::test]
async fn redis_down_at_start_each_policy_does_what_it_says() {
    let dead = "redis://127.0.0.1:9"; // the discard port: nothing listens
    let prefix = unique_prefix();
    let per = Duration::from_secs(3600);
    let (api, count) = server().await;

    let (_, closed) = process(dead, &prefix, 4, per, StoreFailure::FailClosed, 1).await;
    let e = closed.get(api.uri()).send().await.unwrap_err();
    assert!(
        matches!(e.pacer_error(), Some(PacerError::WindowStore { .. })),
        "{e}"
    );
    assert!(!e.to_string().contains("password"));

    let (_, open) = process(dead, &prefix, 4, per, StoreFailure::FailOpen, 1).await;
    for _ in 0..6 {
        open.get(api.uri()).send().await.unwrap();
    }

    // The fallback holds this process to 4 / 2 instances = 2 in memory.
    let (_, fallback) = process(dead, &prefix, 4, per, StoreFailure::Fallback, 2).await;
    let mut sent = 0;
    for _ in 0..4 {
        if fallback.get(api.uri()).send().await.is_ok() {
            sent += 1;
        }
    }
    assert_eq!(sent, 2);
    assert_eq!(count.0.load(Ordering::SeqCst), 6 + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_mid_load_is_survived_and_fail_closed_never_exceeds_the_window() {
    let mut redis = Server::start();
    let (api, count) = server().await;
    let prefix = unique_prefix();
    let per = Duration::from_millis(800);
    let limit = 3;
    let (pacer, client) = process(
        &redis.url(),
        &prefix,
        limit,
        per,
        StoreFailure::FailClosed,
        1,
    )
    .await;
    let mut sent_at = Vec::new();
    let mut errors = 0;
    let started = Instant::now();
    let mut restarted = false;
    while started.elapsed() < Duration::from_secs(5) {
        if !restarted && started.elapsed() > Duration::from_millis(1500) {
            redis.stop();
            // Requests during the outage fail closed, quickly.
            for _ in 0..3 {
                let e = client.get(api.uri()).send().await.unwrap_err();
                assert!(matches!(
                    e.pacer_error(),
                    Some(PacerError::WindowStore { .. })
                ));
                errors += 1;
            }
            redis.restart();
            restarted = true;
        }
        match client.get(api.uri()).send().await {
            Ok(r) => {
                assert_eq!(r.status(), 200);
                sent_at.push(Instant::now());
            }
            Err(e) => {
                assert!(
                    matches!(e.pacer_error(), Some(PacerError::WindowStore { .. })),
                    "{e}"
                );
                errors += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    assert!(errors >= 3);
    assert_eq!(count.0.load(Ordering::SeqCst), sent_at.len());
    // Sent again after the restart: the library was reloaded into the new, empty server.
    let after = sent_at
        .iter()
        .filter(|t| **t - started > Duration::from_millis(1500))
        .count();
    assert!(after > 0, "no request went through after the restart");
    // Never more than the limit in any span of the window, across the restart: the client's
    // send times are later than the store's grants by a little, so compare with a margin.
    for i in limit as usize..sent_at.len() {
        let span = sent_at[i] - sent_at[i - limit as usize];
        assert!(
            span >= per - Duration::from_millis(150),
            "{} requests within {span:?}",
            limit + 1
        );
    }
    drop(pacer);
}

#[tokio::test]
async fn a_flushed_database_and_deleted_functions_are_recovered_by_themselves() {
    let redis = Server::start();
    let (api, count) = server().await;
    let prefix = unique_prefix();
    let (_, client) = process(
        &redis.url(),
        &prefix,
        100,
        Duration::from_secs(60),
        StoreFailure::FailClosed,
        1,
    )
    .await;
    let admin = redis::Client::open(redis.url()).unwrap();
    let mut admin = admin.get_multiplexed_async_connection().await.unwrap();
    client.get(api.uri()).send().await.unwrap();
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut admin)
        .await
        .unwrap();
    client.get(api.uri()).send().await.unwrap();
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut admin)
        .await
        .unwrap();
    client.get(api.uri()).send().await.unwrap();
    assert_eq!(count.0.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_redis_that_stops_answering_times_out_into_the_policy() {
    let redis = Server::start();
    let (api, count) = server().await;
    let prefix = unique_prefix();
    let (_, client) = process(
        &redis.url(),
        &prefix,
        100,
        Duration::from_secs(60),
        StoreFailure::Fallback,
        1,
    )
    .await;
    client.get(api.uri()).send().await.unwrap();
    // Pause every client of that Redis for 2 s, past the 300 ms response timeout.
    let admin = redis::Client::open(redis.url()).unwrap();
    let mut admin = admin.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(2000)
        .arg("ALL")
        .query_async(&mut admin)
        .await
        .unwrap();
    // Falls back to memory: sent, not stuck behind the paused server.
    client.get(api.uri()).send().await.unwrap();
    assert_eq!(count.0.load(Ordering::SeqCst), 2);
}

/// Around a Redis store: counts the calls that went to the network (all but those that failed at
/// once with `RedisWindowError::Down`).
#[derive(Debug)]
struct AskedRedis {
    inner: RedisWindowStore,
    asked: Arc<AtomicUsize>,
}

impl AskedRedis {
    fn count<'a, T: Send + 'a>(
        &'a self,
        call: pacer::WindowFuture<'a, T>,
    ) -> pacer::WindowFuture<'a, T> {
        Box::pin(async move {
            let result = call.await;
            let down = result.as_ref().err().is_some_and(|e| {
                std::error::Error::source(e)
                    .and_then(|s| s.downcast_ref::<pacer::redis::RedisWindowError>())
                    .is_some_and(pacer::redis::RedisWindowError::is_down)
            });
            if !down {
                self.asked.fetch_add(1, Ordering::SeqCst);
            }
            result
        })
    }
}

impl pacer::WindowStore for AskedRedis {
    fn try_take<'a>(
        &'a self,
        key: &'a str,
        g: pacer::WindowGeometry,
        limit: u64,
        n: u64,
    ) -> pacer::WindowFuture<'a, pacer::TryOutcome> {
        self.count(self.inner.try_take(key, g, limit, n))
    }
    fn fill<'a>(
        &'a self,
        key: &'a str,
        g: pacer::WindowGeometry,
        limit: u64,
        n: u64,
    ) -> pacer::WindowFuture<'a, pacer::FillOutcome> {
        self.count(self.inner.fill(key, g, limit, n))
    }
    fn events<'a>(
        &'a self,
        key: &'a str,
        g: pacer::WindowGeometry,
        n: u64,
    ) -> pacer::WindowFuture<'a, pacer::EventsOutcome> {
        self.count(self.inner.events(key, g, n))
    }
    fn eta<'a>(
        &'a self,
        key: &'a str,
        g: pacer::WindowGeometry,
        limit: u64,
        n: u64,
    ) -> pacer::WindowFuture<'a, pacer::EtaOutcome> {
        self.count(self.inner.eta(key, g, limit, n))
    }
    fn now(&self) -> pacer::WindowFuture<'_, pacer::WindowTime> {
        self.count(self.inner.now())
    }
    fn clear<'a>(&'a self, key: &'a str) -> pacer::WindowFuture<'a, ()> {
        self.count(self.inner.clear(key))
    }
}

/// A client whose window is kept in a Redis at `port` (its backoff on `clock`), and the count of
/// the store's calls that went to the network.
fn asking(
    port: u16,
    clock: &pacer::ManualClock,
    limit: u64,
    policy: StoreFailure,
    instances: u32,
) -> (ClientWithMiddleware, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let inner = RedisWindowStore::builder()
        .key_prefix(unique_prefix())
        .test_clock(Arc::new(clock.clone()))
        .connect_lazy(&format!("redis://127.0.0.1:{port}"))
        .unwrap();
    let store = AskedRedis {
        inner,
        asked: Arc::clone(&asked),
    };
    let window = StrictWindow::new("w", limit, Duration::from_secs(3600), store)
        .unwrap()
        .on_store_failure(policy);
    let pacer = PacerMiddleware::builder()
        .limiter("api", LimiterConfig::new(options(instances)).window(window))
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .build();
    (client, asked)
}

#[tokio::test]
async fn redis_refusing_connections_is_asked_once_per_backoff_not_on_every_request() {
    let (api, count) = server().await;
    let port = free_port();
    let clock = pacer::ManualClock::new();

    // FailOpen: every request is sent; Redis was asked by the first only.
    let (open, asked) = asking(port, &clock, 4, StoreFailure::FailOpen, 1);
    for _ in 0..100 {
        assert_eq!(open.get(api.uri()).send().await.unwrap().status(), 200);
    }
    assert_eq!(count.0.load(Ordering::SeqCst), 100);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked once for 100 requests"
    );
    // After the first backoff, one request asks again (a probe: two tries).
    clock.advance(pacer::redis::DEFAULT_DOWN_BACKOFF);
    for _ in 0..10 {
        open.get(api.uri()).send().await.unwrap();
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2);

    // Fallback: the in-memory window (4 / 2 instances = 2) holds; Redis asked once.
    let (fallback, asked) = asking(port, &clock, 4, StoreFailure::Fallback, 2);
    let mut sent = 0;
    for _ in 0..20 {
        match fallback.get(api.uri()).send().await {
            Ok(_) => sent += 1,
            Err(e) => assert!(
                matches!(e.pacer_error(), Some(PacerError::Rejected(_))),
                "refused by the fallback window: {e}"
            ),
        }
    }
    assert_eq!(sent, 2);
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // Redis comes back at that address: after the FailOpen store's backoff (doubled to 200 ms by
    // its failed probe), its next request asks Redis and the store is back.
    let redis = Server::start_on(port);
    clock.advance(Duration::from_millis(200));
    open.get(api.uri()).send().await.unwrap();
    open.get(api.uri()).send().await.unwrap();
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        keys.len(),
        1,
        "the FailOpen client's window is in Redis: {keys:?}"
    );
}

use pacer::redis::RedisWindowStore;
use pacer::redis::testing::{Server, unique_prefix, url};
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
    o.initial_units_per_minute = 60_000.0;
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

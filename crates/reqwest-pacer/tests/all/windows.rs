use crate::support::*;
use pacer_core::{
    EtaOutcome, EventsOutcome, FillOutcome, MemoryWindowStore, RealClock, TryOutcome, WindowError,
    WindowFuture, WindowGeometry, WindowStore, WindowTime,
};
use reqwest_pacer::{
    LimiterConfig, PacerError, PacerErrorExt, PacerMiddleware, RejectReason, StoreFailure,
    StrictWindow, WaitCause,
};
use std::time::Duration;

fn with_window(window: StrictWindow) -> PacerMiddleware {
    PacerMiddleware::builder()
        .limiter("api", LimiterConfig::new(generous()).window(window))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_strict_window_never_lets_more_than_its_limit_through_in_any_span() {
    let clock = pacer_core::ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![ok()]).on(&clock)).await;
    let store = MemoryWindowStore::new(clock.clone());
    let window = StrictWindow::new("w", 3, Duration::from_millis(500), store).unwrap();
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()).window(window));
    let client = client(&pacer);
    for _ in 0..7 {
        let response = drive(&clock, client.get(server.uri()).send()).await;
        assert_eq!(response.unwrap().status(), 200);
    }
    assert_eq!(script.calls(), 7);
    for i in 0..4 {
        let gap = script.gap(i, i + 3);
        assert!(
            gap >= Duration::from_millis(500),
            "requests {i} and {} only {gap:?} apart",
            i + 3
        );
    }
}

#[tokio::test]
async fn a_window_wait_longer_than_max_wait_and_a_cost_above_the_limit_are_refused_unsent() {
    let (server, script) = scripted(vec![ok()]).await;
    let store = MemoryWindowStore::new(RealClock::new());
    let window = StrictWindow::new("hourly", 2, Duration::from_secs(3600), store).unwrap();
    let pacer = with_window(window);
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap();
    client.get(server.uri()).send().await.unwrap();
    let err = client.get(server.uri()).send().await.unwrap_err();
    match err.rejection().unwrap().reason() {
        RejectReason::WaitTooLong { cause, needed, .. } => {
            assert_eq!(*cause, WaitCause::Window);
            assert!(*needed > Duration::from_secs(3000));
        }
        other => panic!("{other:?}"),
    }
    let err = client
        .get(server.uri())
        .with_extension(reqwest_pacer::Cost(3))
        .send()
        .await
        .unwrap_err();
    assert!(matches!(
        err.rejection().unwrap().reason(),
        RejectReason::AboveWindowLimit {
            limit: 2,
            units: 3,
            ..
        }
    ));
    assert_eq!(script.calls(), 2);
}

#[tokio::test]
async fn a_window_keyed_by_user_counts_each_user_apart_and_skips_requests_without_one() {
    let (server, script) = scripted(vec![ok()]).await;
    let store = MemoryWindowStore::new(RealClock::new());
    let window = StrictWindow::new("per-user", 1, Duration::from_secs(3600), store)
        .unwrap()
        .keyed_by(|r| {
            r.headers()
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(String::from)
        });
    let pacer = with_window(window);
    let client = client(&pacer);
    for user in ["ann", "bob"] {
        client
            .get(server.uri())
            .header("x-user", user)
            .send()
            .await
            .unwrap();
    }
    assert!(
        client
            .get(server.uri())
            .header("x-user", "ann")
            .send()
            .await
            .is_err()
    );
    for _ in 0..3 {
        client.get(server.uri()).send().await.unwrap(); // no user: not counted
    }
    assert_eq!(script.calls(), 5);
}

/// A store whose backend is down.
#[derive(Debug)]
struct Down;

fn down<'a, T: Send + 'a>() -> WindowFuture<'a, T> {
    Box::pin(async {
        Err(WindowError::Unavailable {
            source: "connection refused".into(),
        })
    })
}

impl WindowStore for Down {
    fn try_take<'a>(
        &'a self,
        _: &'a str,
        _: WindowGeometry,
        _: u64,
        _: u64,
    ) -> WindowFuture<'a, TryOutcome> {
        down()
    }
    fn fill<'a>(
        &'a self,
        _: &'a str,
        _: WindowGeometry,
        _: u64,
        _: u64,
    ) -> WindowFuture<'a, FillOutcome> {
        down()
    }
    fn events<'a>(
        &'a self,
        _: &'a str,
        _: WindowGeometry,
        _: u64,
    ) -> WindowFuture<'a, EventsOutcome> {
        down()
    }
    fn eta<'a>(
        &'a self,
        _: &'a str,
        _: WindowGeometry,
        _: u64,
        _: u64,
    ) -> WindowFuture<'a, EtaOutcome> {
        down()
    }
    fn now(&self) -> WindowFuture<'_, WindowTime> {
        down()
    }
    fn clear<'a>(&'a self, _: &'a str) -> WindowFuture<'a, ()> {
        down()
    }
}

async fn sent_with_store_down(policy: StoreFailure, instances: u32) -> (usize, Vec<String>) {
    let (server, script) = scripted(vec![ok()]).await;
    let window = StrictWindow::new("w", 4, Duration::from_secs(3600), Down)
        .unwrap()
        .on_store_failure(policy);
    let mut options = generous();
    options.instance_count = instances;
    let pacer = PacerMiddleware::builder()
        .limiter("api", LimiterConfig::new(options).window(window))
        .build()
        .unwrap();
    let client = client(&pacer);
    let mut errors = Vec::new();
    for _ in 0..5 {
        if let Err(e) = client.get(server.uri()).send().await {
            errors.push(match e.pacer_error() {
                Some(PacerError::WindowStore { .. }) => "store".to_owned(),
                Some(PacerError::Rejected(r)) => r.kind().to_owned(),
                other => format!("{other:?}"),
            });
        }
    }
    (script.calls(), errors)
}

#[tokio::test]
async fn when_the_store_is_down_each_policy_does_what_it_says() {
    let (sent, errors) = sent_with_store_down(StoreFailure::FailClosed, 1).await;
    assert_eq!((sent, errors.len()), (0, 5));
    assert!(errors.iter().all(|e| e == "store"));

    let (sent, errors) = sent_with_store_down(StoreFailure::FailOpen, 1).await;
    assert_eq!((sent, errors.len()), (5, 0));

    // The fallback keeps this process to the limit divided by the instances: 4 / 2 = 2.
    let (sent, errors) = sent_with_store_down(StoreFailure::Fallback, 2).await;
    assert_eq!(sent, 2);
    assert!(
        errors.iter().all(|e| e == "wait_too_long:window"),
        "{errors:?}"
    );
}

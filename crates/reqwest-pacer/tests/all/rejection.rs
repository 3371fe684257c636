use crate::support::*;
use pacer_core::LimiterOptions;
use reqwest_pacer::{PacerErrorExt, RejectReason, WaitCause};
use std::time::Duration;

/// 60 units per minute with a bucket of one unit: the second request must wait a second.
fn slow() -> LimiterOptions {
    fixed_rate(60.0)
}

#[tokio::test]
async fn a_full_queue_is_refused_and_nothing_reaches_the_server() {
    let (server, script) = scripted(vec![ok()]).await;
    let mut options = slow();
    options.queue_limit = 0;
    let pacer = pacer(options);
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap();
    let err = client.get(server.uri()).send().await.unwrap_err();
    assert!(err.is_rejected());
    let r = err.rejection().unwrap();
    assert_eq!(r.reason(), &RejectReason::QueueFull { limit: 0 });
    assert_eq!(r.limiter(), "api");
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn a_wait_longer_than_max_wait_is_refused_at_once_with_the_wait_it_needed() {
    let (server, script) = scripted(vec![ok()]).await;
    let mut options = slow();
    options.max_wait = Duration::from_millis(100);
    let pacer = pacer(options);
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap();
    let err = client.get(server.uri()).send().await.unwrap_err();
    let r = err.rejection().unwrap();
    match r.reason() {
        RejectReason::WaitTooLong {
            cause,
            needed,
            max_wait,
        } => {
            assert_eq!(*cause, WaitCause::Queue);
            assert_eq!(*max_wait, Duration::from_millis(100));
            assert!(*needed > Duration::from_millis(900), "{needed:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(script.calls(), 1);
    let snapshot = pacer.state("api", r.endpoint()).unwrap().limiter.unwrap();
    assert_eq!(snapshot.queue_len, 0, "the refused request took no place");
    assert_eq!(snapshot.stats.rejected_wait, 1);
}

#[tokio::test]
async fn an_unknown_limiter_is_a_typed_error() {
    let pacer = pacer(slow());
    let err = client(&pacer)
        .get("http://127.0.0.1:9/")
        .with_extension(reqwest_pacer::UseLimiter::new("nope"))
        .send()
        .await
        .unwrap_err();
    assert!(matches!(
        err.pacer_error(),
        Some(reqwest_pacer::PacerError::UnknownLimiter(n)) if n == "nope"
    ));
}

//! The per-request extensions (`MaxWait`, `Priority`, `TotalTimeout`) and what the middleware
//! gives back (`Paced`).

use crate::support::*;
use pacer_core::Clock;
use reqwest_pacer::{
    LimiterConfig, MaxWait, PacerError, PacerErrorExt, PacerResponseExt, Priority, RejectReason,
    TotalTimeout, WaitCause,
};
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A server answering every GET `ok`, and a client through a limiter of one unit a second with a
/// bucket of one: after a first request, the next waits about a second.
async fn one_a_second(
    max_wait: Duration,
) -> (MockServer, Script, reqwest_middleware::ClientWithMiddleware) {
    let (server, script) = scripted(vec![ok()]).await;
    let mut options = fixed_rate(60.0);
    options.burst = Duration::from_secs(1);
    options.max_wait = max_wait;
    let client = client(&pacer(options));
    client.get(server.uri()).send().await.unwrap();
    (server, script, client)
}

#[tokio::test]
async fn a_request_with_a_shorter_max_wait_of_its_own_is_refused_where_others_would_wait() {
    let (server, script, client) = one_a_second(Duration::from_secs(30)).await;
    let err = client
        .get(server.uri())
        .with_extension(MaxWait(Duration::from_millis(100)))
        .send()
        .await
        .unwrap_err();
    let r = err.rejection().expect("a refusal");
    assert!(
        matches!(
            r.reason(),
            RejectReason::WaitTooLong {
                cause: WaitCause::Queue,
                max_wait,
                ..
            } if *max_wait == Duration::from_millis(100)
        ),
        "{r}"
    );
    assert_eq!(r.paced().attempts(), 0);
    assert_eq!(r.paced().limiter(), "api");
    assert!(r.paced().rate() > 0.0);
    assert_eq!(script.calls(), 1, "nothing reached the server");
}

#[tokio::test]
async fn a_request_with_a_longer_max_wait_of_its_own_waits_where_others_are_refused() {
    // One a second, on the manual clock: the first request takes the unit there.
    let clock = pacer_core::ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![ok()]).on(&clock)).await;
    let mut options = fixed_rate(60.0);
    options.burst = Duration::from_secs(1);
    options.max_wait = Duration::from_millis(100);
    let client = client(&pacer_on(
        &clock,
        reqwest_pacer::LimiterConfig::new(options),
    ));
    drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    let refused = drive(&clock, client.get(server.uri()).send()).await;
    assert!(refused.unwrap_err().is_rejected());
    let longer = client
        .get(server.uri())
        .with_extension(MaxWait(Duration::from_secs(10)));
    let response = drive(&clock, longer.send()).await.unwrap();
    // The next unit comes a second after the first was taken.
    assert_eq!(script.gap(0, 1), Duration::from_secs(1));
    assert_eq!(response.paced().unwrap().waited(), Duration::from_secs(1));
    assert_eq!(script.calls(), 2);
}

#[tokio::test]
async fn an_interactive_request_goes_before_batch_work_queued_earlier() {
    let (server, _, client) = one_a_second(Duration::from_secs(30)).await;
    let batch = {
        let (client, uri) = (client.clone(), format!("{}/batch", server.uri()));
        tokio::spawn(async move {
            client
                .get(uri)
                .with_extension(Priority::Batch)
                .send()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let interactive = client
        .get(format!("{}/interactive", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(interactive.status(), 200);
    batch.await.unwrap();
    let paths: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.url.path().to_owned())
        .collect();
    assert_eq!(paths, ["/", "/interactive", "/batch"]);
}

#[tokio::test]
async fn a_total_timeout_shorter_than_the_wait_is_refused_at_once() {
    let (server, script, client) = one_a_second(Duration::from_secs(30)).await;
    let err = client
        .get(server.uri())
        .with_extension(TotalTimeout(Duration::from_millis(200)))
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        err.rejection().map(|r| r.reason().clone()),
        Some(RejectReason::PastTimeout {
            cause: WaitCause::Queue,
            timeout: Duration::from_millis(200),
        })
    );
    assert_eq!(err.rejection().unwrap().kind(), "past_timeout");
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn a_total_timeout_bounds_the_send_with_the_time_left() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    // Pacer's clock bounds the send: the server answers in 5 s of real time, the manual clock
    // reaches the timeout long before.
    let clock = pacer_core::ManualClock::new();
    let client = client(&pacer_on(&clock, LimiterConfig::new(generous())));
    let start = clock.now();
    let err = drive(
        &clock,
        client
            .get(server.uri())
            .with_extension(TotalTimeout(Duration::from_millis(300)))
            .send(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        clock.now() - start,
        Duration::from_millis(300),
        "timed out at the TotalTimeout, to the nanosecond"
    );
    match err.pacer_error() {
        Some(e @ PacerError::TimedOut { paced, timeout }) => {
            assert!(e.is_timed_out());
            assert_eq!(*timeout, Duration::from_millis(300));
            assert_eq!(paced.attempts(), 1);
            assert_eq!(paced.limiter(), "api");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn a_response_says_what_pacer_did_with_its_request() {
    let (server, _script) = scripted(vec![throttled("0"), ok()]).await;
    let client = client(&pacer(generous()));
    let response = client
        .get(format!("{}/orders?token=secret", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let paced = response.paced().expect("paced");
    assert_eq!(paced.attempts(), 2, "the throttle was retried");
    assert_eq!(paced.limiter(), "api");
    let port = server.address().port();
    assert_eq!(paced.endpoint(), format!("http://127.0.0.1:{port}"));
    assert!(paced.rate() > 0.0);

    let response = client.get(server.uri()).send().await.unwrap();
    assert_eq!(response.paced().unwrap().attempts(), 1);
}

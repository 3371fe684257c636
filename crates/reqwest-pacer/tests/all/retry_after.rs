use crate::support::*;
use pacer_core::{Clock, ManualClock};
use reqwest_pacer::LimiterConfig;
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

#[tokio::test]
async fn a_429_with_retry_after_in_seconds_waits_then_succeeds() {
    let clock = ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![throttled("1"), ok()]).on(&clock)).await;
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()));
    let client = client(&pacer);
    let response = drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2, "exactly one retry reached the server");
    // The Retry-After, then one unit at the cut rate (the pause leaves the bucket empty).
    let gap = script.gap(0, 1);
    assert!(gap >= Duration::from_secs(1), "{gap:?}");
    assert!(gap < Duration::from_millis(1_010), "{gap:?}");
    let state = pacer.state("api", &endpoint(&server)).unwrap();
    let limiter = state.limiter.unwrap();
    assert_eq!(limiter.stats.throttled, 1);
    assert_eq!(limiter.decreases, 1, "the throttle cut the rate");
}

#[tokio::test]
async fn a_429_without_retry_after_holds_the_endpoint_for_pause_without_retry_after() {
    // AIMD: a cut to 0.7 times the rate, so that the unit after the pause comes at once.
    for (pause, at_least) in [
        (None, Duration::from_secs(1)),
        (
            Some(Duration::from_millis(2500)),
            Duration::from_millis(2500),
        ),
        (Some(Duration::ZERO), Duration::ZERO),
    ] {
        let clock = ManualClock::new();
        let bare = wiremock::ResponseTemplate::new(429);
        let (server, script) = serve_script(Script::new(vec![bare, ok()]).on(&clock)).await;
        let mut options = generous();
        options.controller = pacer_core::ControllerKind::Aimd;
        if let Some(pause) = pause {
            options.pause_without_retry_after = pause;
        }
        let pacer = pacer_on(&clock, LimiterConfig::new(options));
        let response = drive(&clock, client(&pacer).get(server.uri()).send())
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{pause:?}");
        assert_eq!(script.calls(), 2, "{pause:?}: the retry");
        let gap = script.gap(0, 1);
        assert!(gap >= at_least, "{pause:?}: {gap:?}");
        assert!(
            gap < at_least + Duration::from_millis(10),
            "{pause:?}: {gap:?}"
        );
    }
}

/// An overloaded server's bare 503 (nginx's `limit_req`, S3's `SlowDown`) or 529 (Anthropic's
/// `overloaded_error`) is a throttle: it cuts, pauses the endpoint for
/// `PauseWithoutRetryAfter` and is sent again after the pause. With `Overloaded` empty (an API
/// whose 503 means maintenance) a bare 503 is neutral again: returned at once, not sent again.
#[tokio::test]
async fn a_bare_503_or_529_is_overload_unless_the_api_says_503_means_maintenance() {
    for (status, overloaded) in [(503, true), (529, true), (503, false)] {
        let clock = ManualClock::new();
        let bare = wiremock::ResponseTemplate::new(status);
        let (server, script) = serve_script(Script::new(vec![bare, ok()]).on(&clock)).await;
        let mut config = LimiterConfig::new(generous());
        if !overloaded {
            config = config.classifier(reqwest_pacer::DefaultClassifier::default().overloaded([]));
        }
        let pacer = pacer_on(&clock, config);
        let response = drive(&clock, client(&pacer).get(server.uri()).send())
            .await
            .unwrap();
        let state = pacer.state("api", &endpoint(&server)).unwrap();
        let limiter = state.limiter.unwrap();
        if overloaded {
            assert_eq!(response.status(), 200, "{status}");
            assert_eq!(script.calls(), 2, "{status}: sent again");
            let gap = script.gap(0, 1);
            assert!(gap >= Duration::from_secs(1), "{status}: {gap:?}");
            assert_eq!(limiter.stats.throttled, 1, "{status}");
            assert_eq!(limiter.decreases, 1, "{status}: the rate was cut");
        } else {
            assert_eq!(response.status(), 503);
            assert_eq!(script.calls(), 1, "not sent again");
            assert_eq!(limiter.stats.throttled, 0);
            assert_eq!(limiter.decreases, 0);
        }
    }
}

#[tokio::test]
async fn a_429_whose_fields_say_when_the_quota_is_back_waits_for_them_not_for_the_bare_pause() {
    // No `Retry-After`, and a `PauseWithoutRetryAfter` of 5 s: draft-11 fields that say the
    // quota is spent and back in 1 s hold the endpoint 1 s; fields that say some is left say
    // nothing of when, and the bare pause holds it.
    // (The fields' own pacing may add its least delay, 100 ms, after the stop.)
    let ms = Duration::from_millis;
    for (remaining, from, to) in [(0, ms(1_000), ms(1_110)), (3, ms(5_000), ms(5_110))] {
        let clock = ManualClock::new();
        let throttle = wiremock::ResponseTemplate::new(429)
            .insert_header("RateLimit-Policy", "\"default\";q=100;w=60")
            .insert_header("RateLimit", format!("\"default\";r={remaining};t=1"));
        let (server, script) = serve_script(Script::new(vec![throttle, ok()]).on(&clock)).await;
        let mut options = generous();
        options.controller = pacer_core::ControllerKind::Aimd;
        options.pause_without_retry_after = Duration::from_secs(5);
        let pacer = pacer_on(&clock, LimiterConfig::new(options));
        let response = drive(&clock, client(&pacer).get(server.uri()).send())
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "r={remaining}");
        assert_eq!(script.calls(), 2, "r={remaining}: the retry");
        let gap = script.gap(0, 1);
        assert!(gap >= from && gap <= to, "r={remaining}: {gap:?}");
    }
}

#[tokio::test]
async fn a_429_with_an_http_date_waits_until_that_date() {
    let clock = ManualClock::new();
    // The manual clock's wall time is a whole second: the date is exactly 2 s away.
    let at = httpdate::fmt_http_date(clock.system_now() + Duration::from_secs(2));
    let (server, script) = serve_script(Script::new(vec![throttled(&at), ok()]).on(&clock)).await;
    let pacer = pacer_on(&clock, LimiterConfig::new(generous()));
    let client = client(&pacer);
    let response = drive(&clock, client.get(server.uri()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(script.calls(), 2);
    let gap = script.gap(0, 1);
    assert!(gap >= Duration::from_secs(2), "{gap:?}");
    assert!(gap < Duration::from_millis(2_010), "{gap:?}");
}

#[tokio::test]
async fn after_the_last_attempt_the_caller_gets_the_servers_last_response_unchanged() {
    let server = MockServer::start().await;
    let last = throttled("0")
        .insert_header("x-last", "yes")
        .set_body_string("slow down");
    let script = Script::new(vec![throttled("0"), throttled("0"), last]);
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let pacer = pacer_with(LimiterConfig::new(generous()).max_attempts(attempts(3)));
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(script.calls(), 3);
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["x-last"], "yes");
    assert_eq!(response.text().await.unwrap(), "slow down");
}

#[tokio::test]
async fn a_retry_after_longer_than_max_wait_returns_the_429_without_a_retry() {
    let (server, script) = scripted(vec![throttled("120"), ok()]).await;
    let pacer = pacer(generous()); // MaxWait 30 s
    let response = client(&pacer).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(script.calls(), 1);
    // The next request is refused at once, without reaching the server.
    let err = client(&pacer).get(server.uri()).send().await.unwrap_err();
    use reqwest_pacer::PacerErrorExt;
    let r = err.rejection().expect("a rejection");
    assert_eq!(r.kind(), "wait_too_long:server_stop");
    assert!(r.needed_wait().unwrap() > Duration::from_secs(100));
    assert_eq!(script.calls(), 1);
}

pub(crate) fn endpoint(server: &MockServer) -> String {
    let url: reqwest::Url = server.uri().parse().unwrap();
    format!("http://{}:{}", url.host_str().unwrap(), url.port().unwrap())
}

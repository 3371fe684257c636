//! What real servers send beside their answers: a `Retry-After` on a success, rate-limit fields
//! that say the quota is spent on a request the server accepted. Only a throttle stops an
//! endpoint for as long as the server says; anything else holds it no longer than the policy it
//! describes can mean.

use crate::retry_after::endpoint;
use crate::support::*;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_pacer::PacerMiddleware;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A client that does not follow redirects, so that a 301 reaches the middleware as it is.
fn plain_client(pacer: &PacerMiddleware) -> ClientWithMiddleware {
    let inner = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    ClientBuilder::new(inner).with(pacer.clone()).build()
}

/// Sends `n` requests one after the other; returns how many came back with a response.
async fn send(client: &ClientWithMiddleware, url: &str, n: usize) -> usize {
    let mut answered = 0;
    for _ in 0..n {
        if client.get(url).send().await.is_ok() {
            answered += 1;
        }
    }
    answered
}

#[tokio::test]
async fn a_retry_after_on_a_200_202_or_301_changes_nothing() {
    for status in [200, 202, 301] {
        let server = MockServer::start().await;
        let mut answer = ResponseTemplate::new(status).insert_header("retry-after", "120");
        if status == 301 {
            answer = answer.insert_header("location", "/elsewhere");
        }
        let script = Script::new(vec![answer]);
        Mock::given(method("GET"))
            .respond_with(script.clone())
            .mount(&server)
            .await;
        let pacer = pacer(generous());
        let answered = send(&plain_client(&pacer), &server.uri(), 20).await;
        assert_eq!(answered, 20, "{status}: every request was answered");
        assert_eq!(
            script.calls(),
            20,
            "{status}: every request reached the server"
        );
        let state = pacer.state("api", &endpoint(&server)).unwrap();
        assert_eq!(state.headers, None, "{status}: no stop is kept");
        let limiter = state.limiter.unwrap();
        assert_eq!(limiter.stats.throttled, 0, "{status}");
        assert!(limiter.paused_for.is_none(), "{status}: no pause");
    }
}

#[tokio::test]
async fn a_503_or_a_429_with_retry_after_still_stops() {
    for status in [429, 503] {
        let (server, script) = scripted(vec![
            ResponseTemplate::new(status).insert_header("retry-after", "120"),
            ok(),
        ])
        .await;
        let pacer = pacer(generous()); // MaxWait 30 s: a stop of 120 s is refused at once
        let client = plain_client(&pacer);
        let first = client.get(server.uri()).send().await.unwrap();
        assert_eq!(first.status(), status, "the server's answer, not retried");
        let second = client.get(server.uri()).send().await;
        assert!(second.is_err(), "{status}: the next request is held back");
        assert_eq!(script.calls(), 1, "{status}");
    }
}

#[tokio::test]
async fn a_success_that_says_the_quota_is_spent_holds_no_longer_than_its_policy_can_mean() {
    // 120 units, none left, reset in 60 s, no window: as a stop, 60 s (over MaxWait, so every
    // later request would be refused); bounded to one unit's interval, 60 s / 120 = 500 ms.
    let spent = ResponseTemplate::new(200)
        .insert_header("x-ratelimit-limit", "120")
        .insert_header("x-ratelimit-remaining", "0")
        .insert_header("x-ratelimit-reset", "60");
    let clock = pacer_core::ManualClock::new();
    let (server, script) = serve_script(Script::new(vec![spent]).on(&clock)).await;
    let pacer = pacer_on(&clock, reqwest_pacer::LimiterConfig::new(generous()));
    let answered = drive(&clock, send(&plain_client(&pacer), &server.uri(), 4)).await;
    assert_eq!(answered, 4);
    assert_eq!(script.calls(), 4);
    for i in 1..4 {
        let gap = script.gap(i - 1, i);
        assert!(
            gap >= std::time::Duration::from_millis(500)
                && gap <= std::time::Duration::from_millis(520),
            "held for one interval: {gap:?}"
        );
    }
}

#[tokio::test]
async fn a_403_the_classifier_calls_a_throttle_stops_for_its_retry_after() {
    // GitHub's secondary limits: a 403 with Retry-After.
    let (server, script) = scripted(vec![
        ResponseTemplate::new(403).insert_header("retry-after", "120"),
        ok(),
    ])
    .await;
    let pacer = pacer(generous());
    let client = plain_client(&pacer);
    assert_eq!(client.get(server.uri()).send().await.unwrap().status(), 403);
    assert!(client.get(server.uri()).send().await.is_err());
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn a_reset_in_the_year_9999_on_a_429_fails_closed() {
    // 253402300799 is the last second of 9999 in epoch seconds; read by magnitude alone it would
    // be epoch milliseconds of 1978, a reset in the past, and the retry would go at once.
    let (server, script) = scripted(vec![
        ResponseTemplate::new(429)
            .insert_header("x-ratelimit-limit", "100")
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-reset", "253402300799"),
        ok(),
    ])
    .await;
    let pacer = pacer(generous()); // MaxWait 30 s
    let client = plain_client(&pacer);
    let first = client.get(server.uri()).send().await.unwrap();
    assert_eq!(first.status(), 429, "not retried at once");
    assert_eq!(script.calls(), 1);
    let stopped = client.get(server.uri()).send().await.unwrap_err();
    let rejection = reqwest_pacer::PacerErrorExt::rejection(&stopped).expect("refused");
    let needed = rejection.needed_wait().unwrap();
    assert!(
        needed > std::time::Duration::from_secs(60)
            && needed <= std::time::Duration::from_secs(300),
        "bounded by the 5 min exhausted-stop cap, never zero: {needed:?}"
    );
    assert_eq!(script.calls(), 1);
}

/// Broken and absurd rate-limit fields a server may add to its successes (as `pacer-sim serve
/// --quirk junk` sends them).
fn junk() -> Vec<ResponseTemplate> {
    let ok = || ResponseTemplate::new(200);
    let mut many = ok();
    for _ in 0..90 {
        many = many.append_header("x-ratelimit-remaining", "0");
    }
    vec![
        ok().insert_header("retry-after", "99999999999"),
        ok().insert_header("retry-after", "-5"),
        ok().insert_header("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
        ok().insert_header("x-ratelimit-limit", "0")
            .insert_header("x-ratelimit-remaining", "-1"),
        ok().insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-reset", "99999999999999999999"),
        ok().insert_header("x-ratelimit-remaining", "0")
            .insert_header("x-ratelimit-reset", "253402300799"),
        ok().insert_header("ratelimit", "\"default\";r=0;t=99999999999")
            .insert_header("ratelimit-policy", "\"default\";q=0;w=1"),
        ok().insert_header("ratelimit", "\"default\";r=;t="),
        ok().insert_header(
            "ratelimit-policy",
            format!("\"default\";q=1;w=1;pad=\"{}\"", "x".repeat(8_000)).as_str(),
        ),
        many,
    ]
}

#[tokio::test]
async fn junk_on_successes_never_holds_an_endpoint_back() {
    for (i, answer) in junk().into_iter().enumerate() {
        let (server, script) = scripted(vec![answer]).await;
        let pacer = pacer(generous());
        let answered = send(&plain_client(&pacer), &server.uri(), 10).await;
        assert_eq!(answered, 10, "junk #{i}: every request answered");
        assert_eq!(script.calls(), 10, "junk #{i}: every request sent");
        let limiter = pacer
            .state("api", &endpoint(&server))
            .unwrap()
            .limiter
            .unwrap();
        assert!(limiter.paused_for.is_none(), "junk #{i}: no pause");
    }
}

/// The dialects of Reddit, Linear and Imgur reach the endpoint's state through the middleware,
/// with the values their servers mean.
#[tokio::test]
async fn reddit_linear_and_imgur_fields_reach_the_endpoint_state() {
    let in_an_hour = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    let epoch = in_an_hour
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let epoch_ms = (epoch * 1000).to_string();
    let epoch_s = epoch.to_string();
    let cases: Vec<(&str, ResponseTemplate, Option<&str>, u64, u64)> = vec![
        (
            "reddit",
            ResponseTemplate::new(200)
                .insert_header("x-ratelimit-used", "3")
                .insert_header("x-ratelimit-remaining", "597.0")
                .insert_header("x-ratelimit-reset", "423"),
            None,
            600,
            597,
        ),
        (
            "linear",
            ResponseTemplate::new(200)
                .insert_header("x-ratelimit-requests-limit", "1500")
                .insert_header("x-ratelimit-requests-remaining", "1499")
                .insert_header("x-ratelimit-requests-reset", epoch_ms.as_str()),
            Some("requests"),
            1500,
            1499,
        ),
        (
            "imgur",
            ResponseTemplate::new(200)
                .insert_header("x-ratelimit-userlimit", "2000")
                .insert_header("x-ratelimit-userremaining", "1999")
                .insert_header("x-ratelimit-userreset", epoch_s.as_str()),
            Some("user"),
            2000,
            1999,
        ),
    ];
    for (name, answer, policy, limit, remaining) in cases {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(answer)
            .mount(&server)
            .await;
        let pacer = pacer(generous());
        let response = plain_client(&pacer).get(server.uri()).send().await.unwrap();
        assert_eq!(response.status(), 200, "{name}");
        let info = pacer.state("api", &endpoint(&server)).unwrap().headers;
        let info = info.unwrap_or_else(|| panic!("{name}: no state kept"));
        assert_eq!(info.policy_name(), policy, "{name}");
        assert_eq!(
            (info.limit(), info.remaining()),
            (Some(limit), Some(remaining)),
            "{name}"
        );
        let reset = info.reset_after().unwrap();
        assert!(
            reset > std::time::Duration::from_secs(400),
            "{name}: {reset:?}"
        );
        assert!(
            reset <= std::time::Duration::from_secs(3600),
            "{name}: {reset:?}"
        );
    }
}

/// Flask-Limiter's fields as it sent them live (`scripts/real-limiters/run.sh flask-10s`): every
/// response, a 200 too, carries `X-RateLimit-Limit`, `-Remaining`, `-Reset` (a Unix time) and a
/// `Retry-After` of the seconds to that reset. The fields reach the endpoint's state, and the
/// 200's `Retry-After` holds nothing back: no request waits anywhere near its 10 s.
#[tokio::test]
async fn flask_limiter_s_fields_are_read_and_its_200s_retry_after_holds_nothing() {
    let clock = pacer_core::ManualClock::new();
    let reset = unix_secs_after(&clock, 10);
    let answer = ResponseTemplate::new(200)
        .insert_header("x-ratelimit-limit", "100")
        .insert_header("x-ratelimit-remaining", "87")
        .insert_header("x-ratelimit-reset", reset.to_string().as_str())
        .insert_header("retry-after", "10");
    let (server, script) = serve_script(Script::new(vec![answer]).on(&clock)).await;
    let pacer = pacer_on(&clock, reqwest_pacer::LimiterConfig::new(generous()));
    let answered = drive(&clock, send(&plain_client(&pacer), &server.uri(), 5)).await;
    assert_eq!((answered, script.calls()), (5, 5));
    for i in 1..5 {
        let gap = script.gap(i - 1, i);
        assert!(
            gap < std::time::Duration::from_secs(1),
            "held back: {gap:?}"
        );
    }
    let state = pacer.state("api", &endpoint(&server)).unwrap();
    let info = state.headers.expect("the fields are kept");
    assert_eq!((info.limit(), info.remaining()), (Some(100), Some(87)));
    let limiter = state.limiter.unwrap();
    assert_eq!(limiter.stats.throttled, 0);
    assert!(limiter.paused_for.is_none(), "no pause");
}

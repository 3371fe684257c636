//! A server that misbehaves on purpose, over raw TCP: absurd `Retry-After` values, resets in the
//! wrong unit, thousands of repeated headers, a header of a megabyte, bytes that are not UTF-8,
//! connections reset and responses stalled in the middle of a retry. Every call ends in a
//! response or a typed error, and every wait Pacer orders stays within its documented bounds.

use crate::support::*;
use reqwest_pacer::{PacerErrorExt, PacerMiddleware, PacerResponseExt, RejectReason, WaitCause};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the hostile server does with the n-th request.
#[derive(Clone)]
enum Act {
    /// Writes these bytes as the whole response, then closes.
    Raw(Vec<u8>),
    /// Closes the connection without a word.
    Reset,
    /// Waits, then answers 200.
    Stall(Duration),
}

fn response(status: &str, headers: &[(&str, &[u8])]) -> Act {
    let mut out =
        format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: 2\r\n").into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\nok");
    Act::Raw(out)
}

fn ok_act() -> Act {
    response("200 OK", &[])
}

/// Serves `acts` in order (the last one again when they run out); returns the URL and a counter
/// of the requests it read.
async fn hostile(acts: Vec<Act>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&served);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let i = counter.fetch_add(1, Ordering::SeqCst);
            let act = acts[i.min(acts.len() - 1)].clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut read = 0;
                while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf[read..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read += n,
                    }
                }
                match act {
                    Act::Raw(bytes) => {
                        let _ = socket.write_all(&bytes).await;
                        let _ = socket.shutdown().await;
                    }
                    Act::Reset => drop(socket),
                    Act::Stall(d) => {
                        tokio::time::sleep(d).await;
                        let _ = socket
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                            .await;
                    }
                }
            });
        }
    });
    (url, served)
}

fn endpoint(url: &str) -> String {
    let u: reqwest::Url = url.parse().unwrap();
    format!("http://{}:{}", u.host_str().unwrap(), u.port().unwrap())
}

/// The longest pause the limiter holds for the endpoint now.
fn paused_for(pacer: &PacerMiddleware, url: &str) -> Duration {
    let state = pacer.state("api", &endpoint(url)).unwrap();
    state.limiter.and_then(|l| l.paused_for).unwrap_or_default()
}

#[tokio::test]
async fn a_capped_stop_counts_down_and_ends_instead_of_restarting_at_every_look() {
    // Regression: a Retry-After of 10^12 s used to be capped to MaxRetryAfter from *each* check,
    // so the endpoint stayed stopped for good. Capped when recorded, it ends.
    let (url, served) = hostile(vec![
        response(
            "429 Too Many Requests",
            &[("retry-after", b"1000000000000")],
        ),
        ok_act(),
    ])
    .await;
    let mut options = generous();
    options.max_retry_after = Duration::from_secs(1);
    let clock = pacer_core::ManualClock::new();
    let pacer = pacer_on(
        &clock,
        reqwest_pacer::LimiterConfig::new(options).max_attempts(attempts(1)),
    );
    let first = drive(&clock, client(&pacer).get(&url).send()).await;
    assert_eq!(first.unwrap().status(), 429);
    let r = drive(&clock, client(&pacer).get(&url).send())
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "the stop ended after MaxRetryAfter");
    // The capped stop, then one unit at the cut rate.
    let waited = r.paced().unwrap().waited();
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_millis(1_010),
        "{waited:?}"
    );
    assert_eq!(served.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn absurd_retry_afters_are_capped_by_max_retry_after_and_never_waited_out() {
    let max_retry_after = Duration::from_secs(300);
    for value in [
        "1000000000000",
        "1000000000000000",
        "Fri, 31 Dec 9999 23:59:59 GMT",
    ] {
        let (url, served) = hostile(vec![response(
            "429 Too Many Requests",
            &[("retry-after", value.as_bytes())],
        )])
        .await;
        let pacer = pacer(generous());
        let r = client(&pacer).get(&url).send().await.unwrap();
        assert_eq!(r.status(), 429, "{value}: the server's answer, unchanged");
        assert_eq!(
            served.load(Ordering::SeqCst),
            1,
            "{value}: no retry into a long stop"
        );
        let paused = paused_for(&pacer, &url);
        assert!(paused <= max_retry_after, "{value}: paused {paused:?}");
        assert!(
            paused > Duration::from_secs(250),
            "{value}: paused {paused:?}"
        );
        // The next request is refused at once, with a bounded wait, and sent nowhere.
        let e = client(&pacer).get(&url).send().await.unwrap_err();
        match e.rejection().map(|r| r.reason()) {
            Some(RejectReason::WaitTooLong { cause, needed, .. }) => {
                assert_eq!(*cause, WaitCause::ServerStop);
                // The stop counts down from when it was ordered; the margin is the time the
                // wait itself took to look.
                let bound = max_retry_after + Duration::from_millis(100);
                assert!(*needed <= bound, "{value}: needed {needed:?}");
            }
            other => panic!("{value}: {other:?}"),
        }
        assert_eq!(served.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn negative_garbage_past_and_fractional_retry_afters_are_safe() {
    // An unreadable one is no `Retry-After`: the pause of a throttle without one
    // (`PauseWithoutRetryAfter`, 1 s), then a unit at the minimum rate (600 a minute: a young
    // throttle without `Retry-After` sends as little as it may). A date in the past says "now",
    // which on a refusal says no more than `Retry-After: 0`, a wait under a second: the same.
    for (value, at_least) in [
        ("-5", Duration::from_millis(1100)),
        ("soon", Duration::from_millis(1100)),
        ("Thu, 01 Jan 1970 00:00:00 GMT", Duration::from_millis(1000)),
        // tower_governor's for any wait under a second (rounded down).
        ("0", Duration::from_millis(1000)),
        ("0.5", Duration::from_millis(500)),
    ] {
        let throttle = response(
            "429 Too Many Requests",
            &[("retry-after", value.as_bytes())],
        );
        let (url, served) = hostile(vec![throttle, ok_act()]).await;
        let clock = pacer_core::ManualClock::new();
        let pacer = pacer_on(&clock, reqwest_pacer::LimiterConfig::new(generous()));
        let started = pacer_core::Clock::now(&clock);
        let r = drive(&clock, client(&pacer).get(&url).send())
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{value}");
        assert_eq!(served.load(Ordering::SeqCst), 2, "{value}");
        // The pause, then one unit at the cut rate.
        let took = pacer_core::Clock::now(&clock) - started;
        assert!(
            took >= at_least && took < at_least + Duration::from_millis(10),
            "{value}: {took:?}"
        );
    }
}

#[tokio::test]
async fn a_reset_in_the_wrong_unit_on_a_throttle_is_bounded_by_the_exhausted_stop_cap() {
    // Epoch milliseconds far in the future where seconds were expected, with nothing remaining,
    // on a 429: it fails closed, bounded by the cap. (On a success the same fields are unsound
    // and dropped: real_servers.rs.)
    let exhausted = response(
        "429 Too Many Requests",
        &[
            ("x-ratelimit-limit", b"100"),
            ("x-ratelimit-remaining", b"0"),
            ("x-ratelimit-reset", b"99999999999999"),
        ],
    );
    let (url, served) = hostile(vec![exhausted, ok_act()]).await;
    let pacer = pacer(generous());
    assert_eq!(client(&pacer).get(&url).send().await.unwrap().status(), 429);
    let e = client(&pacer).get(&url).send().await.unwrap_err();
    match e.rejection().map(|r| r.reason()) {
        Some(RejectReason::WaitTooLong { cause, needed, .. }) => {
            assert_eq!(*cause, WaitCause::ServerStop);
            assert!(*needed <= Duration::from_millis(300_100), "{needed:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(served.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn thousands_of_repeated_headers_and_bytes_that_are_not_utf8_are_read_safely() {
    // hyper refuses a response with more than 100 header lines before Pacer sees it: a typed
    // transport error. Up to that, every line is read; the parser's own tests take thousands.
    let mut many = Vec::new();
    for i in 0..5000 {
        many.push(("x-ratelimit-remaining", i.to_string()));
    }
    let many: Vec<(&str, &[u8])> = many.iter().map(|(k, v)| (*k, v.as_bytes())).collect();
    let ninety: Vec<(&str, &[u8])> = many[..90].to_vec();
    let invalid: &[(&str, &[u8])] = &[
        ("ratelimit", b"\"a\";r=\xff\xfe;t=\x80"),
        ("retry-after", b"\xc3\x28"),
        ("x-ratelimit-limit", b"\xf0\x28\x8c\x28"),
    ];
    let (url, _) = hostile(vec![
        response("200 OK", &many),
        response("200 OK", &ninety),
        response("200 OK", invalid),
    ])
    .await;
    let pacer = pacer(generous());
    let e = client(&pacer).get(&url).send().await.unwrap_err();
    assert!(matches!(e, reqwest_middleware::Error::Reqwest(_)), "{e:?}");
    assert_eq!(client(&pacer).get(&url).send().await.unwrap().status(), 200);
    assert_eq!(client(&pacer).get(&url).send().await.unwrap().status(), 200);
    // The parser itself, on thousands of repeated lines and a megabyte value.
    let mut map = http::HeaderMap::new();
    for (name, value) in &many {
        map.append(*name, http::HeaderValue::from_bytes(value).unwrap());
    }
    map.append(
        "ratelimit",
        http::HeaderValue::from_bytes(&vec![b'r'; 1 << 20]).unwrap(),
    );
    let info = pacer_core::RateLimitInfo::from_headers(&map, std::time::SystemTime::now());
    assert!(
        info.reset_after()
            .is_none_or(|r| r <= Duration::from_secs(365 * 86_400))
    );
}

#[tokio::test]
async fn a_header_of_a_megabyte_ends_in_a_typed_error_not_a_panic() {
    let huge = vec![b'a'; 1024 * 1024];
    let (url, _) = hostile(vec![response("200 OK", &[("x-ratelimit-policy", &huge)])]).await;
    let pacer = pacer(generous());
    let result = client(&pacer).get(&url).send().await;
    match result {
        Ok(r) => assert_eq!(r.status(), 200),
        Err(e) => assert!(!e.is_rejected(), "a transport error, not a refusal: {e}"),
    }
    let snapshot = pacer
        .state("api", &endpoint(&url))
        .unwrap()
        .limiter
        .unwrap();
    assert_eq!(snapshot.queue_len, 0);
}

#[tokio::test]
async fn a_connection_reset_in_the_middle_of_a_retry_ends_in_the_transport_error() {
    let throttle = response("429 Too Many Requests", &[("retry-after", b"0")]);
    let (url, served) = hostile(vec![throttle, Act::Reset]).await;
    let pacer = pacer(generous());
    let e = client(&pacer).get(&url).send().await.unwrap_err();
    assert!(!e.is_rejected(), "{e}");
    assert!(matches!(e, reqwest_middleware::Error::Reqwest(_)), "{e:?}");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    let s = pacer
        .state("api", &endpoint(&url))
        .unwrap()
        .limiter
        .unwrap();
    assert_eq!((s.queue_len, s.stats.throttled), (0, 1));
}

#[tokio::test]
async fn a_response_stalled_in_the_middle_of_a_retry_ends_in_the_clients_timeout() {
    let throttle = response("429 Too Many Requests", &[("retry-after", b"0")]);
    let (url, _) = hostile(vec![throttle, Act::Stall(Duration::from_secs(30))]).await;
    let pacer = pacer(generous());
    let client = reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder()
            .timeout(Duration::from_millis(300))
            .build()
            .unwrap(),
    )
    .with(pacer.clone())
    .build();
    let e = client.get(&url).send().await.unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    let s = pacer
        .state("api", &endpoint(&url))
        .unwrap()
        .limiter
        .unwrap();
    assert_eq!(s.queue_len, 0);
}

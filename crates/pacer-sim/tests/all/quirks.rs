//! `serve --quirk` over real loopback HTTP: what each quirk sends, how often, and that the quota
//! accepts the same requests with quirks as without; and that `live` names them.

use pacer_sim::live::{LiveOptions, LiveSession};
use pacer_sim::serve::{
    HUGE_POLICY_BYTES, HeaderDialect, JUNK_EVERY, Junk, Quirk, REPEATED_REMAINING_LINES,
    RETRY_AFTER_EVERY, ServeOptions, Server, ServerStats,
};
use pacer_sim::{ServerShape, Speed, Story};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use std::net::SocketAddr;
use std::time::Duration;

/// The rate-limit fields a quirk may send.
const RATE_LIMIT_FIELDS: [&str; 6] = Junk::FIELDS;

async fn serve(quota: u64, speed: f64, headers: HeaderDialect, quirks: &[Quirk]) -> Server {
    let options = ServeOptions {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        quota,
        story: Story::by_name("free-run").unwrap(),
        speed: Speed::new(speed).unwrap(),
        headers,
        quirks: quirks.iter().copied().collect(),
        server: ServerShape::Sliding,
    };
    Server::start(&options).await.unwrap()
}

/// A client that reads the 200 repeated lines: hyper's HTTP/1 client refuses a response head of
/// more than 100 lines unless told otherwise.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .retry(reqwest::retry::never())
        .http1_max_headers(1000)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Sends `n` requests one after the other; the status and headers of each.
async fn send(server: &Server, n: usize) -> Vec<(StatusCode, HeaderMap)> {
    let http = client();
    let url = format!("{}/items", server.url());
    let mut answers = Vec::with_capacity(n);
    for _ in 0..n {
        let r = http.get(&url).send().await.unwrap();
        answers.push((r.status(), r.headers().clone()));
    }
    answers
}

fn has_rate_limit_fields(h: &HeaderMap) -> bool {
    RATE_LIMIT_FIELDS.iter().any(|name| h.contains_key(*name))
}

async fn stats(server: &Server) -> ServerStats {
    let body = client()
        .get(format!("{}/stats", server.url()))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn retry_after_on_success_is_one_in_fifty_alternating_200_and_202() {
    let server = serve(
        100_000,
        4.0,
        HeaderDialect::None,
        &[Quirk::RetryAfterOnSuccess],
    )
    .await;
    let answers = send(&server, 200).await;
    let mut dressed = Vec::new();
    for (i, (status, h)) in answers.iter().enumerate() {
        assert_ne!(*status, StatusCode::TOO_MANY_REQUESTS, "the quota is ample");
        if h.contains_key("retry-after") {
            dressed.push((
                i + 1,
                *status,
                h["retry-after"].to_str().unwrap().to_owned(),
            ));
        } else {
            assert_eq!(*status, StatusCode::OK, "request {}", i + 1);
            assert!(!has_rate_limit_fields(h), "request {}", i + 1);
        }
    }
    // 120 story seconds at 4× is 30 real seconds.
    let expected: Vec<(usize, StatusCode, String)> = [
        (50, StatusCode::OK),
        (100, StatusCode::ACCEPTED),
        (150, StatusCode::OK),
        (200, StatusCode::ACCEPTED),
    ]
    .into_iter()
    .map(|(n, s)| (n, s, "30.000".to_owned()))
    .collect();
    assert_eq!(dressed, expected);
    assert_eq!(
        u64::try_from(dressed.len()).unwrap(),
        200 / RETRY_AFTER_EVERY
    );
    let s = stats(&server).await;
    assert_eq!(s.quirks, ["retry-after-on-success"]);
    assert_eq!((s.accepted_requests, s.throttled), (200, 0));
}

#[tokio::test]
async fn junk_is_one_in_five_cycling_through_every_set() {
    let server = serve(100_000, 1.0, HeaderDialect::None, &[Quirk::Junk]).await;
    let answers = send(&server, 100).await;
    let mut k = 0;
    for (i, (status, h)) in answers.iter().enumerate() {
        let nth = u64::try_from(i + 1).unwrap();
        assert_eq!(*status, StatusCode::OK, "junk leaves the status alone");
        if !nth.is_multiple_of(JUNK_EVERY) {
            assert!(!has_rate_limit_fields(h), "request {nth}");
            continue;
        }
        let junk = Junk::nth(k);
        k += 1;
        let mut sent: Vec<(String, String)> = Vec::new();
        for name in RATE_LIMIT_FIELDS {
            for value in h.get_all(name) {
                sent.push((name.to_owned(), value.to_str().unwrap().to_owned()));
            }
        }
        let mut wanted: Vec<(String, String)> = junk
            .lines()
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v))
            .collect();
        sent.sort();
        wanted.sort();
        assert_eq!(sent, wanted, "request {nth}: {junk:?}");
    }
    assert_eq!(k, 100 / JUNK_EVERY, "one in five");
    assert_eq!(
        k,
        2 * u64::try_from(Junk::ALL.len()).unwrap(),
        "every set, twice"
    );
    assert_eq!(stats(&server).await.quirks, ["junk"]);
}

#[tokio::test]
async fn junk_replaces_the_dialect_s_field_of_the_same_name() {
    let server = serve(100_000, 6.0, HeaderDialect::Draft11, &[Quirk::Junk]).await;
    let answers = send(&server, 50).await;
    let policy = |i: usize| -> Vec<String> {
        answers[i - 1]
            .1
            .get_all("ratelimit-policy")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    };
    let limit = |i: usize| -> Vec<&str> {
        answers[i - 1]
            .1
            .get_all("ratelimit")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect()
    };
    // The dialect's own fields, at 6× (the 60 s window is 10 real seconds).
    assert_eq!(policy(1), ["\"default\";q=100000;w=10"]);
    // The seventh junk response: both draft-11 fields replaced.
    assert_eq!(limit(35), ["\"default\";r=0;t=99999999999"]);
    assert_eq!(policy(35), ["\"default\";q=0;w=1"]);
    // The eighth: RateLimit replaced, the dialect's RateLimit-Policy kept.
    assert_eq!(limit(40), ["\"default\";r=;t="]);
    assert_eq!(policy(40), ["\"default\";q=100000;w=10"]);
    // The ninth: the 8 KB policy, alone.
    let huge = policy(45);
    assert_eq!(huge.len(), 1);
    assert_eq!(huge[0].len(), HUGE_POLICY_BYTES);
    // The tenth: 200 lines of remaining 0 beside the dialect's fields.
    let h = &answers[49].1;
    assert_eq!(
        h.get_all("x-ratelimit-remaining").iter().count(),
        REPEATED_REMAINING_LINES
    );
    assert_eq!(limit(50).len(), 1);
    // A Retry-After junk beside the dialect's fields.
    assert_eq!(answers[4].1["retry-after"], "99999999999");
    assert!(answers[4].1.contains_key("ratelimit"));
}

/// The 200 repeated lines are more than a default reqwest client reads: the whole response is
/// an error there, before any middleware sees it.
#[tokio::test]
async fn a_default_client_refuses_the_200_repeated_lines() {
    let server = serve(100_000, 1.0, HeaderDialect::None, &[Quirk::Junk]).await;
    let http = reqwest::Client::builder()
        .retry(reqwest::retry::never())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let url = format!("{}/items", server.url());
    for n in 1..50 {
        let r = http.get(&url).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "request {n}");
    }
    assert!(http.get(&url).send().await.is_err(), "the 50th");
}

/// Both quirks on, every dialect, a quota that throttles: the server accepts and refuses exactly
/// the requests a server without quirks does, and a 429 is never dressed.
#[tokio::test]
async fn quirks_never_change_which_requests_the_quota_accepts() {
    for dialect in [
        HeaderDialect::None,
        HeaderDialect::Draft11,
        HeaderDialect::Github,
    ] {
        let plain = serve(130, 1.0, dialect, &[]).await;
        let quirky = serve(
            130,
            1.0,
            dialect,
            &[Quirk::RetryAfterOnSuccess, Quirk::Junk],
        )
        .await;
        let a = send(&plain, 160).await;
        let b = send(&quirky, 160).await;
        for (i, ((sa, ha), (sb, hb))) in a.iter().zip(&b).enumerate() {
            let throttled = *sa == StatusCode::TOO_MANY_REQUESTS;
            assert_eq!(
                throttled,
                *sb == StatusCode::TOO_MANY_REQUESTS,
                "{dialect} request {}",
                i + 1
            );
            assert!(throttled || sb.is_success(), "{dialect} request {}", i + 1);
            if throttled {
                let names = |h: &HeaderMap| -> Vec<(String, usize)> {
                    h.keys()
                        .map(|k| (k.to_string(), h.get_all(k).iter().count()))
                        .collect()
                };
                assert_eq!(names(ha), names(hb), "{dialect}: a 429 is never dressed");
            }
        }
        let throttled = a
            .iter()
            .filter(|(s, _)| *s == StatusCode::TOO_MANY_REQUESTS)
            .count();
        assert_eq!(
            throttled, 30,
            "{dialect}: 130 of 160 accepted, one unit each"
        );
        let (sa, mut sb) = (stats(&plain).await, stats(&quirky).await);
        assert_eq!(sb.quirks, ["retry-after-on-success", "junk"]);
        assert!(sa.quirks.is_empty());
        sb.quirks.clear();
        assert_eq!(
            (sa.accepted_requests, sa.throttled),
            (sb.accepted_requests, sb.throttled)
        );
    }
}

/// `live` says which quirks the served target has.
#[tokio::test]
async fn live_names_the_target_s_quirks() {
    let server = serve(120, 6.0, HeaderDialect::Draft11, &[Quirk::Junk]).await;
    let session = LiveSession::connect(&LiveOptions::new(server.url()))
        .await
        .unwrap();
    let d = session.describe();
    assert!(
        d.contains("(pacer-sim serve, quota 120 units/min, quirks junk)"),
        "{d}"
    );
}

use super::*;
use std::time::{Duration, SystemTime};

fn classify(status: u16, headers: &[(&str, &str)]) -> Signal {
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    let info = RateLimitInfo::from_headers(&h, SystemTime::UNIX_EPOCH);
    DefaultClassifier::default().classify(StatusCode::from_u16(status).unwrap(), &h, &info)
}

#[test]
fn the_default_rules() {
    let thr = |s| Signal::Throttled { retry_after: s };
    let table = [
        (200, vec![], Signal::Success),
        (304, vec![], Signal::Success),
        (429, vec![], thr(None)),
        (
            429,
            vec![("retry-after", "2")],
            thr(Some(Duration::from_secs(2))),
        ),
        (503, vec![], thr(None)),
        (529, vec![], thr(None)),
        (200, vec![("grpc-status", "8")], thr(None)),
        (200, vec![("grpc-status", "14")], thr(None)),
        (200, vec![("grpc-status", " 14 ")], thr(None)),
        (200, vec![("grpc-status", "0")], Signal::Success),
        (200, vec![("grpc-status", "13")], Signal::Success),
        (200, vec![("grpc-status", "fourteen")], Signal::Success),
        (
            503,
            vec![("retry-after", "5")],
            thr(Some(Duration::from_secs(5))),
        ),
        (403, vec![], Signal::Neutral),
        (
            403,
            vec![("retry-after", "60")],
            thr(Some(Duration::from_secs(60))),
        ),
        (
            403,
            vec![
                ("x-ratelimit-limit", "5000"),
                ("x-ratelimit-remaining", "0"),
            ],
            thr(None),
        ),
        (
            403,
            vec![
                ("x-ratelimit-limit", "5000"),
                ("x-ratelimit-remaining", "12"),
            ],
            Signal::Neutral,
        ),
        (500, vec![], Signal::Neutral),
        (404, vec![], Signal::Neutral),
    ];
    for (status, headers, expected) in table {
        assert_eq!(classify(status, &headers), expected, "{status} {headers:?}");
    }
}

#[test]
fn the_insufficient_quota_rule() {
    let quota = Some(BodyVerdict::QuotaExhausted {
        code: "insufficient_quota".into(),
    });
    let table: [(&str, Option<BodyVerdict>); 9] = [
        (
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
            quota.clone(),
        ),
        (r#"{"error":{"type":"insufficient_quota"}}"#, quota.clone()),
        (r#"{"error":{"code":"insufficient_quota"}}"#, quota.clone()),
        (
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            None,
        ),
        (r#"{"type":"insufficient_quota"}"#, None),
        (r#"{"error":"insufficient_quota"}"#, None),
        (r#"{"error":{"message":"insufficient_quota"}}"#, None),
        (r#"{"error":{"type":"insufficient_quota""#, None),
        ("insufficient_quota", None),
    ];
    for (body, expected) in table {
        assert_eq!(insufficient_quota(body.as_bytes()), expected, "{body}");
    }
}

fn headers(name: &str, value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
        value.parse().unwrap(),
    );
    h
}

#[test]
fn x_should_retry_or_stripe_should_retry_false_forbids_a_retry_and_nothing_else_does() {
    let table = [
        ("false", true),
        ("FALSE", true),
        ("False", true),
        ("true", false),
        ("0", false),
        ("no", false),
        ("", false),
    ];
    for (value, forbids) in table {
        for name in ["x-should-retry", "stripe-should-retry"] {
            assert_eq!(
                forbids_retry(&headers(name, value)),
                forbids,
                "{name}: {value:?}"
            );
        }
    }
    assert!(!forbids_retry(&HeaderMap::new()));
}

#[test]
fn the_built_in_body_rules() {
    let table: [(u16, &str, Option<BodyVerdict>); 8] = [
        (
            403,
            r#"{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}"#,
            Some(BodyVerdict::Penalty),
        ),
        (
            429,
            r#"{"message":"You have exceeded a Secondary Rate Limit."}"#,
            Some(BodyVerdict::Penalty),
        ),
        (
            403,
            r#"{"message":"API rate limit exceeded for 203.0.113.7.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}"#,
            None,
        ),
        (
            500,
            r#"{"message":"You have exceeded a secondary rate limit."}"#,
            None,
        ),
        (
            429,
            r#"{"error":{"code":"lock_timeout","type":"invalid_request_error"}}"#,
            Some(BodyVerdict::Contention {
                code: "lock_timeout".into(),
            }),
        ),
        (403, r#"{"error":{"code":"lock_timeout"}}"#, None),
        (
            429,
            r#"{"error":{"type":"insufficient_quota"}}"#,
            Some(BodyVerdict::QuotaExhausted {
                code: "insufficient_quota".into(),
            }),
        ),
        (429, "not json", None),
    ];
    for (status, body, expected) in table {
        let status = StatusCode::from_u16(status).unwrap();
        assert_eq!(
            builtin_body_verdict(status, body.as_bytes()),
            expected,
            "{status} {body}"
        );
    }
}

#[test]
fn refusal_classes_from_discord_s_and_stripe_s_headers() {
    let table = [
        (vec![], RefusalClass::Rate),
        (vec![("x-ratelimit-global", "true")], RefusalClass::Global),
        (vec![("x-ratelimit-global", "True ")], RefusalClass::Global),
        (vec![("x-ratelimit-global", "false")], RefusalClass::Rate),
        (vec![("x-ratelimit-scope", "global")], RefusalClass::Global),
        (vec![("x-ratelimit-scope", "shared")], RefusalClass::Shared),
        (vec![("x-ratelimit-scope", "user")], RefusalClass::Rate),
        (
            vec![("stripe-rate-limited-reason", "global-concurrency")],
            RefusalClass::Contention,
        ),
        (
            vec![("stripe-rate-limited-reason", "endpoint-concurrency")],
            RefusalClass::Contention,
        ),
        (
            vec![("stripe-rate-limited-reason", "resource-specific")],
            RefusalClass::Contention,
        ),
        (
            vec![("stripe-rate-limited-reason", "global-rate")],
            RefusalClass::Rate,
        ),
        (
            vec![("stripe-rate-limited-reason", "endpoint-rate")],
            RefusalClass::Rate,
        ),
    ];
    for (fields, expected) in table {
        let mut h = HeaderMap::new();
        for (k, v) in &fields {
            h.insert(*k, v.parse().unwrap());
        }
        assert_eq!(refusal_from_headers(&h), expected, "{fields:?}");
    }
    assert!(RefusalClass::Penalty.cuts() && RefusalClass::Global.cuts());
    assert!(!RefusalClass::Contention.cuts() && !RefusalClass::Shared.cuts());
}

#[test]
fn json_content_types() {
    let table = [
        ("application/json", true),
        ("application/json; charset=utf-8", true),
        ("Application/JSON", true),
        ("application/problem+json", true),
        ("text/plain", false),
        ("text/html; charset=utf-8", false),
        ("application/jsonp", false),
        ("+json", false),
    ];
    for (value, json) in table {
        assert_eq!(is_json(&headers("content-type", value)), json, "{value}");
    }
    assert!(!is_json(&HeaderMap::new()));
}

#[test]
fn a_classifier_of_ones_own_keeps_the_built_in_body_rule() {
    #[derive(Debug)]
    struct Plain;
    impl ThrottleClassifier for Plain {
        fn classify(&self, _: StatusCode, _: &HeaderMap, _: &RateLimitInfo) -> Signal {
            Signal::Neutral
        }
    }
    let body = br#"{"error":{"type":"insufficient_quota"}}"#;
    assert!(matches!(
        Plain.classify_body(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), body),
        Some(BodyVerdict::QuotaExhausted { .. })
    ));
}

#[test]
fn statuses_can_be_changed() {
    let c = DefaultClassifier::default()
        .throttled([
            StatusCode::TOO_MANY_REQUESTS,
            StatusCode::from_u16(420).unwrap(),
        ])
        .throttled_with_retry_after([])
        .throttled_when_exhausted([]);
    let info = RateLimitInfo::new();
    let h = HeaderMap::new();
    assert_eq!(
        c.classify(StatusCode::from_u16(420).unwrap(), &h, &info),
        Signal::Throttled { retry_after: None }
    );
    assert_eq!(
        c.statuses().throttled_with_retry_after,
        &[] as &[StatusCode]
    );
}

#[test]
fn an_api_whose_503_means_maintenance_keeps_a_bare_503_neutral() {
    let c = DefaultClassifier::default().overloaded([]);
    let info = |h: &HeaderMap| RateLimitInfo::from_headers(h, SystemTime::UNIX_EPOCH);
    let bare = HeaderMap::new();
    assert_eq!(
        c.classify(StatusCode::SERVICE_UNAVAILABLE, &bare, &info(&bare)),
        Signal::Neutral
    );
    // A Retry-After still makes it a throttle (ThrottledWithRetryAfter).
    let h = headers("retry-after", "5");
    assert_eq!(
        c.classify(StatusCode::SERVICE_UNAVAILABLE, &h, &info(&h)),
        Signal::Throttled {
            retry_after: Some(Duration::from_secs(5))
        }
    );
}

#[test]
fn grpc_statuses_can_be_turned_off() {
    let c = DefaultClassifier::default().grpc_throttled([]);
    let h = headers("grpc-status", "8");
    assert_eq!(
        c.classify(StatusCode::OK, &h, &RateLimitInfo::new()),
        Signal::Success
    );
}

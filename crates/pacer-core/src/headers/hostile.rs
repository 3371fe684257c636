//! Hostile input: arbitrary bytes and structured-field-like garbage must never make the parser
//! panic, and what it returns must respect its documented bounds.

use std::cmp::Ordering;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;

use super::bounds::{MAX_RESET_AFTER, MAX_RETRY_AFTER, MAX_WINDOW};
use super::restrictive::compare;
use crate::{
    DeclaredDialect, FieldGrammar, Percentage, RateLimitInfo, ServerStopPolicy,
    ThrottlingAlgorithm, ThrottlingContext, TimeUnit,
};

/// Every header name a dialect reads, plus neighbours that must be ignored.
pub(super) const NAMES: &[&str] = &[
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "retry-after",
    "retry-after-ms",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-used",
    "x-ratelimit-resource",
    "x-ratelimit-reset-after",
    "x-ratelimit-bucket",
    "x-rate-limit-reset",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
    "x-ratelimit-remaining-minute",
    "x-ratelimit-requests-limit",
    "x-ratelimit-complexity-reset",
    "x-ratelimit-userlimit",
    "x-ratelimit-clientremaining",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-tokens-remaining",
    "x-shopify-shop-api-call-limit",
    "x-rate-limit",
    "x-ms-retry-after-ms",
    "grpc-retry-pushback-ms",
    "x-hubspot-ratelimit-max",
    "x-hubspot-ratelimit-remaining",
    "x-hubspot-ratelimit-interval-milliseconds",
    "x-hubspot-ratelimit-daily-remaining",
    "sforce-limit-info",
    "zendesk-ratelimit-tickets-index",
    "x-ratelimit-",
    "anthropic-ratelimit--",
];

/// Text drawn from `alphabet`, up to `max` bytes: cheaper to generate than a regex.
fn text(alphabet: &'static [u8], max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(proptest::sample::select(alphabet), 0..max)
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Raw bytes (HeaderValue rejects control characters; the rest, obs-text included, stay).
        proptest::collection::vec(any::<u8>(), 0..24),
        // Structured-field-like text.
        text(b"\"abrtqwpku0123456789;=,:*. ?@()%+/-", 32),
        // Numbers of every magnitude, with fractions and signs.
        text(b"0123456789.-+", 28),
        // Date-, duration- and RFC 3339-like text.
        text(b"0123456789 ,:.+-TZGMTSunNovmshu", 30),
    ]
}

fn header_map() -> impl Strategy<Value = HeaderMap> {
    proptest::collection::vec((0..NAMES.len(), value()), 0..6).prop_map(|fields| {
        let mut map = HeaderMap::new();
        for (i, bytes) in fields {
            if let Ok(v) = HeaderValue::from_bytes(&bytes) {
                map.append(HeaderName::from_static(NAMES[i]), v);
            }
        }
        map
    })
}

fn check(info: &RateLimitInfo) -> Result<(), TestCaseError> {
    prop_assert!(info.retry_after().is_none_or(|r| r <= MAX_RETRY_AFTER));
    for p in info.policies() {
        prop_assert!(p.reset_after().is_none_or(|r| r <= MAX_RESET_AFTER));
        prop_assert!(p.window().is_none_or(|w| w <= MAX_WINDOW));
        prop_assert!(
            p.remaining_fraction()
                .is_none_or(|f| (0.0..=1.0).contains(&f))
        );
    }
    for pair in info.policies().windows(2) {
        prop_assert_ne!(compare(&pair[0], &pair[1]), Ordering::Greater);
    }
    prop_assert_eq!(
        info.remaining(),
        info.policies().first().and_then(|p| p.remaining())
    );
    prop_assert_eq!(
        info.is_valid(),
        info.policies()
            .iter()
            .any(|p| p.limit().is_some() || p.remaining().is_some())
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100_000))]

    #[test]
    fn parsing_is_total_and_bounded(map in header_map(), now_s in 0u64..4_102_444_800, aged_ms in 0u64..100_000_000) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(now_s);
        let info = RateLimitInfo::from_headers(&map, now);
        check(&info)?;
        let elapsed = Duration::from_millis(aged_ms);
        let later = info.aged(elapsed);
        check(&later)?;
        prop_assert_eq!(info.is_spent_after(elapsed), later.is_empty());
        if let Some(stop) = ServerStopPolicy::default().evaluate(&later) {
            prop_assert!(!stop.delay().is_zero());
        }
        let decision = Percentage::default().evaluate(&ThrottlingContext::new(&later, "k"));
        prop_assert!(decision.delay() <= Percentage::DEFAULT_MAX_DELAY);
    }
}

/// Declared dialects of every shape, reading every unit, and the names they read.
fn declared() -> (Vec<DeclaredDialect>, Vec<&'static str>) {
    let mut all = Vec::new();
    for (i, unit) in TimeUnit::ALL.into_iter().enumerate() {
        let window = [
            TimeUnit::Seconds,
            TimeUnit::Milliseconds,
            TimeUnit::GoDuration,
        ][i % 3];
        all.push(
            DeclaredDialect::builder(format!("d{i}"))
                .limit("d-limit")
                .remaining("d-remaining")
                .used("d-used")
                .reset("d-reset")
                .reset_unit(unit)
                .retry_after("d-wait")
                .retry_after_unit(unit)
                .window_header("d-window")
                .window_unit(window)
                .build()
                .expect("valid"),
        );
        all.push(
            DeclaredDialect::builder(format!("f{i}"))
                .field(if i % 2 == 0 { "d-field" } else { "d-field-*" })
                .separator(if i % 2 == 0 { ';' } else { ',' })
                .reset_unit(unit)
                .build()
                .expect("valid"),
        );
    }
    all.push(
        DeclaredDialect::builder("u")
            .field("d-pair*")
            .grammar(FieldGrammar::UsedOfLimit)
            .window(Duration::from_secs(60))
            .build()
            .expect("valid"),
    );
    let names = vec![
        "d-limit",
        "d-remaining",
        "d-used",
        "d-reset",
        "d-wait",
        "d-window",
        "d-field",
        "d-field-a",
        "d-field-b",
        "d-pair",
        "d-pairs",
        "x-ratelimit-remaining",
        "retry-after",
    ];
    (all, names)
}

fn declared_map() -> impl Strategy<Value = HeaderMap> {
    let (_, names) = declared();
    let value = prop_oneof![
        3 => value(),
        // The grammars' own shapes, with numbers of every size.
        2 => text(b"limit=remaining;reset,used0123456789/ ()-.", 40),
    ];
    proptest::collection::vec((proptest::sample::select(names), value), 0..8).prop_map(|fields| {
        let mut map = HeaderMap::new();
        for (name, bytes) in fields {
            if let Ok(v) = HeaderValue::from_bytes(&bytes) {
                map.append(HeaderName::from_static(name), v);
            }
        }
        map
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// A declared dialect never panics on arbitrary header bytes, and what it reads keeps the
    /// bounds of the built-in dialects.
    #[test]
    fn declared_dialects_are_total_and_bounded(
        map in declared_map(),
        now_s in 0u64..4_102_444_800,
        aged_ms in 0u64..100_000_000,
    ) {
        let (dialects, _) = declared();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(now_s);
        let builtin = RateLimitInfo::from_headers(&map, now);
        let info = super::apply_declared(&dialects, &map, &mut || now, builtin);
        check(&info)?;
        let later = info.aged(Duration::from_millis(aged_ms));
        check(&later)?;
        if let Some(stop) = ServerStopPolicy::default().evaluate(&later) {
            prop_assert!(!stop.delay().is_zero());
        }
    }
}

#[test]
fn absurd_sizes_are_malformed_and_parse_in_bounded_time() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let long = "9".repeat(8 * 1024);
    let long_list = vec!["5"; 2000].join(",");
    for name in NAMES {
        for value in [long.as_str(), long_list.as_str()] {
            let mut map = HeaderMap::new();
            map.insert(*name, HeaderValue::from_str(value).unwrap());
            let info = RateLimitInfo::from_headers(&map, now);
            check(&info).unwrap();
            assert!(info.policies().iter().all(|p| !p.has_numbers()), "{name}");
            assert_eq!(info.retry_after(), None, "{name}");
        }
        let mut map = HeaderMap::new();
        for _ in 0..200 {
            map.append(*name, HeaderValue::from_static("5"));
        }
        let info = RateLimitInfo::from_headers(&map, now);
        check(&info).unwrap();
        assert!(info.policies().iter().all(|p| !p.has_numbers()), "{name}");
    }
    // The limit and remaining fields, too long: reported, unsound.
    let mut map = HeaderMap::new();
    map.insert("x-ratelimit-limit", HeaderValue::from_static("100"));
    for _ in 0..200 {
        map.append("x-ratelimit-remaining", HeaderValue::from_static("5"));
    }
    let info = RateLimitInfo::from_headers(&map, now);
    assert_eq!((info.limit(), info.remaining()), (Some(100), None));
    assert!(!info.is_sound());
    // 64 lines are still read.
    let mut map = HeaderMap::new();
    for _ in 0..64 {
        map.append("x-ratelimit-remaining", HeaderValue::from_static("5"));
    }
    assert_eq!(RateLimitInfo::from_headers(&map, now).remaining(), Some(5));
}

#[test]
fn many_named_policies_are_capped() {
    let names: Vec<HeaderName> = (0..200)
        .map(|i| HeaderName::try_from(format!("x-ratelimit-remaining-p{i}")).unwrap())
        .collect();
    let mut map = HeaderMap::new();
    for name in names {
        map.insert(name, HeaderValue::from_static("5"));
    }
    let info = RateLimitInfo::from_headers(&map, SystemTime::UNIX_EPOCH);
    assert_eq!(info.policies().len(), 64);
}

#[test]
fn fixed_hostile_values() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let cases: &[(&str, &[u8])] = &[
        ("retry-after", b"1000000000000000"),
        ("retry-after", b"-5"),
        ("retry-after", b"Fri, 31 Dec 9999 23:59:59 GMT"),
        ("retry-after", b"Sat, 01 Jan 0000 00:00:00 GMT"),
        ("retry-after-ms", b"1e400"),
        ("x-ratelimit-reset", b"32503680000"),
        ("x-ratelimit-reset", b"99999999999999999999999999999999"),
        ("x-ratelimit-reset", b"9999-12-31T23:59:59Z"),
        (
            "x-ratelimit-reset-tokens",
            b"99999999999999999999h99999999999m",
        ),
        ("ratelimit", b"\"a\";r=999999999999999;t=999999999999999"),
        ("ratelimit-policy", b"\"a\";q=0;w=999999999999999"),
        ("x-ratelimit-limit", b"18446744073709551616"),
        ("x-ratelimit-remaining", b"\xff\xfe"),
        ("x-shopify-shop-api-call-limit", b"18446744073709551615/1"),
        ("x-ms-retry-after-ms", b"99999999999999999999999999"),
        (
            "x-hubspot-ratelimit-interval-milliseconds",
            b"18446744073709551615",
        ),
        ("sforce-limit-info", b"api-usage=18446744073709551615/0"),
        (
            "zendesk-ratelimit-a",
            b"total=0; remaining=99999999999999999999; resets=1e400",
        ),
    ];
    for (name, v) in cases {
        let mut map = HeaderMap::new();
        map.insert(*name, HeaderValue::from_bytes(v).unwrap());
        map.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        let info = RateLimitInfo::from_headers(&map, now);
        check(&info).unwrap();
        assert!(
            info.retry_after().is_none_or(|r| r <= MAX_RETRY_AFTER),
            "{name}"
        );
    }
}

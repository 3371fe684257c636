use super::*;
use crate::QuotaUnit;
use http::HeaderValue;

const NOW: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
}

fn map(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut m = HeaderMap::new();
    for (k, v) in pairs {
        m.append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    m
}

/// The built-in reading and `dialects`', as the engine does it.
fn read(dialects: &[DeclaredDialect], pairs: &[(&str, &str)]) -> RateLimitInfo {
    let m = map(pairs);
    apply(
        dialects,
        &m,
        &mut now,
        RateLimitInfo::from_headers(&m, now()),
    )
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn declared(name: &'static str) -> Policy {
    Policy::new(Dialect::Declared).with_name(name)
}

fn freshdesk() -> DeclaredDialect {
    DeclaredDialect::builder("freshdesk")
        .limit("X-Ratelimit-Total")
        .remaining("X-Ratelimit-Remaining")
        .window(secs(60))
        .build()
        .unwrap()
}

fn trello(kind: &str) -> DeclaredDialect {
    DeclaredDialect::builder(format!("trello-{kind}"))
        .limit(format!("x-rate-limit-api-{kind}-max"))
        .remaining(format!("x-rate-limit-api-{kind}-remaining"))
        .window_header(format!("x-rate-limit-api-{kind}-interval-ms"))
        .window_unit(TimeUnit::Milliseconds)
        .build()
        .unwrap()
}

/// Freshdesk's and Trello's documented fields, which the built-in readers read only in part
/// (the remaining, as a policy without a limit or a window).
#[test]
fn freshdesk_and_trello_as_declared() {
    let fields = [
        ("X-Ratelimit-Total", "700"),
        ("X-Ratelimit-Remaining", "699"),
        ("X-Ratelimit-Used-CurrentRequest", "1"),
    ];
    let builtin = RateLimitInfo::from_headers(&map(&fields), now());
    assert_eq!(
        builtin.policies(),
        [Policy::new(Dialect::XRateLimit).with_remaining(699)]
    );
    assert_eq!(
        read(&[freshdesk()], &fields).policies(),
        [declared("freshdesk")
            .with_limit(700)
            .with_remaining(699)
            .with_window(secs(60))]
    );
    let fields = [
        ("x-rate-limit-api-token-interval-ms", "10000"),
        ("x-rate-limit-api-token-max", "100"),
        ("x-rate-limit-api-token-remaining", "99"),
        ("x-rate-limit-api-key-interval-ms", "10000"),
        ("x-rate-limit-api-key-max", "300"),
        ("x-rate-limit-api-key-remaining", "299"),
    ];
    let builtin = RateLimitInfo::from_headers(&map(&fields), now());
    assert_eq!(builtin.policies().len(), 2);
    assert!(builtin.policies().iter().all(|p| p.limit().is_none()));
    assert_eq!(
        read(&[trello("token"), trello("key")], &fields).policies(),
        [
            declared("trello-token")
                .with_limit(100)
                .with_remaining(99)
                .with_window(secs(10)),
            declared("trello-key")
                .with_limit(300)
                .with_remaining(299)
                .with_window(secs(10)),
        ]
    );
}

#[test]
fn every_reset_unit() {
    let at = |s: u64| NOW + s;
    let cases: Vec<(TimeUnit, String, Option<Duration>)> = vec![
        (TimeUnit::Auto, "30".into(), Some(secs(30))),
        (TimeUnit::Auto, at(90).to_string(), Some(secs(90))),
        (
            TimeUnit::Seconds,
            "1.5".into(),
            Some(Duration::from_millis(1500)),
        ),
        // A large delta in seconds stays seconds (Auto would read it as milliseconds).
        (TimeUnit::Seconds, "600000".into(), Some(secs(600_000))),
        (TimeUnit::Milliseconds, "2000".into(), Some(secs(2))),
        (TimeUnit::EpochSeconds, at(60).to_string(), Some(secs(60))),
        (
            TimeUnit::EpochSeconds,
            "1655120964".into(),
            Some(Duration::ZERO),
        ),
        (
            TimeUnit::EpochMilliseconds,
            (at(5) * 1000).to_string(),
            Some(secs(5)),
        ),
        (
            TimeUnit::HttpDate,
            "Thu, 01 Jan 2026 00:00:10 GMT".into(),
            Some(secs(10)),
        ),
        (
            TimeUnit::Rfc3339,
            "2026-01-01T00:01:00Z".into(),
            Some(secs(60)),
        ),
        (
            TimeUnit::Rfc3339,
            "2026-01-01T00:01:00+00:00".into(),
            Some(secs(60)),
        ),
        (TimeUnit::GoDuration, "6m0s".into(), Some(secs(360))),
        (TimeUnit::GoDuration, "30".into(), None),
        (TimeUnit::EpochSeconds, "soon".into(), None),
        (TimeUnit::HttpDate, "30".into(), None),
    ];
    for (unit, value, want) in cases {
        let d = DeclaredDialect::builder("api")
            .remaining("x-left")
            .reset("x-back")
            .reset_unit(unit)
            .build()
            .unwrap();
        let got = read(&[d], &[("x-left", "3"), ("x-back", &value)]);
        assert_eq!(got.reset_after(), want, "{unit:?} {value}");
        assert_eq!(got.is_sound(), want.is_some(), "{unit:?} {value}");
        assert_eq!(got.remaining(), Some(3), "{unit:?} {value}");
    }
    // Beyond a year: the longest reset, unsound (fails closed).
    let d = DeclaredDialect::builder("api")
        .remaining("x-left")
        .reset("x-back")
        .reset_unit(TimeUnit::EpochSeconds)
        .build()
        .unwrap();
    let got = read(&[d], &[("x-left", "0"), ("x-back", "32503680000")]);
    assert_eq!(got.reset_after(), Some(RateLimitInfo::MAX_RESET_AFTER));
    assert!(!got.is_sound());
}

#[test]
fn one_field_in_either_grammar() {
    let zendesk = DeclaredDialect::builder("zendesk")
        .field("Foo-RateLimit-*")
        .limit_key("total")
        .reset_key("resets")
        .reset_unit(TimeUnit::Seconds)
        .build()
        .unwrap();
    let got = read(
        &[zendesk],
        &[
            (
                "foo-ratelimit-tickets-index",
                "total=100; remaining=99; resets=59",
            ),
            ("foo-ratelimit-search", "total=10; remaining=1; resets=5"),
            ("foo-ratelimit-", "total=1; remaining=0"),
        ],
    );
    assert_eq!(
        got.policies(),
        [
            declared("search")
                .with_limit(10)
                .with_remaining(1)
                .with_reset_after(secs(5)),
            declared("tickets-index")
                .with_limit(100)
                .with_remaining(99)
                .with_reset_after(secs(59)),
        ]
    );
    let commas = DeclaredDialect::builder("quota")
        .field("X-Quota")
        .separator(',')
        .used_key("spent")
        .unit(QuotaUnit::Tokens)
        .window(secs(60))
        .build()
        .unwrap();
    let got = read(&[commas], &[("x-quota", "limit=1000, spent=400")]);
    assert_eq!(
        got.policies(),
        [declared("quota")
            .with_unit(QuotaUnit::Tokens)
            .with_limit(1000)
            .with_remaining(600)
            .with_window(secs(60))]
    );
    let salesforce = DeclaredDialect::builder("usage")
        .field("X-Usage")
        .grammar(FieldGrammar::UsedOfLimit)
        .window(secs(86_400))
        .build()
        .unwrap();
    let day = secs(86_400);
    let got = read(
        std::slice::from_ref(&salesforce),
        &[(
            "x-usage",
            "api-usage=25/5000; per-app-api-usage=17/250(appName=x)",
        )],
    );
    assert_eq!(
        got.policies(),
        [
            declared("per-app-api-usage")
                .with_limit(250)
                .with_remaining(233)
                .with_window(day),
            declared("api-usage")
                .with_limit(5000)
                .with_remaining(4975)
                .with_window(day),
        ]
    );
    let got = read(std::slice::from_ref(&salesforce), &[("x-usage", "32/40")]);
    assert_eq!(
        got.policies(),
        [declared("usage")
            .with_limit(40)
            .with_remaining(8)
            .with_window(day)]
    );
    let got = read(&[salesforce], &[("x-usage", "lots")]);
    assert!(!got.is_sound() && !got.is_valid() && !got.is_empty());
}

#[test]
fn the_retry_wait_fills_in_for_a_missing_retry_after() {
    let wait = |unit| {
        DeclaredDialect::builder("api")
            .retry_after("x-wait")
            .retry_after_unit(unit)
            .build()
            .unwrap()
    };
    let ms = Duration::from_millis;
    type Case = (
        TimeUnit,
        Vec<(&'static str, &'static str)>,
        Option<Duration>,
    );
    let cases: Vec<Case> = vec![
        (
            TimeUnit::Milliseconds,
            vec![("x-wait", "2500")],
            Some(ms(2500)),
        ),
        (TimeUnit::Auto, vec![("x-wait", "3")], Some(secs(3))),
        (
            TimeUnit::Auto,
            vec![("x-wait", "Thu, 01 Jan 2026 00:00:07 GMT")],
            Some(secs(7)),
        ),
        (
            TimeUnit::GoDuration,
            vec![("x-wait", "1m30s")],
            Some(secs(90)),
        ),
        // The server's own Retry-After wins.
        (
            TimeUnit::Milliseconds,
            vec![("x-wait", "2500"), ("retry-after", "9")],
            Some(secs(9)),
        ),
        // Bounded as Retry-After is.
        (
            TimeUnit::Seconds,
            vec![("x-wait", "99999999999")],
            Some(RateLimitInfo::MAX_RETRY_AFTER),
        ),
        (TimeUnit::Seconds, vec![("x-wait", "-1")], None),
        (
            TimeUnit::Seconds,
            vec![("x-wait", "1"), ("x-wait", "2")],
            None,
        ),
    ];
    for (unit, fields, want) in cases {
        let got = read(&[wait(unit)], &fields);
        assert_eq!(got.retry_after(), want, "{unit:?} {fields:?}");
        assert!(got.policies().is_empty());
    }
}

#[test]
fn what_cannot_be_read_is_unsound_and_what_is_absent_costs_nothing() {
    let d = DeclaredDialect::builder("api")
        .limit("x-cap")
        .remaining("x-left")
        .used("x-spent")
        .window_header("x-span")
        .build()
        .unwrap();
    type Case = (
        Vec<(&'static str, &'static str)>,
        Option<u64>,
        Option<u64>,
        Option<Duration>,
        bool,
    );
    let cases: Vec<Case> = vec![
        (
            vec![("x-cap", "10"), ("x-left", "4"), ("x-span", "60")],
            Some(10),
            Some(4),
            Some(secs(60)),
            true,
        ),
        (
            vec![("x-cap", "10"), ("x-spent", "3")],
            Some(10),
            Some(7),
            None,
            true,
        ),
        (
            vec![("x-left", "4"), ("x-spent", "6")],
            Some(10),
            Some(4),
            None,
            true,
        ),
        (
            vec![("x-cap", "10"), ("x-spent", "13")],
            Some(10),
            Some(0),
            None,
            false,
        ),
        (
            vec![("x-cap", "lots"), ("x-left", "4")],
            None,
            Some(4),
            None,
            false,
        ),
        (
            vec![("x-cap", "10"), ("x-left", "4"), ("x-span", "0")],
            Some(10),
            Some(4),
            None,
            false,
        ),
        (
            vec![("x-cap", "10"), ("x-left", "4"), ("x-span", "9999999999")],
            Some(10),
            Some(4),
            Some(RateLimitInfo::MAX_RESET_AFTER),
            false,
        ),
        (
            vec![("x-cap", "0"), ("x-left", "0")],
            Some(0),
            Some(0),
            None,
            false,
        ),
        (
            vec![("x-cap", "10"), ("x-left", "4"), ("x-spent", "x")],
            Some(10),
            Some(4),
            None,
            false,
        ),
    ];
    for (fields, limit, remaining, window, sound) in cases {
        let got = read(std::slice::from_ref(&d), &fields);
        assert_eq!(got.policies().len(), 1, "{fields:?}");
        let p = &got.policies()[0];
        assert_eq!(
            (p.limit(), p.remaining(), p.window(), p.is_sound()),
            (limit, remaining, window, sound),
            "{fields:?}"
        );
    }
    // Only a window, or only a count used: no policy.
    assert!(
        read(
            std::slice::from_ref(&d),
            &[("x-span", "60"), ("x-spent", "1")]
        )
        .is_empty()
    );
    // Nothing declared in the response: the built-in reading as it was, and no clock read.
    let m = map(&[("x-ratelimit-limit", "10"), ("x-ratelimit-remaining", "5")]);
    let builtin = RateLimitInfo::from_headers(&m, now());
    let mut clock = || -> SystemTime { panic!("the clock was read") };
    assert_eq!(
        apply(&[d, trello("token")], &m, &mut clock, builtin.clone()),
        builtin
    );
}

#[test]
fn a_built_in_policy_gives_way_only_when_it_says_less() {
    let d = DeclaredDialect::builder("api")
        .limit("x-cap")
        .remaining("x-ratelimit-remaining")
        .build()
        .unwrap();
    // The built-in X-RateLimit reading has a limit of its own here: both stay.
    let got = read(
        std::slice::from_ref(&d),
        &[
            ("x-ratelimit-limit", "50"),
            ("x-ratelimit-remaining", "5"),
            ("x-cap", "10"),
        ],
    );
    assert_eq!(got.policies().len(), 2);
    // A built-in policy of another remaining stays; of the same remaining, without a limit,
    // a reset or a window, it gives way.
    let got = read(
        std::slice::from_ref(&d),
        &[
            ("x-ratelimit-remaining", "5"),
            ("x-cap", "10"),
            ("ratelimit-remaining", "7"),
        ],
    );
    assert_eq!(got.policies().len(), 2, "{got:?}");
    let got = read(
        &[d],
        &[
            ("x-ratelimit-remaining", "5"),
            ("x-cap", "10"),
            ("ratelimit-remaining", "5"),
        ],
    );
    assert_eq!(got.policies().len(), 1, "{got:?}");
    assert_eq!(got.policies()[0].dialect(), Dialect::Declared);
}

//! Before the send: the wait, the fast path that goes without it, and the look at the server's
//! state that both take.

use super::*;
use crate::WindowLimit;

/// Responses as a test writes them: a status and its fields.
pub(crate) type Responses<'a> = &'a [(u16, &'a [(&'static str, &'a str)])];

/// An engine and its endpoint `a` on `clock`, whose limiter starts at 600 units a minute (a
/// bucket of 10), having read `responses` at the time 0.
pub(crate) fn paced_endpoint(
    clock: &crate::ManualClock,
    responses: Responses<'_>,
) -> (Engine, Arc<Endpoint>) {
    let engine = Engine::new(100, secs(3600));
    let options = LimiterOptions {
        initial_units_per_minute: Some(600.0),
        ..LimiterOptions::default()
    };
    let clock = Arc::new(clock.clone());
    let endpoint = engine.endpoint(
        "a",
        Timestamp::ZERO,
        || {
            Limiter::builder(options.clone())
                .clock(clock)
                .build()
                .unwrap()
        },
        |_| {},
    );
    for (status, fields) in responses {
        let _ = engine.after(&endpoint, read(*status, fields), 0, at(0), at(0));
    }
    (engine, endpoint)
}

pub(crate) fn units_left(endpoint: &Endpoint) -> f64 {
    endpoint.limiter().snapshot().available_units
}

#[test]
fn the_fast_path_takes_the_units_only_while_nothing_holds_the_request() {
    let clock = crate::ManualClock::new();
    let (engine, endpoint) = paced_endpoint(&clock, &[]);
    let rules = Rules::default();
    let go = |units: u64, windows: &[(&WindowLimit, String)], tokens: Option<u64>, now| {
        let attempt = Attempt::new(units, now, secs(30))
            .windows(windows)
            .tokens(tokens);
        let mut tokens_attempt = 0;
        let went = engine.go_now(&rules, &endpoint, &attempt, &mut tokens_attempt);
        (went, tokens_attempt)
    };
    assert_eq!(go(4, &[], None, at(0)).0, Some(at(0)));
    let window = WindowLimit::new(
        "w",
        10,
        secs(1),
        crate::MemoryWindowStore::new(clock.clone()),
    )
    .unwrap();
    let windows = [(&window, "k".to_owned())];
    assert_eq!(
        go(4, &windows, None, at(0)).0,
        None,
        "a strict window needs the wait"
    );
    assert_eq!(go(4, &[], None, at(0)).0, Some(at(0)));
    assert_eq!(
        go(4, &[], None, at(0)).0,
        None,
        "2 units left: the wait estimates the rest"
    );
    assert!(
        (units_left(&endpoint) - 2.0).abs() < 1e-9,
        "taken only when going"
    );

    // Once responses carry rate-limit fields, the server's state is looked at too.
    let plenty: &[(&'static str, &str)] = &[
        ("ratelimit-policy", "\"d\";q=100;w=60"),
        ("ratelimit", "\"d\";r=90;t=30"),
    ];
    let (engine, endpoint) = paced_endpoint(&clock, &[(200, plenty)]);
    let go = |units: u64, tokens: Option<u64>, now| {
        let attempt = Attempt::new(units, now, secs(30)).tokens(tokens);
        let mut tokens_attempt = 0;
        let went = engine.go_now(&rules, &endpoint, &attempt, &mut tokens_attempt);
        (went, tokens_attempt)
    };
    assert_eq!(go(1, None, at(2)).0, Some(at(2)));
    assert_eq!(
        endpoint.snapshot(at(3)).unwrap().since_last_request(),
        Some(secs(1)),
        "the send is recorded, as the wait records it"
    );

    // A server-ordered stop holds it, and nothing is taken.
    let (engine, endpoint) = paced_endpoint(&clock, &[(429, &[("retry-after", "7")])]);
    let before = units_left(&endpoint);
    assert!(before >= 1.0, "the limiter has the units: {before}");
    let attempt = Attempt::new(1, at(2), secs(30));
    assert_eq!(engine.go_now(&rules, &endpoint, &attempt, &mut 0), None);
    assert!((units_left(&endpoint) - before).abs() < 1e-9);
    let attempt = Attempt::new(1, at(7), secs(30));
    assert_eq!(
        engine.go_now(&rules, &endpoint, &attempt, &mut 0),
        Some(at(7)),
        "the stop is over"
    );

    // So does the proactive delay of a quota nearly spent.
    let low: &[(&'static str, &str)] = &[
        ("x-ratelimit-limit", "100"),
        ("x-ratelimit-remaining", "5"),
        ("x-ratelimit-reset", "30"),
    ];
    let (engine, endpoint) = paced_endpoint(&clock, &[(200, low)]);
    let before = units_left(&endpoint);
    assert!(before >= 1.0, "the limiter has the units: {before}");
    let attempt = Attempt::new(1, at(0), secs(30));
    assert_eq!(engine.go_now(&rules, &endpoint, &attempt, &mut 0), None);
    assert!((units_left(&endpoint) - before).abs() < 1e-9);

    // A budget in tokens: the tokens are taken with the units, or neither is.
    let tokens: &[(&'static str, &str)] = &[
        ("x-ratelimit-limit-tokens", "1000"),
        ("x-ratelimit-remaining-tokens", "100"),
        ("x-ratelimit-reset-tokens", "60s"),
    ];
    let (engine, endpoint) = paced_endpoint(&clock, &[(200, tokens)]);
    let go = |tokens: Option<u64>| {
        let attempt = Attempt::new(1, at(0), secs(30)).tokens(tokens);
        let mut tokens_attempt = 0;
        let went = engine.go_now(&rules, &endpoint, &attempt, &mut tokens_attempt);
        (went, tokens_attempt)
    };
    let (went, number) = go(Some(80));
    assert_eq!(went, Some(at(0)));
    assert_ne!(number, 0, "its tokens are in flight");
    assert!((units_left(&endpoint) - 9.0).abs() < 1e-9);
    assert_eq!(go(Some(80)), (None, 0), "80 of the 100 are taken");
    assert!(
        (units_left(&endpoint) - 9.0).abs() < 1e-9,
        "the units taken for it are given back"
    );
    engine.landed(&endpoint, number);
}

/// The engine's look before a send skips the aged copy of a state that holds nothing back at any
/// age; what it gives is what the full look gives, at every age of every kind of state.
#[test]
fn the_hold_without_the_aged_copy_is_the_full_hold() {
    let states: [(u16, &[(&'static str, &str)]); 7] = [
        (
            200,
            &[
                ("ratelimit-policy", "\"d\";q=100;w=60"),
                ("ratelimit", "\"d\";r=90;t=30"),
            ],
        ),
        (
            200,
            &[
                ("x-ratelimit-limit", "100"),
                ("x-ratelimit-remaining", "5"),
                ("x-ratelimit-reset", "30"),
            ],
        ),
        (
            429,
            &[
                ("x-ratelimit-limit", "100"),
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "30"),
            ],
        ),
        (429, &[("retry-after", "7")]),
        (200, &[("x-ratelimit-remaining", "3")]),
        (
            200,
            &[
                ("x-ratelimit-limit-tokens", "1000"),
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", "20s"),
                ("x-ratelimit-limit-requests", "100"),
                ("x-ratelimit-remaining-requests", "50"),
                ("x-ratelimit-reset-requests", "40s"),
            ],
        ),
        (
            200,
            &[
                ("ratelimit-policy", "\"a\";q=100;w=60, \"b\";q=10;w=5"),
                ("ratelimit", "\"a\";r=50;t=40, \"b\";r=0;t=4"),
            ],
        ),
    ];
    let none = Rules::default().with_algorithm(None);
    for (status, fields) in states {
        let (engine, endpoint) = engine_and_endpoint("a");
        let _ = engine.after(&endpoint, read(status, fields), 1, at(0), at(0));
        for rules in [Rules::default(), none.clone()] {
            for t in [0, 1, 4, 5, 7, 29, 31, 41, 61] {
                for stop_only in [false, true] {
                    let full =
                        endpoint
                            .server
                            .lock()
                            .hold(&rules, "a", at(t), MAX_RETRY_AFTER, stop_only);
                    let hold = engine.hold(&rules, &endpoint, at(t), MAX_RETRY_AFTER, stop_only);
                    assert_eq!(
                        hold, full,
                        "{status} {fields:?} at {t} s, stop only {stop_only}"
                    );
                }
            }
        }
    }
}

use super::*;
use crate::{Clock, Global, LimiterOptions, RateChange, RateChangeReason};
use http::{HeaderMap, StatusCode};
use std::time::SystemTime;

mod before_send;
mod concurrency;
mod exchange;
mod machine;
pub(crate) use before_send::{Responses, paced_endpoint, units_left};
pub(crate) use concurrency::{capped, in_flight};
mod refusals;

pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

pub(crate) fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub(crate) fn at(s: u64) -> Timestamp {
    Timestamp::from_duration(secs(s))
}

fn headers(fields: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in fields {
        map.insert(*name, value.parse().unwrap());
    }
    map
}

pub(crate) fn read(status: u16, fields: &[(&'static str, &str)]) -> Reading {
    Rules::default().read(
        StatusCode::from_u16(status).unwrap(),
        &headers(fields),
        None,
        SystemTime::UNIX_EPOCH + secs(1_700_000_000),
        MAX_RETRY_AFTER,
    )
}

pub(crate) fn engine_and_endpoint(key: &str) -> (Engine, Arc<Endpoint>) {
    let engine = Engine::new(100, secs(3600));
    let endpoint = engine.endpoint(
        key,
        Timestamp::ZERO,
        || Limiter::new(LimiterOptions::default()).unwrap(),
        |_| {},
    );
    (engine, endpoint)
}

#[test]
fn a_retry_after_stops_only_when_the_response_is_a_throttle() {
    let throttle = read(429, &[("retry-after", "7")]);
    assert_eq!(
        throttle.signal(),
        Signal::Throttled {
            retry_after: Some(secs(7))
        }
    );
    assert_eq!(throttle.info().retry_after(), Some(secs(7)));
    let success = read(200, &[("retry-after", "7")]);
    assert_eq!(success.signal(), Signal::Success);
    assert_eq!(
        success.info().retry_after(),
        None,
        "a hint on a success is advice, not a stop"
    );
}

#[test]
fn a_retry_after_is_bounded_by_max_retry_after() {
    let reading = read(429, &[("retry-after", "86400")]);
    assert_eq!(reading.info().retry_after(), Some(MAX_RETRY_AFTER));
}

#[test]
fn the_body_and_x_should_retry_decide_whether_a_throttle_is_sent_again() {
    let (engine, endpoint) = engine_and_endpoint("a");
    let plain = read(429, &[]);
    assert!(
        engine
            .after(&endpoint, plain.clone(), 1, at(0), at(0))
            .retry
    );
    let refused = read(429, &[("x-should-retry", "false")]);
    assert!(refused.retry_refused());
    assert!(
        !engine
            .after(&endpoint, refused.clone(), 1, at(0), at(0))
            .retry
    );
    let rules = Rules::default();
    let out_of_credit = BodyVerdict::QuotaExhausted {
        code: "insufficient_quota".into(),
    };
    let exhausted = rules.read(
        StatusCode::TOO_MANY_REQUESTS,
        &HeaderMap::new(),
        Some(&out_of_credit),
        SystemTime::UNIX_EPOCH,
        MAX_RETRY_AFTER,
    );
    assert_eq!(exhausted.signal(), Signal::Neutral, "not a throttle");
    assert!(exhausted.quota_exhausted());
    assert!(
        !engine
            .after(&endpoint, exhausted.clone(), 1, at(0), at(0))
            .retry
    );
    let no_retry = rules.read(
        StatusCode::TOO_MANY_REQUESTS,
        &HeaderMap::new(),
        Some(&BodyVerdict::NoRetry),
        SystemTime::UNIX_EPOCH,
        MAX_RETRY_AFTER,
    );
    assert!(matches!(no_retry.signal(), Signal::Throttled { .. }));
    assert!(
        !engine
            .after(&endpoint, no_retry.clone(), 1, at(0), at(0))
            .retry
    );
    let success = read(200, &[]);
    assert!(
        !engine
            .after(&endpoint, success.clone(), 1, at(0), at(0))
            .retry
    );
}

#[test]
fn a_throttle_holds_the_next_request_until_its_retry_after_is_over() {
    let (engine, endpoint) = engine_and_endpoint("a");
    let rules = Rules::default();
    assert_eq!(
        engine.hold(&rules, &endpoint, at(0), MAX_RETRY_AFTER, false),
        Hold::NONE
    );
    let reading = read(429, &[("retry-after", "7")]);
    let _ = engine.after(&endpoint, reading.clone(), 1, at(0), at(0));
    assert!(engine.headers_seen());
    let hold = engine.hold(&rules, &endpoint, at(2), MAX_RETRY_AFTER, false);
    assert_eq!(
        hold,
        Hold {
            wait: secs(5),
            cause: WaitCause::ServerStop
        }
    );
    assert_eq!(
        engine.hold(&rules, &endpoint, at(2), secs(3), true).wait,
        secs(3),
        "capped by the max_retry_after of the hold"
    );
    assert_eq!(
        engine.hold(&rules, &endpoint, at(7), MAX_RETRY_AFTER, false),
        Hold::NONE
    );
}

#[test]
fn a_throttle_of_an_exhausted_quota_stops_until_its_reset_and_a_low_one_is_paced() {
    let (engine, endpoint) = engine_and_endpoint("a");
    let rules = Rules::default();
    let exhausted = read(
        429,
        &[
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "30"),
        ],
    );
    let _ = engine.after(&endpoint, exhausted.clone(), 1, at(0), at(0));
    let hold = engine.hold(&rules, &endpoint, at(10), MAX_RETRY_AFTER, false);
    assert_eq!(hold.cause, WaitCause::ServerStop);
    assert_eq!(hold.wait, secs(20));
    let low = read(
        200,
        &[
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "5"),
            ("x-ratelimit-reset", "30"),
        ],
    );
    let _ = engine.after(&endpoint, low.clone(), 1, at(40), at(40));
    let hold = engine.hold(&rules, &endpoint, at(40), MAX_RETRY_AFTER, false);
    assert_eq!(hold.cause, WaitCause::Throttling);
    assert!(!hold.wait.is_zero(), "5 % left: the percentage rule delays");
    assert_eq!(
        engine.hold(&rules, &endpoint, at(40), MAX_RETRY_AFTER, true),
        Hold {
            wait: Duration::ZERO,
            cause: WaitCause::ServerStop
        },
        "stop only: the proactive delay is asked later"
    );
    let none = Rules::default().with_algorithm(None);
    assert_eq!(
        engine.hold(&none, &endpoint, at(40), MAX_RETRY_AFTER, false),
        Hold::NONE
    );
}

#[test]
fn a_response_from_a_cache_leaves_the_server_state_alone() {
    let (engine, endpoint) = engine_and_endpoint("a");
    let cached = read(
        200,
        &[
            ("age", "30"),
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "30"),
        ],
    );
    assert!(cached.from_cache());
    let _ = engine.after(&endpoint, cached.clone(), 1, at(0), at(0));
    assert_eq!(endpoint.server_state(at(0)), None);
    assert!(!engine.headers_seen());
}

#[test]
fn an_age_is_read_whichever_fields_carry_the_state() {
    let draft11: [(&'static str, &str); 2] = [
        ("ratelimit-policy", "\"d\";q=100;w=60"),
        ("ratelimit", "\"d\";r=90;t=30"),
    ];
    let x: [(&'static str, &str); 2] = [
        ("x-ratelimit-limit", "100"),
        ("x-ratelimit-remaining", "90"),
    ];
    for fields in [&draft11[..], &x[..]] {
        for (age, cached) in [
            (None, false),
            (Some("30"), true),
            (Some("0"), false),
            (Some("soon"), false),
        ] {
            let mut all = fields.to_vec();
            all.extend(age.map(|a| ("age", a)));
            all.push(("content-type", "text/plain"));
            let reading = read(200, &all);
            assert!(reading.info().limit().is_some(), "{all:?}");
            assert_eq!(reading.from_cache(), cached, "{all:?}");
        }
    }
}

/// The wall clock is read only for a response whose fields may hold a date or an epoch reset.
#[test]
fn the_wall_clock_is_read_only_when_a_field_may_need_it() {
    let reads = std::cell::Cell::new(0);
    let wall = || {
        reads.set(reads.get() + 1);
        SystemTime::UNIX_EPOCH + secs(1_700_000_000)
    };
    let read = |fields: &[(&'static str, &str)]| {
        Rules::default().read(
            StatusCode::OK,
            &headers(fields),
            None,
            wall,
            MAX_RETRY_AFTER,
        )
    };
    let _ = read(&[("content-type", "text/plain")]);
    let draft11 = read(&[("ratelimit", "\"d\";r=5;t=30")]);
    assert_eq!(draft11.info().reset_after(), Some(secs(30)));
    assert_eq!(
        reads.get(),
        0,
        "no field, or draft-11's delta seconds: no date"
    );
    let epoch = read(&[
        ("x-ratelimit-remaining", "5"),
        ("x-ratelimit-reset", "1700000030"),
    ]);
    assert_eq!(reads.get(), 1);
    assert_eq!(
        epoch.info().reset_after(),
        Some(secs(30)),
        "resolved against the wall clock"
    );
}

#[test]
fn a_request_of_no_units_informs_the_state_but_moves_no_rate() {
    let (engine, endpoint) = engine_and_endpoint("a");
    let before = endpoint.limiter().snapshot();
    let throttle = read(429, &[("retry-after", "3")]);
    let after = engine.after(&endpoint, throttle.clone(), 0, at(0), at(0));
    assert_eq!(after.changes.rate, None);
    assert_eq!(endpoint.limiter().snapshot().rate, before.rate);
    assert_eq!(
        endpoint.server_state(at(1)).and_then(|i| i.retry_after()),
        Some(secs(2))
    );
    let after = engine.after(&endpoint, throttle.clone(), 1, at(0), at(0));
    assert!(after.changes.rate.is_some() || after.changes.paused_until.is_some());
}

#[test]
fn tokens_are_held_by_their_budget_and_a_cost_above_its_limit_is_refused() {
    let (engine, endpoint) = engine_and_endpoint("a");
    let reading = read(
        200,
        &[
            ("x-ratelimit-limit-tokens", "1000"),
            ("x-ratelimit-remaining-tokens", "100"),
            ("x-ratelimit-reset-tokens", "60s"),
        ],
    );
    let _ = engine.after(&endpoint, reading.clone(), 1, at(0), at(0));
    assert_eq!(
        engine.tokens_wait(&endpoint, Some(50.into()), at(0)),
        Ok(None)
    );
    let mut attempt = 0;
    assert_eq!(
        engine.tokens_take(&endpoint, Some(80.into()), at(0), &mut attempt, false),
        Ok(None)
    );
    assert_ne!(attempt, 0);
    assert!(
        engine
            .tokens_wait(&endpoint, Some(80.into()), at(0))
            .unwrap()
            .is_some(),
        "80 of the 100 are taken"
    );
    let above = engine
        .tokens_wait(&endpoint, Some(5_000.into()), at(0))
        .unwrap_err();
    assert_eq!((above.limit, above.cost), (1_000, 5_000));
    engine.landed(&endpoint, attempt);
}

#[test]
fn sends_are_recorded_once_the_server_reports() {
    let (engine, endpoint) = engine_and_endpoint("a");
    engine.sent(&endpoint, at(1));
    assert_eq!(
        endpoint.snapshot(at(2)),
        None,
        "nothing reported: nothing kept"
    );
    let reading = read(
        200,
        &[
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "50"),
        ],
    );
    let _ = engine.after(&endpoint, reading.clone(), 1, at(1), at(2));
    engine.sent(&endpoint, at(3));
    let snapshot = endpoint.snapshot(at(5)).unwrap();
    assert_eq!(snapshot.since_last_request(), Some(secs(2)));
    assert_eq!(snapshot.since_observed(), secs(3));
}

#[test]
fn global_sees_every_endpoint_of_the_engine() {
    let engine = Engine::new(100, secs(3600));
    let make = || Limiter::new(LimiterOptions::default()).unwrap();
    let search = engine.endpoint("search", at(0), make, |_| {});
    let core = engine.endpoint("core", at(0), make, |_| {});
    let low = read(
        200,
        &[
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "3"),
            ("x-ratelimit-reset", "60"),
        ],
    );
    let _ = engine.after(&search, low.clone(), 1, at(0), at(0));
    let fine = read(
        200,
        &[
            ("x-ratelimit-limit", "100"),
            ("x-ratelimit-remaining", "90"),
            ("x-ratelimit-reset", "60"),
        ],
    );
    let _ = engine.after(&core, fine.clone(), 1, at(0), at(0));
    let rules = Rules::default().with_algorithm(Some(Arc::new(Global::default())));
    let hold = engine.hold(&rules, &core, at(10), MAX_RETRY_AFTER, false);
    // Global: 50 s × (1 − 0.03 / 0.15) = 40 s, from the other endpoint's state.
    assert_eq!(
        hold,
        Hold {
            wait: secs(40),
            cause: WaitCause::Throttling
        }
    );
}

#[test]
fn merged_changes_run_from_the_first_rate_to_the_last() {
    let change = |previous, rate| RateChange {
        previous,
        rate,
        reason: RateChangeReason::Throttled,
    };
    let mut changes = Changes {
        rate: Some(change(100.0, 80.0)),
        ..Changes::default()
    };
    changes.merge(Changes {
        rate: Some(change(80.0, 60.0)),
        paused_until: Some(at(3)),
        ..Changes::default()
    });
    assert_eq!(changes.rate, Some(change(100.0, 60.0)));
    assert_eq!(changes.paused_until, Some(at(3)));
    changes.merge(Changes::default());
    assert_eq!(changes.rate, Some(change(100.0, 60.0)));
}

/// A Shopify GraphQL body: `requested` of the bucket's `available` of 1,000 points, 50 back a
/// second, refused (`THROTTLED`, with a 200) or not.
fn graphql(requested: u64, available: u64, throttled: bool) -> QueryCost {
    let errors = if throttled {
        r#""errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"#
    } else {
        r#""data":{"shop":{"name":"a"}},"#
    };
    let body = format!(
        r#"{{{errors}"extensions":{{"cost":{{"requestedQueryCost":{requested},"actualQueryCost":null,
        "throttleStatus":{{"maximumAvailable":1000.0,"currentlyAvailable":{available},"restoreRate":50.0}}}}}}}}"#
    );
    QueryCost::from_body(body.as_bytes()).expect("a cost")
}

fn read_graphql(status: u16, cost: &QueryCost) -> Reading {
    Rules::default().read_with_cost(
        StatusCode::from_u16(status).unwrap(),
        &HeaderMap::new(),
        None,
        Some(cost),
        SystemTime::UNIX_EPOCH,
        MAX_RETRY_AFTER,
    )
}

#[test]
fn a_graphql_query_refused_for_its_cost_is_a_throttle_that_stops_until_its_points_are_back() {
    let (engine, endpoint) = engine_and_endpoint("graphql");
    let rules = Rules::default();
    // 100 points missing, 50 back a second: 2 s, though the status is 200.
    let refused = read_graphql(200, &graphql(300, 200, true));
    assert_eq!(
        refused.signal(),
        Signal::Throttled {
            retry_after: Some(secs(2))
        }
    );
    assert!(engine.after(&endpoint, refused, 1, at(0), at(0)).retry);
    let hold = engine.hold(&rules, &endpoint, at(1), MAX_RETRY_AFTER, false);
    assert_eq!(
        hold,
        Hold {
            wait: secs(1),
            cause: WaitCause::ServerStop
        }
    );
    // A success is not a throttle, and its bucket paces: 3 queries of 300 fit in 1,000 points.
    let success = read_graphql(200, &graphql(300, 950, false));
    assert_eq!(success.signal(), Signal::Success);
    let policy = success.info().policy().expect("the bucket").clone();
    assert_eq!((policy.limit(), policy.remaining()), (Some(3), Some(3)));
    assert!(!engine.after(&endpoint, success, 1, at(2), at(2)).retry);
    assert_eq!(
        engine
            .hold(&rules, &endpoint, at(2), MAX_RETRY_AFTER, false)
            .cause,
        WaitCause::Throttling
    );
    // Without a cost the same response reads as it always did.
    let plain = Rules::default().read_with_cost(
        StatusCode::OK,
        &HeaderMap::new(),
        None,
        None,
        SystemTime::UNIX_EPOCH,
        MAX_RETRY_AFTER,
    );
    assert_eq!(plain, read(200, &[]));
}

#[test]
fn a_graphql_throttle_keeps_the_retry_after_the_server_sent() {
    let mut fields = HeaderMap::new();
    fields.insert("retry-after", "5".parse().unwrap());
    let reading = Rules::default().read_with_cost(
        StatusCode::TOO_MANY_REQUESTS,
        &fields,
        None,
        Some(&graphql(300, 200, true)),
        SystemTime::UNIX_EPOCH,
        MAX_RETRY_AFTER,
    );
    assert_eq!(
        reading.signal(),
        Signal::Throttled {
            retry_after: Some(secs(5))
        }
    );
}

/// Through the engine, as a driver feeds it: a draft-11 response that says nothing is left of a
/// window of a second, with a reset of a second, pauses the limiter while it is younger than the
/// window and not once it is older (its short pace goes on); one whose reset is further off (a
/// window of 10 s whose boundary is 3 s away) pauses it until then.
#[test]
fn nothing_left_of_a_one_second_window_is_paced_through_once_the_limiter_is_a_window_old() {
    let engine = Engine::new(100, secs(3600));
    let endpoint = engine.endpoint(
        "a",
        Timestamp::ZERO,
        || {
            Limiter::new(LimiterOptions {
                initial_units_per_minute: Some(600.0),
                ..LimiterOptions::default()
            })
            .unwrap()
        },
        |_| {},
    );
    let spent = |policy: &str, t: &str| {
        read(
            200,
            &[
                ("ratelimit-policy", policy),
                ("ratelimit", &format!("\"d\";r=0;t={t}")),
            ],
        )
    };
    let second = "\"d\";q=10;w=1";
    let young = Timestamp::from_secs_f64(0.5);
    let after = engine.after(&endpoint, spent(second, "1"), 1, young, young);
    assert_eq!(after.changes.paused_until, Some(at(1) + secs(1) / 2));
    let after = engine.after(&endpoint, spent(second, "1"), 1, at(10), at(10));
    assert_eq!(after.changes.paused_until, None);
    let after = engine.after(&endpoint, spent("\"d\";q=100;w=10", "3"), 1, at(20), at(20));
    assert_eq!(after.changes.paused_until, Some(at(23)));
}

#[test]
fn the_endpoint_learns_the_server_s_fixed_window_from_what_it_was_told() {
    // A fixed window of 20 per 10 s whose boundaries fall at 10 s, 20 s, …; one request every
    // 250 ms, the refused ones told when the window turns, for two minutes.
    let (engine, endpoint) = engine_and_endpoint("api");
    assert_eq!(
        endpoint.server_model(),
        None,
        "nothing learned before a refusal"
    );
    let mut learned = Vec::new();
    let mut used = (0, 0);
    for i in 0..480u64 {
        let ms = i * 250;
        let frame = ms / 10_000;
        if used.0 != frame {
            used = (frame, 0);
        }
        let sent = Timestamp::from_duration(Duration::from_millis(ms));
        let reading = if used.1 < 20 {
            used.1 += 1;
            read(200, &[])
        } else {
            let wait = (frame + 1) * 10_000 - ms;
            let retry_after = wait.div_ceil(1000).to_string();
            read(429, &[("retry-after", retry_after.as_str())])
        };
        let after = engine.after(&endpoint, reading, 1, sent, sent);
        learned.extend(after.learned);
    }
    let model = endpoint.server_model().expect("refusals");
    assert_eq!(model.kind, crate::LimiterKind::FixedWindow, "{model:?}");
    assert_eq!(model.window, secs(10));
    assert!((model.limit - 20.0).abs() <= 2.0, "{model:?}");
    assert_eq!(model.boundary, Some(Duration::ZERO), "{model:?}");
    assert!(!model.from_fields);
    let last = learned.last().expect("the engine reported what it learned");
    assert_eq!(
        (last.kind, last.window, last.limit),
        (model.kind, model.window, model.limit),
        "the last change the engine reported is what the endpoint believes"
    );
}

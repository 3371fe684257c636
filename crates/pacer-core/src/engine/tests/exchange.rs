//! A request's exchange, attempt after attempt: the retry the engine allows, the refusal after
//! a throttle, the failed send, the slot and tokens given back whatever happens, what the
//! caller is told.

use super::*;
use crate::{LimiterMetrics, ManualClock, RequestChoices};
use std::num::NonZeroU32;

/// The pieces a driver lends each step: one limiter named "api" with `MaxConcurrent` 1, so
/// that a slot held or given back shows.
struct Bench {
    name: Arc<str>,
    engine: Engine,
    rules: Rules,
    options: LimiterOptions,
    clock: Arc<dyn Clock>,
    manual: ManualClock,
    metrics: LimiterMetrics,
    endpoint: Arc<Endpoint>,
}

impl Bench {
    fn new(max_attempts: u32) -> Self {
        let (engine, endpoint, manual) = capped("a", 1);
        let name: Arc<str> = Arc::from("api");
        Bench {
            metrics: LimiterMetrics::new(&name),
            name,
            engine,
            rules: Rules::default().with_max_attempts(NonZeroU32::new(max_attempts).unwrap()),
            options: LimiterOptions {
                max_wait: secs(30),
                ..LimiterOptions::default()
            },
            clock: Arc::new(manual.clone()),
            manual,
            endpoint,
        }
    }

    fn driver(&self) -> Driver<'_> {
        Driver {
            name: &self.name,
            engine: &self.engine,
            rules: &self.rules,
            options: &self.options,
            clock: &self.clock,
            metrics: &self.metrics,
            instance_count: 1,
        }
    }

    fn exchange(&self, units: u64, choices: RequestChoices) -> Exchange {
        let now = self.manual.now();
        Exchange::new(Arc::clone(&self.endpoint), units, choices, &self.rules, now)
    }
}

fn answer(
    exchange: &mut Exchange,
    bench: &Bench,
    status: u16,
    fields: &[(&'static str, &str)],
    copy: bool,
) -> Next {
    let status = StatusCode::from_u16(status).unwrap();
    let now = bench.manual.now();
    exchange.answered(&bench.driver(), status, &headers(fields), None, now, copy)
}

#[test]
fn a_throttle_is_sent_again_and_the_caller_is_told_every_attempt_and_wait() {
    let bench = Bench::new(3);
    let driver = bench.driver();
    let mut exchange = bench.exchange(1, RequestChoices::default());
    assert!(exchange.keeps_copy());
    assert_eq!(exchange.go_now(&driver, &[]), Some(at(0)));
    assert_eq!(in_flight(&bench.endpoint), 1, "the attempt holds its slot");
    let next = answer(&mut exchange, &bench, 429, &[("retry-after", "2")], true);
    assert_eq!(next, Next::Retry);
    assert_eq!(
        in_flight(&bench.endpoint),
        0,
        "the answer gave the slot back"
    );
    assert_eq!(exchange.attempt_number(), 2);
    exchange.next_wait(bench.manual.now());
    // The server's stop holds the retry: no fast path, the wait says two seconds.
    assert_eq!(exchange.go_now(&driver, &[]), None);
    let attempt = exchange.attempt(&driver, &[]);
    let hold = bench
        .engine
        .hold(&bench.rules, &bench.endpoint, at(0), secs(60), false);
    assert_eq!(hold.wait, secs(2));
    drop(attempt);
    bench.manual.advance(secs(2));
    exchange.went(&driver, at(2));
    let next = answer(&mut exchange, &bench, 200, &[], true);
    let Next::Done(Some(paced)) = next else {
        panic!("{next:?}")
    };
    assert_eq!(
        (
            paced.limiter(),
            paced.endpoint(),
            paced.attempts(),
            paced.waited()
        ),
        ("api", "a", 2, secs(2))
    );
}

#[test]
fn without_a_copy_or_attempts_left_the_throttle_is_the_answer() {
    let bench = Bench::new(2);
    let driver = bench.driver();
    let mut exchange = bench.exchange(1, RequestChoices::default());
    let _ = exchange.go_now(&driver, &[]).unwrap();
    let next = answer(&mut exchange, &bench, 429, &[], false);
    assert!(
        matches!(next, Next::Done(Some(ref p)) if p.attempts() == 1),
        "{next:?}"
    );

    let mut exchange = bench.exchange(1, RequestChoices::default());
    exchange.next_wait(bench.manual.now());
    bench.manual.advance(secs(60));
    exchange.next_wait(bench.manual.now());
    let _ = exchange.go_now(&driver, &[]).unwrap();
    assert_eq!(answer(&mut exchange, &bench, 429, &[], true), Next::Retry);
    bench.manual.advance(secs(60));
    exchange.next_wait(bench.manual.now());
    let _ = exchange.go_now(&driver, &[]).unwrap();
    assert!(!exchange.keeps_copy(), "the last attempt");
    let next = answer(&mut exchange, &bench, 429, &[], true);
    assert!(
        matches!(next, Next::Done(Some(ref p)) if p.attempts() == 2),
        "{next:?}"
    );
}

#[test]
fn a_refused_retry_tells_the_attempts_sent_and_a_refused_first_none() {
    let bench = Bench::new(3);
    let driver = bench.driver();
    let mut exchange = bench.exchange(1, RequestChoices::default());
    let reason = RejectReason::QueueFull { limit: 10 };
    let refused = exchange.refused(&driver, Refusal::Rejected(reason.clone()), at(0));
    assert_eq!(refused.paced.attempts(), 0);
    assert_eq!(refused.refusal, Refusal::Rejected(reason.clone()));

    let mut exchange = bench.exchange(1, RequestChoices::default());
    let _ = exchange.go_now(&driver, &[]).unwrap();
    assert_eq!(answer(&mut exchange, &bench, 429, &[], true), Next::Retry);
    exchange.next_wait(at(0));
    bench.manual.advance(secs(5));
    let refused = exchange.refused(&driver, Refusal::Rejected(reason), at(5));
    assert_eq!(
        (refused.paced.attempts(), refused.paced.waited()),
        (1, secs(5))
    );
}

#[test]
fn a_failed_send_or_a_drop_mid_flight_gives_the_slot_back() {
    let bench = Bench::new(3);
    let driver = bench.driver();
    let mut exchange = bench.exchange(1, RequestChoices::default());
    let _ = exchange.go_now(&driver, &[]).unwrap();
    exchange.failed(&driver, bench.clock.now());
    assert_eq!(in_flight(&bench.endpoint), 0);
    drop(exchange);
    assert_eq!(in_flight(&bench.endpoint), 0, "given back once");

    let mut exchange = bench.exchange(1, RequestChoices::default());
    let _ = exchange.go_now(&driver, &[]).unwrap();
    assert_eq!(in_flight(&bench.endpoint), 1);
    drop(exchange);
    assert_eq!(in_flight(&bench.endpoint), 0, "dropped mid-send");
}

#[test]
fn a_request_of_no_units_goes_at_once_is_read_and_is_not_paced() {
    let bench = Bench::new(3);
    let driver = bench.driver();
    // The only slot is taken: a request of units would wait, one of none does not.
    let mut holder = bench.exchange(1, RequestChoices::default());
    let _ = holder.go_now(&driver, &[]).unwrap();
    let mut free = bench.exchange(0, RequestChoices::default());
    assert!(!free.keeps_copy());
    assert_eq!(free.go_now(&driver, &[]), Some(at(0)));
    let next = answer(&mut free, &bench, 429, &[("retry-after", "9")], true);
    assert_eq!(next, Next::Done(None));
    let hold = bench
        .engine
        .hold(&bench.rules, &bench.endpoint, at(0), secs(60), false);
    assert_eq!(hold.wait, secs(9), "its answer still informs the endpoint");
    drop(holder);
}

#[test]
fn the_request_s_choices_shape_each_attempt() {
    let bench = Bench::new(3);
    let driver = bench.driver();
    let choices = RequestChoices {
        max_wait: Some(secs(5)),
        timeout: Some(secs(8)),
        tokens: Some(700),
        ..RequestChoices::default()
    };
    let exchange = bench.exchange(2, choices);
    let attempt = exchange.attempt(&driver, &[]);
    assert_eq!(
        (
            attempt.units,
            attempt.max_wait,
            attempt.tokens,
            attempt.timeout
        ),
        (2, secs(5), Some(700.into()), Some((at(8), secs(8))))
    );
    assert_eq!(exchange.timeout(), Some((at(8), secs(8))));
    let plain = bench.exchange(1, RequestChoices::default());
    assert_eq!(
        plain.attempt(&driver, &[]).max_wait,
        secs(30),
        "the limiter's"
    );
    assert_eq!(plain.timeout(), None);
}

#[test]
fn a_refusal_for_tokens_cuts_the_rate_only_of_a_request_whose_tokens_are_unknown() {
    // OpenAI's 429 for tokens: requests are left, the tokens too few.
    let openai_429 = [
        ("x-ratelimit-limit-requests", "500"),
        ("x-ratelimit-remaining-requests", "300"),
        ("x-ratelimit-reset-requests", "120ms"),
        ("x-ratelimit-limit-tokens", "30000"),
        ("x-ratelimit-remaining-tokens", "200"),
        ("x-ratelimit-reset-tokens", "3s"),
    ];
    let decreases = |bench: &Bench| bench.endpoint.limiter().snapshot().decreases;
    for (tokens, cut) in [(Some(1_200), false), (None, true)] {
        let bench = Bench::new(3);
        let driver = bench.driver();
        let choices = RequestChoices {
            tokens,
            ..RequestChoices::default()
        };
        let mut exchange = bench.exchange(1, choices);
        assert_eq!(exchange.go_now(&driver, &[]), Some(at(0)));
        let next = answer(&mut exchange, &bench, 429, &openai_429, true);
        assert_eq!(next, Next::Retry, "sent again");
        assert_eq!(
            decreases(&bench) > 0,
            cut,
            "tokens {tokens:?}: the budget holds a request it knows the tokens of; \
             the rate, one it does not"
        );
    }
}

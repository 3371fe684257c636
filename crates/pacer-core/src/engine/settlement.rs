//! A request's tokens, reserved before its send, settled from what its answer reports it used.

use super::Endpoint;
use crate::{Timestamp, TokenUsage, UsageReader};
use std::sync::Arc;

/// A request's tokens, reserved from its endpoint's budgets before its send, waiting for what
/// its answer reports it used ([`Exchange::settlement`](super::Exchange::settlement)). Settled, the budgets are given back
/// what was reserved above the usage and charged what was used above it; dropped unsettled (the
/// body was not read to its end, or reported no usage), the reservation stands until the
/// server's next numbers replace it.
///
/// ```
/// use http::{HeaderMap, StatusCode};
/// use pacer_core::{Clock, Driver, Engine, Exchange, Limiter, LimiterMetrics, LimiterOptions,
///     ManualClock, Next, RequestChoices, Rules};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
/// let (engine, rules, options) = (Engine::new(10, Duration::from_secs(60)), Rules::default(),
///     LimiterOptions::default());
/// let name: Arc<str> = Arc::from("openai");
/// let metrics = LimiterMetrics::new(&name);
/// let driver = Driver { name: &name, engine: &engine, rules: &rules, options: &options,
///     clock: &clock, metrics: &metrics, instance_count: 1 };
/// let endpoint = engine.endpoint("api.openai.com", clock.now(),
///     || Limiter::new(options.clone()).unwrap(), |_| {});
/// // OpenAI said 10,000 tokens a minute are left.
/// let mut headers = HeaderMap::new();
/// for (name, value) in [("x-ratelimit-limit-tokens", "10000"),
///     ("x-ratelimit-remaining-tokens", "10000"), ("x-ratelimit-reset-tokens", "0s")] {
///     headers.insert(name, value.parse().unwrap());
/// }
/// let mut first = Exchange::new(Arc::clone(&endpoint), 1, RequestChoices::default(), &rules,
///     clock.now());
/// let at = first.go_now(&driver, &[]).unwrap();
/// first.answered(&driver, StatusCode::OK, &headers, None, at, false);
///
/// // A request that may take 1,200 tokens, 1,000 of them its answer.
/// let choices = RequestChoices { tokens: Some(1_200), output_tokens: Some(1_000),
///     ..RequestChoices::default() };
/// let mut exchange = Exchange::new(Arc::clone(&endpoint), 1, choices, &rules, clock.now());
/// let at = exchange.go_now(&driver, &[]).unwrap();
/// let available = || endpoint.budgets(clock.now()).budgets()[0].left();
/// assert_eq!(available(), Some(8_800));
/// let mut json = HeaderMap::new();
/// json.insert("content-type", "application/json".parse().unwrap());
/// let next = exchange.answered(&driver, StatusCode::OK, &json, None, at, false);
/// assert!(matches!(next, Next::Done(_)));
/// // Its body says it used 200 of prompt and 50 of answer: 950 come back at its end.
/// let mut settlement = exchange.settlement(&json).expect("it reserved tokens");
/// settlement.feed(br#"{"choices":[],"usage":{"prompt_tokens":200,"#);
/// settlement.feed(br#""completion_tokens":50}}"#);
/// settlement.finish(clock.now());
/// assert_eq!(available(), Some(9_750));
/// ```
#[derive(Debug)]
#[must_use = "dropped, the reservation stands"]
pub struct Settlement {
    pub(super) endpoint: Arc<Endpoint>,
    pub(super) attempt: u64,
    pub(super) reader: UsageReader,
}

impl Settlement {
    /// The body's next chunk, as the caller reads it.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.reader.feed(chunk);
    }

    /// The body ended at `now`: the reservation is settled against the usage it reported, if
    /// it reported one ([`settle`](Self::settle)); it stands if not.
    pub fn finish(mut self, now: Timestamp) {
        let reader = std::mem::replace(&mut self.reader, UsageReader::none());
        if let Some(used) = reader.finish() {
            self.settle(used, now);
        }
    }

    /// The answer reported `used` at `now`: the reservation is settled against it, before or
    /// after the numbers the answer carried (the model APIs count a request's reservation when
    /// it comes and adjust it at its end, as this does). For a driver that read the usage
    /// itself.
    pub fn settle(self, used: TokenUsage, now: Timestamp) {
        let mut server = self.endpoint.server.lock();
        server.units.settle(self.attempt, &used, now);
    }
}

impl Drop for Settlement {
    fn drop(&mut self) {
        self.endpoint.server.lock().units.landed(self.attempt);
    }
}

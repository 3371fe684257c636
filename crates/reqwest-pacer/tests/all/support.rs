//! Shared helpers: a client with the middleware, and a scripted responder.

use pacer_core::{Clock, LimiterOptions, ManualClock, RealClock, Timestamp};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use wiremock::{Request, Respond, ResponseTemplate};

pub(crate) fn client(pacer: &PacerMiddleware) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build()
}

/// Options that never hold a request back on their own: a big bucket, a high rate.
pub(crate) fn generous() -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(60_000.0);
    o.min_units_per_minute = 600.0;
    o.max_units_per_minute = 60_000.0;
    o
}

/// Options that hold the rate at `units_per_minute` (initial, minimum and maximum alike).
pub(crate) fn fixed_rate(units_per_minute: f64) -> LimiterOptions {
    let mut o = LimiterOptions::default();
    o.initial_units_per_minute = Some(units_per_minute);
    o.min_units_per_minute = units_per_minute;
    o.max_units_per_minute = units_per_minute;
    o
}

pub(crate) fn pacer(options: LimiterOptions) -> PacerMiddleware {
    pacer_with(LimiterConfig::new(options))
}

/// The limiter `api` with `config`.
pub(crate) fn pacer_with(config: LimiterConfig) -> PacerMiddleware {
    PacerMiddleware::builder()
        .limiter("api", config)
        .build()
        .unwrap()
}

/// `MaxAttempts` of `n`.
pub(crate) fn attempts(n: u32) -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(n).expect("at least 1")
}

/// The Unix time in whole seconds `secs` after `clock`'s now: a reset as servers send it.
pub(crate) fn unix_secs_after(clock: &ManualClock, secs: u64) -> u64 {
    clock
        .system_now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + secs
}

/// The limiter `api` with `config`, on `clock`: for a test that asserts a duration, whose time
/// [`drive`] moves.
pub(crate) fn pacer_on(clock: &ManualClock, config: LimiterConfig) -> PacerMiddleware {
    PacerMiddleware::builder()
        .limiter("api", config)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap()
}

/// Waits in real time, a few milliseconds at a time, at most `limit`, until `done` holds; says
/// whether it did. For what a test waits on other tasks for, not on a clock it drives.
pub(crate) async fn eventually_within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    done()
}

/// Runs `future` to its end on `clock` ([`ManualClock::drive`]).
pub(crate) async fn drive<F: Future>(clock: &ManualClock, future: F) -> F::Output {
    clock.drive(future).await
}

/// Answers with the scripted responses in order (the last one again once they run out), and
/// records when each request arrived.
#[derive(Clone)]
pub(crate) struct Script {
    responses: Arc<Vec<ResponseTemplate>>,
    calls: Arc<AtomicUsize>,
    arrivals: Arc<parking_lot::Mutex<Vec<Timestamp>>>,
    clock: Arc<dyn Clock>,
}

impl Script {
    pub(crate) fn new(responses: Vec<ResponseTemplate>) -> Self {
        Script {
            responses: Arc::new(responses),
            calls: Arc::default(),
            arrivals: Arc::default(),
            clock: Arc::new(RealClock::new()),
        }
    }

    /// The same script, timing arrivals on `clock` (the limiter's, which [`drive`] moves).
    pub(crate) fn on(mut self, clock: &ManualClock) -> Self {
        self.clock = Arc::new(clock.clone());
        self
    }

    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Time between the arrivals of request `a` and request `b` (0-based).
    pub(crate) fn gap(&self, a: usize, b: usize) -> Duration {
        let arrivals = self.arrivals.lock();
        arrivals[b] - arrivals[a]
    }
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.arrivals.lock().push(self.clock.now());
        let i = self.calls.fetch_add(1, Ordering::SeqCst);
        self.responses[i.min(self.responses.len() - 1)].clone()
    }
}

/// A server that answers every GET with [`ok`].
pub(crate) async fn answering_ok() -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("GET"))
        .respond_with(ok())
        .mount(&server)
        .await;
    server
}

pub(crate) fn ok() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_string("ok")
}

pub(crate) fn throttled(retry_after: &str) -> ResponseTemplate {
    ResponseTemplate::new(429).insert_header("retry-after", retry_after)
}

/// A server that answers every GET with `responses` in order (see [`Script`]).
pub(crate) async fn scripted(responses: Vec<ResponseTemplate>) -> (wiremock::MockServer, Script) {
    serve_script(Script::new(responses)).await
}

/// A server that answers every GET with `script`.
pub(crate) async fn serve_script(script: Script) -> (wiremock::MockServer, Script) {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    (server, script)
}

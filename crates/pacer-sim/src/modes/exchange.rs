//! The client of the limiter modes: each instance runs the engine the middleware runs — an
//! [`Exchange`] per request, its wait pumped by [`pacer_core::drive::ready`] (the server's stop,
//! the proactive delay, the limiter's queue in its lane, `MaxWait` as one budget), the answer
//! read by [`Exchange::answered`] — on virtual time: the instance's [`ManualClock`] is set to
//! each event's time, and the waits that clock or the limiter woke are polled then.

use super::headers::{graphql_response, http_response, wall};
use super::{Client, Response};
use crate::metrics::Learned;
use pacer_core::{
    BodyReading, Changes, Clock, Driver, Endpoint, Engine, Exchange, Limiter, LimiterMemory,
    LimiterMetrics, LimiterOptions, ManualClock, Next, Refused, RequestChoices, Rules, ServerModel,
    Timestamp, WindowLimit,
};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// The endpoint key the engine is given: the model API has one endpoint.
const KEY: &str = "model-api";

/// What every exchange of the instance is driven with ([`Driver`]), owned.
struct Pieces {
    name: Arc<str>,
    engine: Engine,
    rules: Rules,
    options: LimiterOptions,
    clock: Arc<dyn Clock>,
    metrics: LimiterMetrics,
    /// The strict windows, each with its key in its store.
    windows: Vec<(WindowLimit, String)>,
}

impl Pieces {
    fn driver(&self, instance_count: u32) -> Driver<'_> {
        Driver {
            name: &self.name,
            engine: &self.engine,
            rules: &self.rules,
            options: &self.options,
            clock: &self.clock,
            metrics: &self.metrics,
            instance_count,
        }
    }
}

/// A request's wait before its send, running: it ends with the exchange and when it may go.
type Waiting = Pin<Box<dyn Future<Output = (Exchange, Result<Timestamp, Refused>)> + Send>>;

/// Wakes a request's wait by putting its number on the instance's list.
struct Woken {
    request: u32,
    list: Arc<Mutex<Vec<u32>>>,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.list.lock().expect("never poisoned").push(self.request);
    }
}

/// How an attempt's wait ended ([`ExchangeClient::settle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// The attempt `attempt` of the request goes now, having waited this long.
    Go {
        /// The attempt's number, from 1.
        attempt: u32,
        /// How long it waited.
        waited: Duration,
    },
    /// The request was refused before this attempt's send.
    Refused,
}

/// What the answer to an attempt leads to ([`ExchangeClient::answered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// The request is sent again: its next attempt waits from now.
    Retry,
    /// The answer is the request's last.
    Done,
}

/// One instance running the middleware's engine on virtual time ([`Exchange`]).
pub struct ExchangeClient {
    clock: ManualClock,
    pieces: Arc<Pieces>,
    endpoint: Arc<Endpoint>,
    instance_count: u32,
    /// Whether the responses are read as GraphQL cost bodies (the `graphql` mode).
    graphql: bool,
    /// The waits running, by request.
    waiting: HashMap<u32, Waiting>,
    /// The requests sent and not answered, and those to be sent again, by request.
    exchanges: HashMap<u32, Exchange>,
    /// The requests whose wait was woken since it was last polled.
    woken: Arc<Mutex<Vec<u32>>>,
    /// The refusals answered, and the model of the server at the fifth.
    refusals: u32,
    by_fifth: Option<ServerModel>,
}

impl fmt::Debug for ExchangeClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExchangeClient")
            .field("waiting", &self.waiting.len())
            .field("exchanges", &self.exchanges.len())
            .finish_non_exhaustive()
    }
}

impl ExchangeClient {
    /// An instance whose endpoint's limiter has `options`, with `rules`, `controller` if given,
    /// and the strict windows `windows` builds on the instance's clock; started at `now`.
    ///
    /// # Errors
    ///
    /// The options' errors.
    pub fn new(
        options: LimiterOptions,
        rules: Rules,
        controller: Option<Box<dyn pacer_core::Controller>>,
        windows: Option<super::WindowsFn>,
        now: Timestamp,
    ) -> Result<Self, pacer_core::InvalidOptions> {
        let clock = ManualClock::with_system_origin(wall(Timestamp::ZERO));
        clock.set(now);
        let shared: Arc<dyn Clock> = Arc::new(clock.clone());
        let mut builder = Limiter::builder(options.clone()).clock(Arc::clone(&shared));
        if let Some(controller) = controller {
            builder = builder.controller(controller);
        }
        let limiter = builder.build()?;
        let engine = Engine::new(1, Duration::MAX);
        let endpoint = engine.endpoint(KEY, now, || limiter, |_| {});
        let name: Arc<str> = Arc::from("sim");
        // Keyed as the tower layer keys them: the window's name, then the endpoint key.
        let windows = windows.map_or_else(Vec::new, |build| build(Arc::clone(&shared)));
        let windows = (windows.into_iter())
            .map(|w| {
                let key = format!("{}:{KEY}", w.name());
                (w, key)
            })
            .collect();
        Ok(ExchangeClient {
            clock,
            instance_count: options.instance_count,
            pieces: Arc::new(Pieces {
                metrics: LimiterMetrics::new(&name),
                name,
                engine,
                rules,
                options,
                clock: shared,
                windows,
            }),
            endpoint,
            graphql: false,
            waiting: HashMap::new(),
            exchanges: HashMap::new(),
            woken: Arc::new(Mutex::new(Vec::new())),
            refusals: 0,
            by_fifth: None,
        })
    }

    /// The client reads each response as a GraphQL cost body (the `graphql` mode): its rules
    /// read a query's cost.
    #[must_use]
    pub fn reading_query_cost(mut self) -> Self {
        self.graphql = true;
        let pieces = Arc::get_mut(&mut self.pieces).expect("no wait runs yet");
        pieces.rules = pieces.rules.clone().with_query_cost(true);
        self
    }

    /// The endpoint's budgets in other units than requests, as of `now`.
    #[must_use]
    pub fn budgets(&self, now: Timestamp) -> pacer_core::UnitBudgets {
        self.endpoint.budgets(now)
    }

    /// The endpoint's limiter.
    #[must_use]
    pub fn limiter(&self) -> &Limiter {
        self.endpoint.limiter()
    }

    /// Attempt after attempt of request `request` (of `units`) begins its wait at `now`: the
    /// first makes its exchange, a retry takes the one its answer left. See
    /// [`settle`](Self::settle) for how it ends.
    pub fn begin(&mut self, request: u32, units: u64, now: Timestamp) {
        self.begin_with(request, units, RequestChoices::default(), now);
    }

    /// [`begin`](Self::begin) for a request that makes `choices` (its tokens, for the
    /// `llm-batch` story); a retry keeps its first attempt's.
    pub fn begin_with(
        &mut self,
        request: u32,
        units: u64,
        choices: RequestChoices,
        now: Timestamp,
    ) {
        self.clock.set(now);
        let mut exchange = match self.exchanges.remove(&request) {
            Some(exchange) => exchange,
            None => Exchange::new(
                Arc::clone(&self.endpoint),
                units,
                choices,
                &self.pieces.rules,
                now,
            ),
        };
        exchange.next_wait(now);
        let (pieces, count) = (Arc::clone(&self.pieces), self.instance_count);
        let wait: Waiting = Box::pin(async move {
            let driver = pieces.driver(count);
            let windows: Vec<(&WindowLimit, String)> = (pieces.windows.iter())
                .map(|(w, key)| (w, key.clone()))
                .collect();
            let ready = pacer_core::drive::ready(&mut exchange, &driver, &windows).await;
            (exchange, ready)
        });
        self.waiting.insert(request, wait);
        self.woken.lock().expect("never poisoned").push(request);
    }

    /// The waits that end by `now` (the clock set there, and every wait it or the limiter woke
    /// polled until none is): each request's attempt that goes, or its refusal.
    pub fn settle(&mut self, now: Timestamp) -> Vec<(u32, Settled)> {
        self.clock.set(now);
        let mut settled = Vec::new();
        loop {
            let woken = std::mem::take(&mut *self.woken.lock().expect("never poisoned"));
            if woken.is_empty() {
                return settled;
            }
            for request in woken {
                let Some(wait) = self.waiting.get_mut(&request) else {
                    continue; // Woken twice, or ended.
                };
                let waker = Waker::from(Arc::new(Woken {
                    request,
                    list: Arc::clone(&self.woken),
                }));
                let Poll::Ready((exchange, ready)) =
                    wait.as_mut().poll(&mut Context::from_waker(&waker))
                else {
                    continue;
                };
                self.waiting.remove(&request);
                match ready {
                    Ok(at) => {
                        let attempt = exchange.attempt_number();
                        let waited = at.saturating_duration_since(exchange.wait_began());
                        self.exchanges.insert(request, exchange);
                        settled.push((request, Settled::Go { attempt, waited }));
                    }
                    Err(_) => settled.push((request, Settled::Refused)),
                }
            }
        }
    }

    /// When a wait is next due to be looked at (its sleep, or the limiter's next grant).
    #[must_use]
    pub fn next_at(&self) -> Option<Timestamp> {
        self.clock.next_deadline()
    }

    /// The answer to request `request`'s attempt in flight, at `now`, read by the engine.
    ///
    /// # Panics
    ///
    /// If the request has no attempt in flight.
    pub fn answered(&mut self, request: u32, response: &Response, now: Timestamp) -> Answered {
        let (status, headers, body) = if self.graphql {
            let (status, cost) = graphql_response(response);
            let mut body = BodyReading::default();
            body.cost = cost;
            (status, http::HeaderMap::new(), Some(body))
        } else {
            let (status, headers) = http_response(response);
            (status, headers, None)
        };
        self.answered_with(request, status, &headers, body.as_ref(), now)
    }

    /// [`answered`](Self::answered) for any HTTP answer: its status, headers and what its body
    /// said, at `now`.
    ///
    /// # Panics
    ///
    /// If the request has no attempt in flight.
    pub fn answered_with(
        &mut self,
        request: u32,
        status: http::StatusCode,
        headers: &http::HeaderMap,
        body: Option<&BodyReading>,
        now: Timestamp,
    ) -> Answered {
        self.answered_using(request, status, headers, body, None, now)
    }

    /// [`answered_with`](Self::answered_with) for an answer whose body reported `used` tokens:
    /// the request's reservation is settled against it, as the middleware settles it when the
    /// body ends ([`pacer_core::Settlement::settle`]).
    ///
    /// # Panics
    ///
    /// If the request has no attempt in flight.
    pub fn answered_using(
        &mut self,
        request: u32,
        status: http::StatusCode,
        headers: &http::HeaderMap,
        body: Option<&BodyReading>,
        used: Option<pacer_core::TokenUsage>,
        now: Timestamp,
    ) -> Answered {
        self.clock.set(now);
        let mut exchange = self
            .exchanges
            .remove(&request)
            .expect("an attempt in flight");
        let refused = matches!(
            status,
            http::StatusCode::TOO_MANY_REQUESTS | http::StatusCode::SERVICE_UNAVAILABLE
        );
        let driver = self.pieces.driver(self.instance_count);
        let next = exchange.answered(&driver, status, headers, body, now, true);
        if let (Next::Done(_), Some(used)) = (&next, used)
            && let Some(settlement) = exchange.settlement(headers)
        {
            settlement.settle(used, now);
        }
        if refused {
            self.refusals += 1;
            if self.refusals == 5 {
                self.by_fifth = self.endpoint.server_model();
            }
        }
        match next {
            Next::Retry => {
                self.exchanges.insert(request, exchange);
                Answered::Retry
            }
            Next::Done(_) => Answered::Done,
        }
    }

    /// The instance stopped: the requests waiting are never sent (those in flight are still
    /// answered). Returns how many.
    pub fn stop(&mut self) -> usize {
        let n = self.waiting.len();
        self.waiting.clear();
        n
    }
}

impl Client for ExchangeClient {
    fn learned(&self) -> Learned {
        Learned {
            by_fifth: self.by_fifth.clone(),
            now: self.endpoint.server_model(),
        }
    }

    fn exchanges(&mut self) -> Option<&mut ExchangeClient> {
        Some(self)
    }

    fn on_response(&mut self, _response: &Response, _now: Timestamp) -> Changes {
        unreachable!("an exchange client reads its answers with `answered`")
    }

    fn retry_delay(&self, _retry_after: Duration) -> Duration {
        Duration::ZERO
    }

    fn set_instance_count(&mut self, count: u32, now: Timestamp) -> Changes {
        self.clock.set(now);
        self.instance_count = count;
        self.limiter().set_instance_count(count).unwrap_or_default()
    }

    fn rate(&self) -> Option<f64> {
        Some(self.limiter().rate())
    }

    fn memory(&self) -> Option<LimiterMemory> {
        self.limiter().memory()
    }

    fn recall(&mut self, memory: &LimiterMemory, now: Timestamp) -> Changes {
        self.clock.set(now);
        self.limiter().recall(memory)
    }
}

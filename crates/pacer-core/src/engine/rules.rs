//! The engine's rules: how it reads a response ([`Rules::read`] → [`Reading`]) and what the
//! server's state asks of a request before its send ([`Rules::hold`] → [`Hold`]).

use super::classify::{
    BODY_LIMIT, BodyVerdict, DefaultClassifier, ThrottleClassifier, forbids_retry, is_json,
};
use super::query_cost::QUERY_COST_BODY_LIMIT;
use super::reading::BodyReading;
use super::reading::Reading;
use super::refusal::RefusalClass;
use super::units;
use crate::headers::Age;
use crate::{
    DeclaredDialect, EndpointSnapshot, Percentage, QueryCost, RateLimitInfo,
    RateLimitStateProvider, ServerStopPolicy, Signal, StopCause, ThrottlingAlgorithm,
    ThrottlingContext, WallTime,
};
use http::{HeaderMap, StatusCode};
use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What held a request back before its send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitCause {
    /// The server ordered a stop: a `Retry-After`, or no quota left until the reset.
    ServerStop,
    /// A strict window has no room in time.
    Window,
    /// The proactive throttling algorithm's delay.
    Throttling,
    /// The adaptive limiter's queue: the rate is too low for the units in time.
    Queue,
    /// A quota in another unit than requests (tokens) has not enough left for the request's
    /// cost in time.
    UnitQuota,
    /// The adaptive limiter's cap on requests in flight (`MaxConcurrent`, the limiter's or the
    /// request's own): no slot came free in time.
    Concurrency,
}

impl WaitCause {
    /// A short, stable name for logs and metric labels.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            WaitCause::ServerStop => "server_stop",
            WaitCause::Window => "window",
            WaitCause::Throttling => "throttling",
            WaitCause::Queue => "queue",
            WaitCause::UnitQuota => "unit_quota",
            WaitCause::Concurrency => "concurrency",
        }
    }
}

/// How long the server's state asks a request to wait before its send, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hold {
    /// The wait (zero: go).
    pub wait: Duration,
    /// What asks for it.
    pub cause: WaitCause,
}

impl Hold {
    /// No wait.
    pub const NONE: Hold = Hold {
        wait: Duration::ZERO,
        cause: WaitCause::Throttling,
    };
}

/// How the engine reads a response, what it waits for before a send, and how often it sends a
/// throttled request: the classifier, the server-stop policy, the proactive throttling
/// algorithm, `MaxAttempts`, `QueryCost` and the declared dialects. Cheap to clone.
///
/// The default is the middleware's: [`DefaultClassifier`], [`ServerStopPolicy::default`],
/// [`Percentage::default`] and [`Rules::DEFAULT_MAX_ATTEMPTS`].
#[derive(Clone)]
pub struct Rules {
    classifier: Arc<dyn ThrottleClassifier>,
    server_stop: ServerStopPolicy,
    algorithm: Option<Arc<dyn ThrottlingAlgorithm>>,
    max_attempts: NonZeroU32,
    query_cost: bool,
    dialects: Arc<[DeclaredDialect]>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            classifier: Arc::new(DefaultClassifier::default()),
            server_stop: ServerStopPolicy::default(),
            algorithm: Some(Arc::new(Percentage::default())),
            max_attempts: Rules::DEFAULT_MAX_ATTEMPTS,
            query_cost: false,
            dialects: Arc::new([]),
        }
    }
}

impl fmt::Debug for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rules")
            .field("classifier", &self.classifier)
            .field("server_stop", &self.server_stop)
            .field("algorithm", &self.algorithm)
            .field("max_attempts", &self.max_attempts)
            .field("query_cost", &self.query_cost)
            .field("dialects", &self.dialects)
            .finish()
    }
}

impl Rules {
    /// `MaxAttempts` unless set: a throttled request is sent 4 times in all.
    pub const DEFAULT_MAX_ATTEMPTS: NonZeroU32 = NonZeroU32::new(4).expect("4 is not 0");

    /// Replaces `MaxAttempts`: how many times a throttled request is sent in all, counting the
    /// first (1: never again).
    #[must_use]
    pub fn with_max_attempts(mut self, max_attempts: NonZeroU32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// `MaxAttempts`.
    #[must_use]
    pub fn max_attempts(&self) -> NonZeroU32 {
        self.max_attempts
    }

    /// Replaces `QueryCost`: whether a driver reads the body of each JSON response for a GraphQL
    /// query's cost (Shopify's `extensions.cost`, [`QueryCost`]) and hands it to
    /// [`read_with_cost`](Self::read_with_cost). Off by default. When on, each JSON response
    /// reaches the caller only once its body (up to
    /// [`QUERY_COST_BODY_LIMIT`](crate::QUERY_COST_BODY_LIMIT)) is read.
    #[must_use]
    pub fn with_query_cost(mut self, read: bool) -> Self {
        self.query_cost = read;
        self
    }

    /// `QueryCost`: whether a driver reads a JSON response's body for a GraphQL query's cost.
    #[must_use]
    pub fn reads_query_cost(&self) -> bool {
        self.query_cost
    }

    /// The most of a response's body a driver reads for these rules, or 0 for none: a 429's or
    /// a 403's with a JSON content type up to [`BODY_LIMIT`](crate::BODY_LIMIT), for the
    /// classifier;
    /// any JSON response's up to [`QUERY_COST_BODY_LIMIT`](crate::QUERY_COST_BODY_LIMIT) when
    /// they read a GraphQL query's cost. A body whose `Content-Length` is above the limit is not
    /// read at all; one of unknown length that runs past it is handed on unread past it and
    /// shown to no one ([`judge_body`](Self::judge_body) is not called).
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use pacer_core::{BODY_LIMIT, Rules};
    ///
    /// let mut json = HeaderMap::new();
    /// json.insert("content-type", "application/json".parse().unwrap());
    /// assert_eq!(Rules::default().body_limit(StatusCode::TOO_MANY_REQUESTS, &json), BODY_LIMIT);
    /// assert_eq!(Rules::default().body_limit(StatusCode::OK, &json), 0);
    /// ```
    #[must_use]
    #[inline]
    pub fn body_limit(&self, status: StatusCode, headers: &HeaderMap) -> usize {
        let throttle = refusal_with_body(status);
        if !(throttle || self.query_cost) || !is_json(headers) {
            return 0;
        }
        let limit = if self.query_cost {
            QUERY_COST_BODY_LIMIT
        } else {
            BODY_LIMIT
        };
        let length = headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
        if length.is_some_and(|n| n > limit as u64) {
            0
        } else {
            limit
        }
    }

    /// What a whole body, read within [`body_limit`](Self::body_limit), says: the classifier's
    /// verdict on a 429's or a 403's of at most [`BODY_LIMIT`](crate::BODY_LIMIT) bytes
    /// ([`ThrottleClassifier::classify_body`]), and a GraphQL query's cost when the rules read it
    /// ([`QueryCost::from_body`]). Hand both to [`read_with_cost`](Self::read_with_cost).
    #[must_use]
    pub fn judge_body(&self, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> BodyReading {
        let verdict = (refusal_with_body(status) && body.len() <= BODY_LIMIT)
            .then(|| self.classifier.classify_body(status, headers, body))
            .flatten();
        let cost = self
            .query_cost
            .then(|| QueryCost::from_body(body))
            .flatten();
        BodyReading { verdict, cost }
    }

    /// Adds a dialect the user declared: the engine reads it from every response, after the
    /// built-in dialects, into policies (and a retry wait) with the same bounds and soundness
    /// rules. A response that carries none of its fields costs a lookup of each of its headers.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use pacer_core::{DeclaredDialect, Rules, Signal, TimeUnit};
    /// use std::time::{Duration, SystemTime};
    ///
    /// // An API that says how long to wait in a header of its own, in milliseconds.
    /// let api = DeclaredDialect::builder("api")
    ///     .retry_after("X-Wait-Ms")
    ///     .retry_after_unit(TimeUnit::Milliseconds)
    ///     .build()?;
    /// let rules = Rules::default().with_dialect(api);
    /// let mut h = HeaderMap::new();
    /// h.insert("x-wait-ms", "1500".parse()?);
    /// let reading = rules.read(StatusCode::TOO_MANY_REQUESTS, &h, None, SystemTime::UNIX_EPOCH,
    ///     Duration::from_secs(60));
    /// assert_eq!(reading.signal(), Signal::Throttled { retry_after: Some(Duration::from_millis(1500)) });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_dialect(mut self, dialect: DeclaredDialect) -> Self {
        let mut all = self.dialects.to_vec();
        all.push(dialect);
        self.dialects = all.into();
        self
    }

    /// Replaces the declared dialects (see [`with_dialect`](Self::with_dialect)).
    #[must_use]
    pub fn with_dialects(mut self, dialects: impl IntoIterator<Item = DeclaredDialect>) -> Self {
        self.dialects = dialects.into_iter().collect();
        self
    }

    /// The declared dialects, in the order they were added.
    #[must_use]
    pub fn dialects(&self) -> &[DeclaredDialect] {
        &self.dialects
    }

    /// Replaces the classifier.
    #[must_use]
    pub fn with_classifier(mut self, classifier: Arc<dyn ThrottleClassifier>) -> Self {
        self.classifier = classifier;
        self
    }

    /// Replaces the server-stop policy.
    #[must_use]
    pub fn with_server_stop(mut self, policy: ServerStopPolicy) -> Self {
        self.server_stop = policy;
        self
    }

    /// Replaces the proactive throttling algorithm (`None`: no proactive delay; the server's
    /// stops still hold).
    #[must_use]
    pub fn with_algorithm(mut self, algorithm: Option<Arc<dyn ThrottlingAlgorithm>>) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// The classifier.
    #[must_use]
    pub fn classifier(&self) -> &Arc<dyn ThrottleClassifier> {
        &self.classifier
    }

    /// The server-stop policy.
    #[must_use]
    pub fn server_stop(&self) -> &ServerStopPolicy {
        &self.server_stop
    }

    /// The proactive throttling algorithm, if any.
    #[must_use]
    pub fn algorithm(&self) -> Option<&Arc<dyn ThrottlingAlgorithm>> {
        self.algorithm.as_ref()
    }

    /// Reads a response: its signal for the rate, the rate-limit state it reports (bounded by
    /// `max_retry_after` and the exhausted-stop cap; advisory unless it is a throttle), and
    /// whether the server allows it to be sent again. Pure.
    ///
    /// `body` is what [`ThrottleClassifier::classify_body`] said of a 429's body, if the driver
    /// read it. `wall` resolves the dates in the fields (`Retry-After` as an HTTP date, epoch
    /// resets): a [`SystemTime`](std::time::SystemTime), or a function that reads it only
    /// when a field needs it ([`WallTime`]).
    #[must_use]
    pub fn read(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: Option<&BodyVerdict>,
        wall: impl WallTime,
        max_retry_after: Duration,
    ) -> Reading {
        self.read_with_cost(status, headers, body, None, wall, max_retry_after)
    }

    /// [`read`](Self::read), with what the response's body said of a GraphQL query's cost,
    /// if the driver read it ([`QueryCost::from_body`]). The cost's bucket joins the rate-limit
    /// state as a policy ([`QueryCost::policy`]), and a query refused for want of points is a
    /// throttle whatever the status, with the time its points take to come back as its
    /// `Retry-After` when the server sent none.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use pacer_core::{QueryCost, Rules, Signal};
    /// use std::time::{Duration, SystemTime};
    ///
    /// let body = br#"{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],
    ///   "extensions":{"cost":{"requestedQueryCost":110,"actualQueryCost":null,
    ///   "throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":10,"restoreRate":50.0}}}}"#;
    /// let cost = QueryCost::from_body(body);
    /// let reading = Rules::default().read_with_cost(StatusCode::OK, &HeaderMap::new(), None,
    ///     cost.as_ref(), SystemTime::now(), Duration::from_secs(60));
    /// assert_eq!(reading.signal(), Signal::Throttled { retry_after: Some(Duration::from_secs(2)) });
    /// ```
    #[must_use]
    #[inline]
    pub fn read_with_cost(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: Option<&BodyVerdict>,
        cost: Option<&QueryCost>,
        wall: impl WallTime,
        max_retry_after: Duration,
    ) -> Reading {
        let mut wall = LazyWall::new(wall);
        let (mut info, age) = crate::headers::parse_with_age(headers, || wall.get());
        if !self.dialects.is_empty() {
            info =
                crate::headers::apply_declared(&self.dialects, headers, &mut || wall.get(), info);
        }
        let mut refused_for_cost = false;
        if let Some(cost) = cost {
            if let Some(policy) = cost.policy() {
                info = info.with_policy(policy);
            }
            refused_for_cost = cost.throttled();
            if let Some(wait) = cost.wait().filter(|_| refused_for_cost)
                && info.retry_after().is_none()
            {
                info = info.with_retry_after(wait);
            }
        }
        if info.is_empty() && body.is_none() && !refused_for_cost {
            // No field and no body's word (most responses): nothing to bound or keep, the same
            // reading as below.
            let signal = self.classifier.classify(status, headers, &info);
            let throttled = matches!(signal, Signal::Throttled { .. });
            return Reading {
                signal,
                reports: false,
                from_cache: false,
                info,
                unit_policies: None,
                retry_refused: throttled && forbids_retry(headers),
                quota_exhausted: false,
                refusal: self.refusal(throttled, status, headers, None),
            };
        }
        let quota_exhausted = matches!(body, Some(BodyVerdict::QuotaExhausted { .. }));
        // A body that says why a request was refused makes it a throttle whatever the status
        // (GitHub's secondary limits come as 403s that need not say `Retry-After`).
        let refused_by_body = matches!(
            body,
            Some(BodyVerdict::Penalty | BodyVerdict::Contention { .. })
        );
        // An account out of credit is not a throttle: waiting will not help.
        let signal = if quota_exhausted {
            Signal::Neutral
        } else if refused_for_cost || refused_by_body {
            Signal::Throttled {
                retry_after: info.retry_after(),
            }
        } else {
            self.classifier.classify(status, headers, &info)
        };
        let throttled = matches!(signal, Signal::Throttled { .. });
        let mut refusal = self.refusal(throttled, status, headers, body);
        if throttled && refusal == RefusalClass::Rate && units::refused_for_units(&info) {
            refusal = RefusalClass::Tokens;
        }
        // The quotas in other units (tokens) as the server sent them: advice bounds an exhausted
        // policy's reset to one unit's interval, which is not the time its tokens take to return.
        let unit_policies = units::unit_policies(&info);
        // Only a throttle can stop the endpoint: on any other response a Retry-After is a hint
        // (RFC 9110 §10.2.3) and the rate-limit fields are advice on the pace.
        let info = if matches!(signal, Signal::Throttled { .. }) {
            info
        } else {
            info.into_advisory()
        };
        let reports = !info.is_empty();
        // Bounded once, here, so that a bounded stop also ends (see `RateLimitInfo::bounded`).
        let info = if reports {
            info.into_bounded(max_retry_after, self.server_stop.max_exhausted_delay())
        } else {
            info
        };
        let throttled = matches!(signal, Signal::Throttled { .. });
        Reading {
            signal,
            reports,
            // Only a reading that reports fields has anything a cache could have made stale.
            from_cache: reports
                && match age {
                    Age::Seen(age) => age.is_some_and(positive_age),
                    Age::Unknown => headers.get(http::header::AGE).is_some_and(positive_age),
                },
            info,
            unit_policies,
            // Only a throttle is sent again: the other responses need no look at the header.
            retry_refused: throttled
                && (matches!(body, Some(BodyVerdict::NoRetry)) || forbids_retry(headers)),
            quota_exhausted,
            refusal,
        }
    }

    /// Why a throttle was refused: what its body said, else the classifier's reading of its
    /// headers ([`ThrottleClassifier::refusal`]). Not a throttle: [`RefusalClass::Rate`], unread.
    fn refusal(
        &self,
        throttled: bool,
        status: StatusCode,
        headers: &HeaderMap,
        body: Option<&BodyVerdict>,
    ) -> RefusalClass {
        match body {
            _ if !throttled => RefusalClass::Rate,
            Some(BodyVerdict::Penalty) => RefusalClass::Penalty,
            Some(BodyVerdict::Contention { .. }) => RefusalClass::Contention,
            _ => self.classifier.refusal(status, headers),
        }
    }

    /// What an endpoint's server state asks of the next request: a server-ordered stop (a
    /// `Retry-After` capped by `max_retry_after`, or an exhausted quota until its reset), else
    /// (unless `stop_only`) the proactive algorithm's delay. `states` is every endpoint's state,
    /// for the algorithms that look across endpoints. Pure.
    #[must_use]
    pub fn hold(
        &self,
        key: &str,
        snapshot: &EndpointSnapshot,
        states: &dyn RateLimitStateProvider,
        max_retry_after: Duration,
        stop_only: bool,
    ) -> Hold {
        let Some(info) = snapshot.info() else {
            return Hold::NONE;
        };
        // Quotas in other units (tokens) are paced by their budgets, with the request's cost.
        let requests_only = units::without_budget_units(info);
        let info = requests_only.as_ref().unwrap_or(info);
        if info.is_empty() {
            return Hold::NONE;
        }
        if let Some(stop) = self.server_stop.evaluate(info) {
            let wait = match stop.cause() {
                StopCause::RetryAfter => stop.delay().min(max_retry_after),
                _ => stop.delay(),
            };
            return Hold {
                wait,
                cause: WaitCause::ServerStop,
            };
        }
        if stop_only {
            return Hold {
                wait: Duration::ZERO,
                cause: WaitCause::ServerStop,
            };
        }
        let Some(algorithm) = &self.algorithm else {
            return Hold::NONE;
        };
        let ctx = ThrottlingContext::new(info, key)
            .with_since_observed(snapshot.since_observed())
            .with_since_last_request(snapshot.since_last_request())
            .with_states(states);
        let result = algorithm.evaluate(&ctx);
        if result.should_throttle() {
            tracing::debug!(
                delay_ms = result.delay().as_millis() as u64,
                reason = result.reason().unwrap_or(""),
                "proactive delay"
            );
        }
        Hold {
            wait: result.delay(),
            cause: WaitCause::Throttling,
        }
    }
}

impl Rules {
    /// `true` when [`hold`](Self::hold) (not `stop_only`) gives no wait on any state aged from
    /// `info`, the state as it was reported: no stop is ordered in it, and the algorithm, if
    /// any, could not delay on it ([`ThrottlingAlgorithm::may_throttle`]). The look before a
    /// send then needs no aged copy.
    pub(crate) fn holds_nothing(&self, info: &RateLimitInfo) -> bool {
        !ServerStopPolicy::may_stop(info)
            && self
                .algorithm
                .as_ref()
                .is_none_or(|algorithm| !algorithm.may_throttle(info))
    }
}

/// The wall time, read once, when a field first needs it (the built-in dialects' and the
/// declared ones' alike).
struct LazyWall<W> {
    source: Option<W>,
    read: Option<SystemTime>,
}

impl<W: WallTime> LazyWall<W> {
    #[inline]
    fn new(source: W) -> Self {
        LazyWall {
            source: Some(source),
            read: None,
        }
    }

    fn get(&mut self) -> SystemTime {
        if let Some(t) = self.read {
            return t;
        }
        // Read at most once: `source` is taken with its first read.
        let t = self
            .source
            .take()
            .map_or(SystemTime::UNIX_EPOCH, WallTime::wall_time);
        self.read = Some(t);
        t
    }
}

/// A response from a cache tells nothing of the quota now (draft-ietf-httpapi-ratelimit-headers):
/// an `Age` above zero.
fn positive_age(age: &http::HeaderValue) -> bool {
    age.to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|age| age > 0)
}

/// The statuses whose JSON body a driver reads for the classifier: a 429, and a 403 (GitHub's
/// secondary limits say so only in their body).
fn refusal_with_body(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::FORBIDDEN
}

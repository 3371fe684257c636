//! One named limiter's settings: everything a limiter has besides its name.

use crate::{
    CostEstimator, EndpointKeyExtractor, KeyMode, StrictWindow, ThrottleClassifier, UnitCost,
};
use pacer_core::{
    Controller, ControllerFactory, DeclaredDialect, Fleet, FleetOptions, FleetStore,
    LimiterOptions, Rules, ServerStopPolicy, ThrottlingAlgorithm,
};
use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// Says how many tokens a request costs before it is sent, or `None` when it cannot tell (see
/// [`LimiterConfig::token_estimator`]).
pub type TokenEstimator = Arc<dyn Fn(&reqwest::Request) -> Option<u64> + Send + Sync>;

/// The settings of one named limiter: its adaptive options, and the pieces that read requests
/// and responses. Every piece has a default; set only what you need.
///
/// ```
/// use pacer_core::LimiterOptions;
/// use reqwest_pacer::{KeyMode, LimiterConfig};
///
/// let mut options = LimiterOptions::default();
/// options.max_units_per_minute = 1200.0;
/// let config = LimiterConfig::new(options).endpoint_key(KeyMode::Host);
/// assert_eq!(config.options().max_units_per_minute, 1200.0);
/// ```
#[derive(Clone)]
#[must_use]
pub struct LimiterConfig {
    pub(crate) options: LimiterOptions,
    pub(crate) controller: Option<ControllerFactory>,
    /// The classifier, the server-stop policy and the proactive algorithm: the engine's rules.
    pub(crate) rules: Rules,
    pub(crate) key: Arc<dyn EndpointKeyExtractor>,
    /// `key`, when it is one of the built-in modes (their keys can often be read from the URL
    /// without a copy).
    pub(crate) key_mode: Option<KeyMode>,
    pub(crate) cost: Arc<dyn CostEstimator>,
    pub(crate) tokens: Option<TokenEstimator>,
    pub(crate) max_endpoints: usize,
    pub(crate) endpoint_idle_ttl: Duration,
    pub(crate) windows: Vec<StrictWindow>,
    /// The fleet every endpoint's limiter joins, if any.
    pub(crate) fleet: Option<Fleet>,
}

impl Default for LimiterConfig {
    fn default() -> Self {
        LimiterConfig::new(LimiterOptions::default())
    }
}

impl LimiterConfig {
    /// Settings with these adaptive options and every piece at its default.
    pub fn new(options: LimiterOptions) -> Self {
        LimiterConfig {
            options,
            controller: None,
            rules: Rules::default(),
            key: Arc::new(KeyMode::SchemeHostPort),
            key_mode: Some(KeyMode::SchemeHostPort),
            cost: Arc::new(UnitCost),
            tokens: None,
            max_endpoints: 10_000,
            endpoint_idle_ttl: Duration::from_secs(3600),
            windows: Vec::new(),
            fleet: None,
        }
    }

    /// The adaptive options.
    #[must_use]
    pub fn options(&self) -> &LimiterOptions {
        &self.options
    }

    /// Replaces the adaptive options.
    pub fn with_options(mut self, options: LimiterOptions) -> Self {
        self.options = options;
        self
    }

    /// A controller of your own, made anew for each endpoint (the `Controller` option is then
    /// ignored). A [`RateController`](pacer_core::RateController) runs in a
    /// [`PureController`](pacer_core::PureController): `.controller(|| PureController::new(Mine))`.
    pub fn controller<F, C>(mut self, make: F) -> Self
    where
        F: Fn() -> C + Send + Sync + 'static,
        C: Controller,
    {
        self.controller = Some(Arc::new(move || Box::new(make()) as Box<dyn Controller>));
        self
    }

    /// The proactive throttling algorithm that turns rate-limit headers into a delay before a
    /// request. Default [`Percentage`](pacer_core::Percentage).
    pub fn throttling(mut self, algorithm: impl ThrottlingAlgorithm + 'static) -> Self {
        self.rules = self.rules.with_algorithm(Some(Arc::new(algorithm)));
        self
    }

    /// `MaxAttempts`: how many times a throttled request is sent in all, counting the first.
    /// Default 4 ([`Rules::DEFAULT_MAX_ATTEMPTS`]); 1 never sends one again (and keeps no copy
    /// of a request for it).
    pub fn max_attempts(mut self, max_attempts: NonZeroU32) -> Self {
        self.rules = self.rules.with_max_attempts(max_attempts);
        self
    }

    /// `QueryCost`: read the body of each JSON response for a GraphQL query's calculated cost
    /// (Shopify's `extensions.cost`, [`QueryCost`](pacer_core::QueryCost)). The bucket it
    /// reports paces the endpoint like any rate-limit header, and a query refused for want of
    /// points (`THROTTLED`, even with a 200) is a throttle, retried once its points are back.
    /// Off by default. When on, each JSON response reaches the caller only once its body is read
    /// (up to [`QUERY_COST_BODY_LIMIT`](pacer_core::QUERY_COST_BODY_LIMIT); a longer one is
    /// handed on unread, its cost unknown).
    ///
    /// ```
    /// use reqwest_pacer::LimiterConfig;
    ///
    /// let shopify = LimiterConfig::default().query_cost(true);
    /// assert!(shopify.reads_query_cost());
    /// ```
    pub fn query_cost(mut self, read: bool) -> Self {
        self.rules = self.rules.with_query_cost(read);
        self
    }

    /// Whether the body of each JSON response is read for a GraphQL query's cost
    /// ([`query_cost`](Self::query_cost)).
    #[must_use]
    pub fn reads_query_cost(&self) -> bool {
        self.rules.reads_query_cost()
    }

    /// Adds a dialect declared for an API whose rate-limit fields no built-in dialect reads
    /// (`Dialects` in configuration): its fields are read from every response after the
    /// built-in ones, into policies that pace and stop the endpoint as a built-in dialect's do
    /// ([`Rules::with_dialect`]).
    ///
    /// ```
    /// use reqwest_pacer::{DeclaredDialect, LimiterConfig};
    /// use std::time::Duration;
    ///
    /// let freshdesk = DeclaredDialect::builder("freshdesk")
    ///     .limit("X-Ratelimit-Total")
    ///     .remaining("X-Ratelimit-Remaining")
    ///     .window(Duration::from_secs(60))
    ///     .build()?;
    /// let config = LimiterConfig::default().dialect(freshdesk);
    /// assert_eq!(config.dialects()[0].name(), "freshdesk");
    /// # Ok::<(), pacer_core::InvalidOptions>(())
    /// ```
    pub fn dialect(mut self, dialect: DeclaredDialect) -> Self {
        self.rules = self.rules.with_dialect(dialect);
        self
    }

    /// The declared dialects ([`dialect`](Self::dialect)).
    #[must_use]
    pub fn dialects(&self) -> &[DeclaredDialect] {
        self.rules.dialects()
    }

    /// Replaces the engine's rules whole: the classifier, the server-stop policy, the
    /// proactive algorithm, `MaxAttempts`, `QueryCost` and the declared dialects (what
    /// [`classifier`](Self::classifier), [`server_stop`](Self::server_stop),
    /// [`throttling`](Self::throttling), [`max_attempts`](Self::max_attempts),
    /// [`query_cost`](Self::query_cost) and [`dialect`](Self::dialect) set one by one).
    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }

    /// No proactive throttling: headers still feed the server-ordered stop (`Retry-After`, or
    /// nothing remaining until the reset), which always applies.
    pub fn no_throttling(mut self) -> Self {
        self.rules = self.rules.with_algorithm(None);
        self
    }

    /// The cap on a stop for an exhausted quota (remaining 0 until a reset). Default 5 min.
    pub fn server_stop(mut self, policy: ServerStopPolicy) -> Self {
        self.rules = self.rules.with_server_stop(policy);
        self
    }

    /// The classifier of responses. Default [`DefaultClassifier`](crate::DefaultClassifier).
    pub fn classifier(mut self, classifier: impl ThrottleClassifier) -> Self {
        self.rules = self.rules.with_classifier(Arc::new(classifier));
        self
    }

    /// How requests are keyed. Default [`KeyMode::SchemeHostPort`].
    pub fn endpoint_key(mut self, key: impl EndpointKeyExtractor) -> Self {
        self.key_mode = (&key as &dyn std::any::Any)
            .downcast_ref::<KeyMode>()
            .copied();
        self.key = Arc::new(key);
        self
    }

    /// What a request costs. Default [`UnitCost`]: 1 unit.
    pub fn cost(mut self, estimator: impl CostEstimator) -> Self {
        self.cost = Arc::new(estimator);
        self
    }

    /// What a request costs in tokens, for the quotas the server reports in tokens (OpenAI's
    /// `x-ratelimit-*-tokens`, Anthropic's `tokens` and `input-tokens`). A [`TokenCost`]
    /// extension on a request wins over it; `None` means "unknown". Default: none, every
    /// request's token cost is unknown, and a tokens quota holds it only while exhausted.
    ///
    /// The estimate is what the server counts before it answers: for OpenAI, the prompt's tokens
    /// plus `max_tokens`. A rough count (a quarter of the body's bytes) is better than none.
    ///
    /// [`TokenCost`]: crate::TokenCost
    ///
    /// ```
    /// use reqwest_pacer::LimiterConfig;
    ///
    /// // About four bytes a token, plus the 256 tokens a completion may take.
    /// let config = LimiterConfig::default().token_estimator(|request: &reqwest::Request| {
    ///     let bytes = request.body()?.as_bytes()?.len() as u64;
    ///     Some(bytes / 4 + 256)
    /// });
    /// let mut request = reqwest::Request::new(
    ///     reqwest::Method::POST,
    ///     "https://api.openai.com/v1/chat/completions".parse().unwrap(),
    /// );
    /// *request.body_mut() = Some(vec![b'x'; 400].into());
    /// assert_eq!(config.estimate_tokens(&request), Some(356));
    /// ```
    pub fn token_estimator<F>(mut self, estimate: F) -> Self
    where
        F: Fn(&reqwest::Request) -> Option<u64> + Send + Sync + 'static,
    {
        self.tokens = Some(Arc::new(estimate));
        self
    }

    /// What the token estimator says `request` costs in tokens; `None` without an estimator.
    #[must_use]
    pub fn estimate_tokens(&self, request: &reqwest::Request) -> Option<u64> {
        self.tokens.as_ref().and_then(|estimate| estimate(request))
    }

    /// At most this many endpoints keep state (the least recently used idle one makes room).
    /// Default 10,000.
    pub fn max_endpoints(mut self, max: usize) -> Self {
        self.max_endpoints = max.max(1);
        self
    }

    /// An endpoint idle this long forgets its rate and header state. Default 1 h.
    pub fn endpoint_idle_ttl(mut self, ttl: Duration) -> Self {
        self.endpoint_idle_ttl = ttl;
        self
    }

    /// Adds a strict window: at most its limit in any span of its length, per key, in every
    /// process that shares its store. Its wait counts against `MaxWait`.
    pub fn window(mut self, window: StrictWindow) -> Self {
        self.windows.push(window);
        self
    }

    /// The strict windows.
    #[must_use]
    pub fn windows(&self) -> &[StrictWindow] {
        &self.windows
    }

    /// Shares each endpoint's learned rate with every process that uses the same `store`
    /// (a [`RedisFleetStore`](https://docs.rs/pacer-redis) for processes on many machines): the
    /// endpoint's limiter is a member of the fleet `limiter name : endpoint key`, counted while
    /// it lives (the live count replaces `InstanceCount`), with **one** controller for the whole
    /// budget kept in the store. A throttle any member sees cuts the fleet's rate once, and each
    /// member sends its share of it. The Pacer controller (whatever `Controller` says; a
    /// controller of one's own is not used) runs the fleet, and each member's own runs while the
    /// store does not answer. Members sync every `options.period` beside the requests; no
    /// request waits on the store. See `docs/fleet.md`.
    pub fn fleet(mut self, store: Arc<dyn FleetStore>, options: FleetOptions) -> Self {
        self.fleet = Some(Fleet::new(store, options));
        self
    }

    /// The proactive algorithm, if any.
    #[must_use]
    pub fn throttling_algorithm(&self) -> Option<&Arc<dyn ThrottlingAlgorithm>> {
        self.rules.algorithm()
    }
}

impl fmt::Debug for LimiterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimiterConfig")
            .field("options", &self.options)
            .field("custom_controller", &self.controller.is_some())
            .field("rules", &self.rules)
            .field("key", &self.key)
            .field("cost", &self.cost)
            .field("token_estimator", &self.tokens.is_some())
            .field("max_endpoints", &self.max_endpoints)
            .field("endpoint_idle_ttl", &self.endpoint_idle_ttl)
            .field("windows", &self.windows)
            .field("fleet", &self.fleet)
            .finish()
    }
}

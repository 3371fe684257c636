//! `PacerMiddleware`: named limiters, and reading their state from code.

use crate::named::Named;
use crate::{LimiterConfig, PacerError};
use pacer_core::{
    Clock, InvalidOption, InvalidOptions, LimiterOptions, LimiterSnapshot, RateLimitInfo,
    RealClock, ServerModel, UnitBudgets,
};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The name of the limiter a middleware made with [`PacerMiddleware::new`] or without any
/// limiter has.
pub const DEFAULT_LIMITER: &str = "default";

/// Client-side rate limiting as a `reqwest_middleware::Middleware`.
///
/// Each request goes through one named limiter (the default, or the one a
/// [`UseLimiter`](crate::UseLimiter) extension names) and, within it, through the state of its
/// endpoint key. The middleware waits for what the server ordered, for the proactive delay the
/// rate-limit headers call for and for the units of the adaptive limiter — all within one
/// `MaxWait` — then sends, reads the response, adapts, and retries a throttled request up to
/// `MaxAttempts` times. See the crate docs for the whole flow.
///
/// Cheap to clone: clones share their limiters.
///
/// ```
/// use reqwest_middleware::ClientBuilder;
/// use reqwest_pacer::PacerMiddleware;
///
/// let pacer = PacerMiddleware::default();
/// let client = ClientBuilder::new(reqwest::Client::new()).with(pacer.clone()).build();
/// # let _ = client;
/// ```
#[derive(Clone)]
pub struct PacerMiddleware {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) limiters: BTreeMap<Arc<str>, Arc<Named>>,
    pub(crate) default: Arc<Named>,
}

impl Default for PacerMiddleware {
    /// One limiter named `default` with the default options.
    fn default() -> Self {
        PacerMiddleware::new(LimiterOptions::default()).expect("the default options are valid")
    }
}

impl PacerMiddleware {
    /// One limiter named `default` with these options and every other piece at its default.
    pub fn new(options: LimiterOptions) -> Result<Self, InvalidOptions> {
        PacerMiddleware::builder()
            .limiter(DEFAULT_LIMITER, LimiterConfig::new(options))
            .build()
            .map_err(|e| match e {
                BuildError::InvalidOptions { errors, .. } => errors,
                BuildError::UnknownDefault(_) => unreachable!("the default limiter is added"),
            })
    }

    /// A builder, to add named limiters.
    pub fn builder() -> PacerBuilder {
        PacerBuilder::default()
    }

    pub(crate) fn named(&self, name: Option<&str>) -> Result<&Arc<Named>, PacerError> {
        match name {
            None => Ok(&self.inner.default),
            Some(name) => self
                .inner
                .limiters
                .get(name)
                .ok_or_else(|| PacerError::UnknownLimiter(name.to_owned())),
        }
    }

    /// The names of the limiters, in order.
    #[must_use]
    pub fn limiter_names(&self) -> Vec<&str> {
        self.inner.limiters.keys().map(|k| &**k).collect()
    }

    /// The name of the default limiter.
    #[must_use]
    pub fn default_limiter(&self) -> &str {
        &self.inner.default.name
    }

    /// The options a limiter applies now.
    pub fn options(&self, limiter: &str) -> Result<LimiterOptions, PacerError> {
        Ok(self.named(Some(limiter))?.options())
    }

    /// The endpoint keys a limiter keeps an adaptive rate for, sorted.
    pub fn endpoints(&self, limiter: &str) -> Result<Vec<String>, PacerError> {
        Ok(self
            .named(Some(limiter))?
            .engine
            .limiters()
            .into_iter()
            .map(|(k, _)| k.to_string())
            .collect())
    }

    /// What a limiter knows of one endpoint now: its adaptive limiter (rate, queue, pause,
    /// counters) and the rate-limit state the server last reported, adjusted for the time since.
    pub fn state(&self, limiter: &str, endpoint: &str) -> Result<EndpointState, PacerError> {
        let named = self.named(Some(limiter))?;
        let now = named.clock.now();
        let found = named.engine.find(endpoint);
        Ok(EndpointState {
            limiter: found.as_ref().map(|e| e.limiter().snapshot()),
            server: found.as_ref().and_then(|e| e.server_model()),
            budgets: found.as_ref().map(|e| e.budgets(now)).unwrap_or_default(),
            headers: found.and_then(|e| e.server_state(now)),
        })
    }

    /// What every limiter's endpoints learnt (the rate each holds requests to, its controller's
    /// estimate of the limit), to keep across a restart: serialize it (serde), and give it to
    /// [`recall`](Self::recall) in the next process. An endpoint that has not limited yet
    /// learnt nothing and is left out.
    ///
    /// ```
    /// # use reqwest_pacer::PacerMiddleware;
    /// let pacer = PacerMiddleware::default();
    /// let memory = pacer.remember();
    /// let json = serde_json::to_string(&memory).unwrap();
    /// // … in the next process …
    /// let memory = serde_json::from_str(&json).unwrap();
    /// let recalled = PacerMiddleware::default().recall(&memory);
    /// assert_eq!(recalled.endpoints, 0, "nothing was learnt");
    /// ```
    #[must_use]
    pub fn remember(&self) -> pacer_core::PacerMemory {
        let mut memory = pacer_core::PacerMemory::new(self.inner.default.clock.system_now());
        for (name, named) in &self.inner.limiters {
            let endpoints = named.engine.remember();
            if !endpoints.is_empty() {
                memory.limiters.insert(name.to_string(), endpoints);
            }
        }
        memory
    }

    /// Starts each endpoint of `memory` ([`remember`](Self::remember)'s, from an earlier
    /// process) where it was: limiting at its share of the rate it held, its controller from
    /// the estimate it had, instead of learning the limit again. Not recalled: a limiter's
    /// endpoints when the memory is older than its `EndpointIdleTtl` (1 h by default, the age
    /// at which an idle endpoint forgets what it learnt), an endpoint that has already learnt
    /// on its own, and endpoints of a limiter in a fleet (the store keeps the fleet's state).
    pub fn recall(&self, memory: &pacer_core::PacerMemory) -> pacer_core::Recalled {
        let mut recalled = pacer_core::Recalled::default();
        for (name, endpoints) in &memory.limiters {
            let Some(named) = self.inner.limiters.get(name.as_str()) else {
                recalled.unknown_limiters.push(name.clone());
                continue;
            };
            let age = memory.age(named.clock.system_now());
            named.recall(endpoints, age, &mut recalled);
        }
        recalled
    }

    /// Drops, in every limiter, the state of endpoints idle longer than their idle TTL (this also
    /// happens by itself, amortised over requests). Returns how many adaptive limiters were
    /// dropped.
    pub fn evict_idle(&self) -> usize {
        self.inner
            .limiters
            .values()
            .map(|named| {
                let now = named.clock.now();
                named.engine.evict_idle(now, |gone| named.forget(gone))
            })
            .sum()
    }

    /// How many endpoints a limiter keeps an adaptive rate for.
    pub fn endpoint_count(&self, limiter: &str) -> Result<usize, PacerError> {
        Ok(self.named(Some(limiter))?.engine.len())
    }

    /// Replaces a limiter's options at run time, for every endpoint: each keeps its current rate,
    /// moved only into the new `[Min, Max]` (a configuration reload does this). Invalid options
    /// change nothing.
    pub fn update_options(
        &self,
        limiter: &str,
        options: LimiterOptions,
    ) -> Result<(), UpdateError> {
        let named = self.named(Some(limiter)).map_err(UpdateError::Limiter)?;
        named.update_options(options).map_err(UpdateError::Invalid)
    }

    /// Replaces a limiter's settings at run time: its pieces (key mode, cost estimator,
    /// classifier, throttling algorithm, server-stop policy) apply to the next request, its
    /// options as [`update_options`](Self::update_options) applies them, and a new controller
    /// factory to endpoints met from now on. The endpoint capacity and idle TTL stay as built.
    pub fn update_config(&self, limiter: &str, config: LimiterConfig) -> Result<(), UpdateError> {
        let named = self.named(Some(limiter)).map_err(UpdateError::Limiter)?;
        named.update_config(config).map_err(UpdateError::Invalid)
    }

    /// The settings a limiter applies now.
    pub fn config(&self, limiter: &str) -> Result<LimiterConfig, PacerError> {
        let named = self.named(Some(limiter))?;
        let mut config = (*named.config()).clone();
        config.options = named.options();
        Ok(config)
    }

    /// Sets the number of processes that share a limiter's budget, live (see
    /// [`pacer_core::Limiter::set_instance_count`]).
    pub fn set_instance_count(&self, limiter: &str, count: u32) -> Result<(), UpdateError> {
        let named = self.named(Some(limiter)).map_err(UpdateError::Limiter)?;
        named
            .set_instance_count(count)
            .map_err(|e| UpdateError::Invalid(e.into()))
    }
}

impl fmt::Debug for PacerMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacerMiddleware")
            .field("limiters", &self.limiter_names())
            .field("default", &self.default_limiter())
            .finish()
    }
}

/// What a limiter knows of one endpoint.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EndpointState {
    /// The adaptive limiter, if a request has gone to this endpoint (and it was not evicted).
    pub limiter: Option<LimiterSnapshot>,
    /// The rate-limit state the server reported, if it is not spent.
    pub headers: Option<RateLimitInfo>,
    /// What this process has learned of the server's limiter (its kind, limit and window),
    /// once the endpoint has been refused ([`ServerModel`]).
    pub server: Option<ServerModel>,
    /// Its budgets in other units than requests (tokens, input and output tokens) now: as the
    /// server last reported them, less what this process reserved and settled since, refilled
    /// to now ([`UnitBudget::left`](pacer_core::UnitBudget::left) reads each); empty when the
    /// server reports none.
    pub budgets: UnitBudgets,
}

/// A run-time change could not be applied; nothing changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateError {
    /// No such limiter.
    #[error(transparent)]
    Limiter(PacerError),
    /// The new values are invalid.
    #[error(transparent)]
    Invalid(InvalidOptions),
}

impl From<InvalidOption> for UpdateError {
    fn from(e: InvalidOption) -> Self {
        UpdateError::Invalid(e.into())
    }
}

/// Builds a [`PacerMiddleware`] with named limiters.
///
/// ```
/// use pacer_core::LimiterOptions;
/// use reqwest_pacer::{LimiterConfig, PacerMiddleware};
///
/// let mut search = LimiterOptions::default();
/// search.min_units_per_minute = 10.0;
/// search.max_units_per_minute = 30.0;
/// search.initial_units_per_minute = Some(30.0);
/// let pacer = PacerMiddleware::builder()
///     .limiter("core-api", LimiterConfig::default())
///     .limiter("search-api", LimiterConfig::new(search))
///     .default_limiter("core-api")
///     .build()
///     .unwrap();
/// assert_eq!(pacer.limiter_names(), ["core-api", "search-api"]);
/// ```
#[must_use]
#[derive(Default)]
pub struct PacerBuilder {
    limiters: Vec<(String, LimiterConfig)>,
    default: Option<String>,
    clock: Option<Arc<dyn Clock>>,
}

impl fmt::Debug for PacerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacerBuilder")
            .field("limiters", &self.limiters)
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}

impl PacerBuilder {
    /// Adds (or replaces) the limiter `name`.
    pub fn limiter(mut self, name: impl Into<String>, config: LimiterConfig) -> Self {
        let name = name.into();
        self.limiters.retain(|(n, _)| *n != name);
        self.limiters.push((name, config));
        self
    }

    /// The limiter requests use when they do not name one. Default: the first one added (or a
    /// limiter named `default` with the default options, if none was added).
    pub fn default_limiter(mut self, name: impl Into<String>) -> Self {
        self.default = Some(name.into());
        self
    }

    /// The clock of every limiter. Default [`RealClock`].
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Validates every limiter's options and builds the middleware.
    pub fn build(mut self) -> Result<PacerMiddleware, BuildError> {
        if self.limiters.is_empty() {
            self.limiters
                .push((DEFAULT_LIMITER.to_owned(), LimiterConfig::default()));
        }
        let clock = self.clock.unwrap_or_else(|| Arc::new(RealClock::new()));
        let default = self.default.unwrap_or_else(|| self.limiters[0].0.clone());
        let mut limiters = BTreeMap::new();
        for (name, config) in self.limiters {
            let name: Arc<str> = Arc::from(name);
            let named =
                Named::new(Arc::clone(&name), config, Arc::clone(&clock)).map_err(|errors| {
                    BuildError::InvalidOptions {
                        limiter: name.to_string(),
                        errors,
                    }
                })?;
            limiters.insert(name, Arc::new(named));
        }
        let default = limiters
            .get(default.as_str())
            .cloned()
            .ok_or(BuildError::UnknownDefault(default))?;
        Ok(PacerMiddleware {
            inner: Arc::new(Inner { limiters, default }),
        })
    }
}

/// The middleware could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A limiter's options are invalid.
    #[error("limiter {limiter:?}: {errors}")]
    InvalidOptions {
        /// The limiter.
        limiter: String,
        /// Every invalid option.
        errors: InvalidOptions,
    },
    /// The default limiter names no limiter that was added.
    #[error("the default limiter {0:?} was not added")]
    UnknownDefault(String),
}

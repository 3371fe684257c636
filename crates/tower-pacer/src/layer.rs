//! `PacerLayer`: the settings and the engine its services share.

use crate::PacerService;
use crate::ServerModel;
#[cfg(feature = "config")]
use crate::SettingsError;
use http::{HeaderMap, Method, Uri};
use pacer_core::{
    Clock, Controller, ControllerFactory, Engine, Fleet, FleetOptions, FleetStore, InvalidOption,
    InvalidOptions, KeyMode, LimiterMetrics, LimiterOptions, RealClock, Rules, UnitBudgets,
    WindowLimit,
};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tower_layer::Layer;

mod shared;
pub(crate) use shared::Shared;

/// What a request costs, in units, from its method, URI and headers.
type CostFn = dyn Fn(&Method, &Uri, &HeaderMap) -> u64 + Send + Sync;

/// What a request costs in tokens, from its method, URI and headers, if it can tell.
type TokensFn = dyn Fn(&Method, &Uri, &HeaderMap) -> Option<u64> + Send + Sync;

/// A strict window's key for a request, from its method, URI and headers (`None`: not counted).
pub(crate) type WindowKeyFn = dyn Fn(&Method, &Uri, &HeaderMap) -> Option<String> + Send + Sync;

/// Client-side rate limiting as a tower [`Layer`]. Cheap to clone: clones, and every service
/// they make, share one engine (one adaptive rate and one server state per endpoint key).
///
/// ```
/// use pacer_core::{KeyMode, LimiterOptions};
/// use std::num::NonZeroU32;
/// use tower_pacer::PacerLayer;
///
/// let layer = PacerLayer::builder(LimiterOptions::default())
///     .max_attempts(NonZeroU32::new(3).unwrap())
///     .endpoint_key(KeyMode::HostAndFirstSegment)
///     .cost(|method, _uri, _headers| if method == http::Method::POST { 5 } else { 1 })
///     .build()
///     .unwrap();
/// # let _ = layer;
/// ```
#[derive(Clone)]
pub struct PacerLayer {
    shared: Arc<Shared>,
}

impl fmt::Debug for PacerLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacerLayer")
            .field("name", &self.shared.name)
            .field("options", &self.shared.options)
            .field("rules", &self.shared.rules)
            .field("key", &self.shared.key)
            .field("engine", &self.shared.engine)
            .finish_non_exhaustive()
    }
}

impl PacerLayer {
    /// A layer with these options and every other setting at its default (the middleware's):
    /// [`Rules::default`], [`KeyMode::SchemeHostPort`], one unit per request, the real clock.
    pub fn new(options: LimiterOptions) -> Result<Self, InvalidOptions> {
        PacerLayer::builder(options).build()
    }

    /// A builder, for the other settings.
    pub fn builder(options: LimiterOptions) -> PacerLayerBuilder {
        PacerLayerBuilder {
            options,
            controller: None,
            rules: Rules::default(),
            key: KeyMode::default(),
            cost: None,
            tokens: None,
            clock: None,
            name: Arc::from("default"),
            max_endpoints: 10_000,
            endpoint_idle_ttl: Duration::from_secs(3600),
            windows: Vec::new(),
            window_keys: Vec::new(),
            fleet: None,
        }
    }

    /// A builder from a limiter of a configuration file (its options, `Throttling`,
    /// `MaxExhaustedDelay`, `Classifier`, `EndpointKey`, `MaxEndpoints`, `EndpointIdleTtl`): the
    /// layer then paces as the middleware built from the same settings does. Feature `config`.
    ///
    /// ```
    /// use pacer_config::{ConfigLoader, Format};
    /// use tower_pacer::PacerLayer;
    ///
    /// let toml = r#"
    /// [adaptive_rate_limiting.limiters.orders-api]
    /// max_units_per_minute = 1200
    /// endpoint_key = "Host"
    /// "#;
    /// let settings = ConfigLoader::new().string(toml, Format::Toml).load()?;
    /// let layer = PacerLayer::from_settings(settings.limiter("orders-api").unwrap())?
    ///     .name("orders-api")
    ///     .build()?;
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Its strict windows (`Windows`) come too, keyed by the endpoint key, and its fleet
    /// (`Fleet`), as [`fleet`](PacerLayerBuilder::fleet) makes one.
    ///
    /// # Errors
    ///
    /// [`SettingsError::Window`] when a window cannot be built (a geometry, Redis URL or store
    /// that loading would have refused, or a Redis store without pacer-config's `redis`
    /// feature): a window is never left out. [`SettingsError::Fleet`] the same for the fleet.
    /// [`SettingsError::Config`] for other settings made
    /// in code that loading would have refused.
    #[cfg(feature = "config")]
    #[cfg_attr(docsrs, doc(cfg(feature = "config")))]
    pub fn from_settings(
        settings: &pacer_config::LimiterSettings,
    ) -> Result<PacerLayerBuilder, SettingsError> {
        let mut builder = PacerLayer::builder(settings.options.clone())
            .rules(settings.rules()?)
            .endpoint_key(settings.endpoint_key)
            .max_endpoints(settings.max_endpoints)
            .endpoint_idle_ttl(settings.endpoint_idle_ttl);
        for window in &settings.windows {
            let limit = window
                .to_window_limit()
                .map_err(|message| SettingsError::Window {
                    name: window.name.clone(),
                    message,
                })?;
            builder = builder.window(limit);
        }
        if let Some(fleet) = &settings.fleet {
            let store = fleet.to_store().map_err(SettingsError::Fleet)?;
            builder = builder.fleet(store, fleet.options);
        }
        Ok(builder)
    }

    /// The strict windows every request goes through.
    #[must_use]
    pub fn windows(&self) -> &[WindowLimit] {
        &self.shared.windows
    }

    /// What the layer's endpoints learnt, to keep across a restart, under the layer's name
    /// (see `reqwest_pacer::PacerMiddleware::remember`): serialize it and give it to
    /// [`recall`](Self::recall) in the next process.
    #[must_use]
    pub fn remember(&self) -> pacer_core::PacerMemory {
        let shared = &self.shared;
        let mut memory = pacer_core::PacerMemory::new(shared.clock.system_now());
        let endpoints = shared.engine.remember();
        if !endpoints.is_empty() {
            memory.limiters.insert(shared.name.to_string(), endpoints);
        }
        memory
    }

    /// Starts each endpoint the memory has under the layer's name where it was (see
    /// `reqwest_pacer::PacerMiddleware::recall`): not when the memory is older than the
    /// layer's `endpoint_idle_ttl`, nor an endpoint that has learnt on its own, nor in a fleet.
    pub fn recall(&self, memory: &pacer_core::PacerMemory) -> pacer_core::Recalled {
        let shared = &self.shared;
        let mut recalled = pacer_core::Recalled::default();
        for (name, endpoints) in &memory.limiters {
            if **name != *shared.name {
                recalled.unknown_limiters.push(name.clone());
                continue;
            }
            let too_old = memory.age(shared.clock.system_now()) > shared.engine.idle_ttl();
            if too_old || shared.fleet.is_some() {
                recalled.skipped += endpoints.len();
                continue;
            }
            let now = shared.clock.now();
            for memory in endpoints {
                let changes = shared
                    .endpoint(&memory.key, now)
                    .limiter()
                    .recall(&memory.limiter);
                recalled.count(&changes);
                shared.metrics.record(&changes);
            }
        }
        recalled
    }

    /// What the layer knows of one endpoint key now: its adaptive limiter's state, if a request
    /// has gone there.
    #[must_use]
    pub fn limiter(&self, endpoint: &str) -> Option<pacer_core::LimiterSnapshot> {
        self.shared
            .engine
            .find(endpoint)
            .map(|e| e.limiter().snapshot())
    }

    /// What the layer has learned of one endpoint's server-side limiter (its kind, limit and
    /// window), once a request there has been refused ([`ServerModel`]).
    #[must_use]
    pub fn server_model(&self, endpoint: &str) -> Option<ServerModel> {
        self.shared
            .engine
            .find(endpoint)
            .and_then(|e| e.server_model())
    }

    /// One endpoint's budgets in other units than requests (tokens) now: as its server last
    /// reported them, less what the layer reserved and settled since, refilled to now
    /// ([`UnitBudget::left`](pacer_core::UnitBudget::left) reads each); empty when none was
    /// reported or no request went there.
    #[must_use]
    pub fn budgets(&self, endpoint: &str) -> UnitBudgets {
        let now = self.shared.clock.now();
        (self.shared.engine.find(endpoint))
            .map(|e| e.budgets(now))
            .unwrap_or_default()
    }

    /// Sets the number of processes that share the layer's budget, live, in every endpoint
    /// now and every one made later (the middleware's `set_instance_count`; see
    /// [`pacer_core::Limiter::set_instance_count`]): each takes its share of the rate, and a
    /// strict window's fallback its share of the window.
    ///
    /// ```
    /// use pacer_core::LimiterOptions;
    /// use tower_pacer::PacerLayer;
    ///
    /// let layer = PacerLayer::new(LimiterOptions::default())?;
    /// layer.set_instance_count(3)?;
    /// assert!(layer.set_instance_count(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`InvalidOption`] for 0, and nothing changes.
    pub fn set_instance_count(&self, count: u32) -> Result<(), InvalidOption> {
        let shared = &self.shared;
        if count == 0 {
            return Err(InvalidOption::new("InstanceCount", 0, "must be at least 1"));
        }
        shared.live_instance_count.store(count, Ordering::Relaxed);
        for (_, limiter) in shared.engine.limiters() {
            let changes = limiter.set_instance_count(count)?;
            shared.metrics.record(&changes);
        }
        Ok(())
    }
}

impl<S> Layer<S> for PacerLayer {
    type Service = PacerService<S>;

    fn layer(&self, inner: S) -> PacerService<S> {
        PacerService::new(inner, Arc::clone(&self.shared))
    }
}

/// Builds a [`PacerLayer`].
#[must_use]
pub struct PacerLayerBuilder {
    options: LimiterOptions,
    controller: Option<ControllerFactory>,
    rules: Rules,
    key: KeyMode,
    cost: Option<Arc<CostFn>>,
    tokens: Option<Arc<TokensFn>>,
    clock: Option<Arc<dyn Clock>>,
    name: Arc<str>,
    max_endpoints: usize,
    endpoint_idle_ttl: Duration,
    windows: Vec<WindowLimit>,
    /// Each window's key, when it is not the endpoint key.
    window_keys: Vec<Option<Arc<WindowKeyFn>>>,
    fleet: Option<Fleet>,
}

impl fmt::Debug for PacerLayerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacerLayerBuilder")
            .field("options", &self.options)
            .field("rules", &self.rules)
            .field("key", &self.key)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl PacerLayerBuilder {
    /// A controller of your own, made anew for each endpoint (the `Controller` option is then
    /// ignored; a fleet's members run the fleet's). A
    /// [`RateController`](pacer_core::RateController) runs in a
    /// [`PureController`](pacer_core::PureController): `.controller(|| PureController::new(Mine))`.
    ///
    /// ```
    /// use pacer_core::{LimiterOptions, PureController, RateController, RateControllerState};
    /// use tower_pacer::PacerLayer;
    ///
    /// /// Halves on a throttle, never climbs.
    /// #[derive(Debug)]
    /// struct Halve;
    ///
    /// impl RateController for Halve {
    ///     fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
    ///         state.rate / 2.0
    ///     }
    ///     fn on_success(&mut self, _: &RateControllerState) -> Option<f64> {
    ///         None
    ///     }
    /// }
    ///
    /// let layer = PacerLayer::builder(LimiterOptions::default())
    ///     .controller(|| PureController::new(Halve))
    ///     .build()?;
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn controller<F, C>(mut self, make: F) -> Self
    where
        F: Fn() -> C + Send + Sync + 'static,
        C: Controller,
    {
        self.controller = Some(Arc::new(move || Box::new(make()) as Box<dyn Controller>));
        self
    }

    /// How the engine reads responses, what it waits for and how often it sends a throttled
    /// request (the classifier, the server-stop policy, the proactive algorithm,
    /// `MaxAttempts`). Default [`Rules::default`].
    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }

    /// `MaxAttempts`: how many times a throttled request is sent in all, counting the first,
    /// while its body can be sent again. Default 4 ([`Rules::DEFAULT_MAX_ATTEMPTS`]).
    pub fn max_attempts(mut self, max_attempts: std::num::NonZeroU32) -> Self {
        self.rules = self.rules.with_max_attempts(max_attempts);
        self
    }

    /// Which requests share a rate. Default [`KeyMode::SchemeHostPort`].
    pub fn endpoint_key(mut self, key: KeyMode) -> Self {
        self.key = key;
        self
    }

    /// What a request costs, in units. Default 1. A request of 0 units neither waits nor moves
    /// the rate; its response still informs the endpoint's state.
    pub fn cost<F>(mut self, cost: F) -> Self
    where
        F: Fn(&Method, &Uri, &HeaderMap) -> u64 + Send + Sync + 'static,
    {
        self.cost = Some(Arc::new(cost));
        self
    }

    /// What a request costs in tokens, for the quotas in tokens a server reports (OpenAI's,
    /// Anthropic's), when its [`TokenCost`](pacer_core::TokenCost) does not say: from its
    /// method, URI and headers, or `None` when it cannot tell. Default none. A request with a
    /// cost in tokens waits for them and has them taken when it is sent; one without is held by
    /// a tokens quota only while that quota is exhausted.
    pub fn token_estimator<F>(mut self, tokens: F) -> Self
    where
        F: Fn(&Method, &Uri, &HeaderMap) -> Option<u64> + Send + Sync + 'static,
    {
        self.tokens = Some(Arc::new(tokens));
        self
    }

    /// The clock. Default [`RealClock`]; tests give a `ManualClock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The limiter's name, in its limiters' logs. Default `default`.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// The most endpoints kept (about; the least recently used idle one makes room). Default
    /// 10,000.
    pub fn max_endpoints(mut self, max: usize) -> Self {
        self.max_endpoints = max.max(1);
        self
    }

    /// How long an endpoint nobody waits on is kept unused. Default an hour.
    pub fn endpoint_idle_ttl(mut self, ttl: Duration) -> Self {
        self.endpoint_idle_ttl = ttl;
        self
    }

    /// Adds a strict window: at most its limit in any span of its length, per endpoint key, in
    /// every process that shares its store (the middleware's too: a window keyed by the endpoint
    /// has the same keys in the store from either driver). Its wait counts against `MaxWait`.
    pub fn window(mut self, window: WindowLimit) -> Self {
        self.windows.push(window);
        self.window_keys.push(None);
        self
    }

    /// Adds a strict window keyed by what `key` derives from the request (a user id, a tenant)
    /// instead of the endpoint key, as the middleware's `StrictWindow::keyed_by`; a request for
    /// which it returns `None` is not counted. Its keys in the store are `name:key`, the
    /// middleware's for the same key.
    ///
    /// ```
    /// use pacer_core::{LimiterOptions, ManualClock, MemoryWindowStore, WindowLimit};
    /// use std::time::Duration;
    /// use tower_pacer::PacerLayer;
    ///
    /// let store = MemoryWindowStore::new(ManualClock::new());
    /// let messages = WindowLimit::new("messages", 30, Duration::from_secs(600), store).unwrap();
    /// let layer = PacerLayer::builder(LimiterOptions::default())
    ///     .window_keyed_by(messages, |_, _, headers| {
    ///         headers.get("x-user").and_then(|v| v.to_str().ok()).map(String::from)
    ///     })
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(layer.windows().len(), 1);
    /// ```
    pub fn window_keyed_by<F>(mut self, window: WindowLimit, key: F) -> Self
    where
        F: Fn(&Method, &Uri, &HeaderMap) -> Option<String> + Send + Sync + 'static,
    {
        self.windows.push(window);
        self.window_keys.push(Some(Arc::new(key)));
        self
    }

    /// Shares each endpoint's learned rate with every process that uses the same `store` (a
    /// `pacer_redis::RedisFleetStore` for processes on many machines), as the middleware's
    /// `LimiterConfig::fleet` does: the endpoint's limiter is a member of the fleet
    /// `name : endpoint key` (the layer's [`name`](Self::name)), counted while it lives (the
    /// live count replaces `InstanceCount`), with **one** Pacer controller for the whole budget
    /// kept in the store. A middleware and a layer with the same name and endpoint key are
    /// members of one fleet. Each member syncs beside the requests in a task spawned on the
    /// tokio runtime its first request runs on (without one, the endpoint keeps its own
    /// control); no request waits on the store. See `docs/fleet.md`.
    ///
    /// ```
    /// use pacer_core::{FleetOptions, LimiterOptions, MemoryFleetStore, RealClock};
    /// use std::sync::Arc;
    /// use tower_pacer::PacerLayer;
    ///
    /// let store = Arc::new(MemoryFleetStore::new(RealClock::new()));
    /// let layer = PacerLayer::builder(LimiterOptions::default())
    ///     .name("orders")
    ///     .fleet(store, FleetOptions::default())
    ///     .build()
    ///     .unwrap();
    /// # let _ = layer;
    /// ```
    pub fn fleet(mut self, store: Arc<dyn FleetStore>, options: FleetOptions) -> Self {
        self.fleet = Some(Fleet::new(store, options));
        self
    }

    /// Validates the options and builds the layer.
    ///
    /// # Errors
    ///
    /// [`InvalidOptions`] for options out of range, a fleet's too (`Fleet.Period`, …).
    pub fn build(self) -> Result<PacerLayer, InvalidOptions> {
        self.options.validate()?;
        // A fleet's options are held to the rules a file's are.
        if let Some(fleet) = &self.fleet {
            fleet
                .options()
                .validate()
                .map_err(|e| e.prefixed("Fleet"))?;
        }
        Ok(PacerLayer {
            shared: Arc::new(Shared {
                metrics: LimiterMetrics::new(&self.name),
                engine: {
                    let engine = Engine::new(self.max_endpoints, self.endpoint_idle_ttl);
                    if self.key == KeyMode::DiscordRoute {
                        engine.group_by_bucket()
                    } else {
                        engine
                    }
                },
                options: self.options,
                controller: self.controller,
                live_instance_count: AtomicU32::new(0),
                rules: self.rules,
                key: self.key,
                cost: self.cost,
                tokens: self.tokens,
                clock: self.clock.unwrap_or_else(|| Arc::new(RealClock::new())),
                name: self.name,
                windows: self.windows,
                window_keys: self.window_keys,
                fleet: self.fleet,
            }),
        })
    }
}

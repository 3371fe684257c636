//! A named limiter at run time: its settings, its engine (everything known of each endpoint),
//! and its metrics.

use crate::LimiterConfig;
use pacer_core::{
    Changes, Clock, Endpoint, Engine, Fleet, FleetLink, InvalidOption, InvalidOptions, Limiter,
    LimiterMetrics, LimiterOptions, Timestamp,
};
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) struct Named {
    pub(crate) name: Arc<str>,
    /// The settings in force (the options and the pieces: key, cost, classifier, algorithm,
    /// controller factory); replaced whole by an update, read once per request.
    config: RwLock<Arc<LimiterConfig>>,
    /// The instance count set live; 0 while the options' applies.
    live_instance_count: AtomicU32,
    /// The endpoints, and the two calls that carry a request through them.
    pub(crate) engine: Engine,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) metrics: LimiterMetrics,
}

impl Named {
    pub(crate) fn new(
        name: Arc<str>,
        config: LimiterConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, InvalidOptions> {
        validate(&config)?;
        Ok(Named {
            metrics: LimiterMetrics::new(&name),
            live_instance_count: AtomicU32::new(0),
            engine: {
                let engine = Engine::new(config.max_endpoints, config.endpoint_idle_ttl);
                if config.key_mode == Some(pacer_core::KeyMode::DiscordRoute) {
                    engine.group_by_bucket()
                } else {
                    engine
                }
            },
            name,
            config: RwLock::new(Arc::new(config)),
            clock,
        })
    }

    pub(crate) fn options(&self) -> LimiterOptions {
        self.config.read().options.clone()
    }

    /// The instance count in force (set live, else that of the options in `config`).
    pub(crate) fn instance_count(&self, config: &LimiterConfig) -> u32 {
        match self.live_instance_count.load(Ordering::Relaxed) {
            0 => config.options.instance_count,
            live => live,
        }
    }

    /// The pieces in force now.
    pub(crate) fn config(&self) -> Arc<LimiterConfig> {
        Arc::clone(&self.config.read())
    }

    /// Replaces the pieces and the options. The endpoint capacity, idle TTL and the grouping of
    /// Discord's buckets (`KeyMode::DiscordRoute`) stay as built; a
    /// new controller factory applies to endpoints met from now on.
    pub(crate) fn update_config(&self, config: LimiterConfig) -> Result<(), InvalidOptions> {
        let options = config.options.clone();
        validate(&config)?;
        *self.config.write() = Arc::new(config);
        self.apply_options(&options)
    }

    /// Starts the endpoints of `memories` from what they learnt in an earlier process, unless
    /// the memory is older than this limiter's `EndpointIdleTtl` (`age`). An endpoint in a fleet
    /// follows its fleet, whose state the store keeps: it is not recalled.
    pub(crate) fn recall(
        &self,
        memories: &[pacer_core::EndpointMemory],
        age: std::time::Duration,
        recalled: &mut pacer_core::Recalled,
    ) {
        let config = self.config();
        if age > config.endpoint_idle_ttl || config.fleet.is_some() {
            recalled.skipped += memories.len();
            return;
        }
        let now = self.clock.now();
        for memory in memories {
            let changes = self
                .endpoint(&memory.key, now)
                .limiter()
                .recall(&memory.limiter);
            recalled.count(&changes);
            self.record(&changes);
        }
    }

    /// The endpoint `key` and its adaptive limiter, made on first use (and, with a fleet, made
    /// a member of it, its task spawned).
    pub(crate) fn endpoint(&self, key: &str, now: Timestamp) -> Arc<Endpoint> {
        let mut joins = None;
        let endpoint = self.engine.endpoint(
            key,
            now,
            || {
                let config = self.config();
                let link = config.fleet.as_ref().map(|_| FleetLink::new());
                let limiter = self.build_limiter(&config, link.clone());
                self.metrics.endpoint_added(&limiter);
                joins = link.map(|link| (config, link));
                limiter
            },
            |gone| self.forget(gone),
        );
        if let Some((config, link)) = joins {
            self.join_fleet(&config, &endpoint, link, now);
        }
        endpoint
    }

    /// Makes a new endpoint a member of the limiter's fleet and spawns the task that syncs it
    /// (on the runtime the request runs on; without one the endpoint keeps its own control).
    fn join_fleet(
        &self,
        config: &LimiterConfig,
        endpoint: &Endpoint,
        link: Arc<FleetLink>,
        now: Timestamp,
    ) {
        if let Some(fleet) = &config.fleet {
            let clock = Arc::clone(&self.clock);
            fleet.join(&self.name, endpoint, link, &config.options, clock, now);
        }
    }

    /// Takes a dropped endpoint's rate out of the gauge.
    pub(crate) fn forget(&self, gone: &Limiter) {
        self.metrics.endpoint_gone(gone);
    }

    fn build_limiter(&self, config: &LimiterConfig, fleet: Option<Arc<FleetLink>>) -> Limiter {
        let mut builder = Limiter::builder(config.options.clone())
            .clock(Arc::clone(&self.clock))
            .name(Arc::clone(&self.name));
        if let Some(link) = fleet {
            builder = builder.controller(Fleet::controller(&config.options, link));
        } else if let Some(make) = &config.controller {
            builder = builder.controller(make());
        }
        let limiter = builder
            .build()
            .expect("options are validated before they are stored");
        match self.live_instance_count.load(Ordering::Relaxed) {
            0 => {}
            count => {
                let _ = limiter.set_instance_count(count);
            }
        }
        limiter
    }

    /// What each request's [`pacer_core::Exchange`] is driven with under `config` (the
    /// settings in force when it came in).
    pub(crate) fn driver<'a>(&'a self, config: &'a LimiterConfig) -> pacer_core::Driver<'a> {
        pacer_core::Driver {
            name: &self.name,
            engine: &self.engine,
            rules: &config.rules,
            options: &config.options,
            clock: &self.clock,
            metrics: &self.metrics,
            instance_count: self.instance_count(config),
        }
    }

    /// Keeps the rate gauge in step with a change of one endpoint's rate.
    #[inline]
    pub(crate) fn record(&self, changes: &Changes) {
        self.metrics.record(changes);
    }

    pub(crate) fn update_options(&self, options: LimiterOptions) -> Result<(), InvalidOptions> {
        options.validate()?;
        {
            let mut config = self.config.write();
            let mut updated = (**config).clone();
            updated.options = options.clone();
            *config = Arc::new(updated);
        }
        self.apply_options(&options)
    }

    /// Gives every endpoint's limiter these (validated) options.
    fn apply_options(&self, options: &LimiterOptions) -> Result<(), InvalidOptions> {
        for (_, limiter) in self.engine.limiters() {
            let changes = limiter.update_options(options.clone())?;
            self.record(&changes);
        }
        Ok(())
    }

    pub(crate) fn set_instance_count(&self, count: u32) -> Result<(), InvalidOption> {
        if count == 0 {
            return Err(InvalidOption::new("InstanceCount", 0, "must be at least 1"));
        }
        self.live_instance_count.store(count, Ordering::Relaxed);
        for (_, limiter) in self.engine.limiters() {
            let changes = limiter.set_instance_count(count)?;
            self.record(&changes);
        }
        Ok(())
    }
}

/// Checks a limiter's settings: its options, and its fleet's, built in code or read from a
/// file, held to the same rules (`Fleet.Period`, …).
fn validate(config: &LimiterConfig) -> Result<(), InvalidOptions> {
    config.options.validate()?;
    if let Some(fleet) = &config.fleet {
        fleet
            .options()
            .validate()
            .map_err(|e| e.prefixed("Fleet"))?;
    }
    Ok(())
}

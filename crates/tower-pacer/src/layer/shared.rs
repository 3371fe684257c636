//! What every service of one layer shares: the settings, the engine, and how a request's key,
//! cost, tokens and windows are found.

use super::{CostFn, TokensFn, WindowKeyFn};
use http::Uri;
use pacer_core::{
    Clock, ControllerFactory, Endpoint, Engine, Fleet, FleetLink, KeyMode, Limiter, LimiterMetrics,
    LimiterOptions, Rules, Timestamp, WindowLimit,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// What every service of one layer shares.
pub(crate) struct Shared {
    pub(crate) name: Arc<str>,
    pub(crate) options: LimiterOptions,
    /// A controller of the user's, made for each endpoint.
    pub(super) controller: Option<ControllerFactory>,
    /// The number of processes set live (`PacerLayer::set_instance_count`); 0: the options'.
    pub(super) live_instance_count: AtomicU32,
    pub(crate) rules: Rules,
    pub(crate) key: KeyMode,
    pub(super) cost: Option<Arc<CostFn>>,
    pub(super) tokens: Option<Arc<TokensFn>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) engine: Engine,
    pub(crate) windows: Vec<WindowLimit>,
    /// Each window's key, when it is not the endpoint key.
    pub(super) window_keys: Vec<Option<Arc<WindowKeyFn>>>,
    pub(super) fleet: Option<Fleet>,
    /// The limiter's metrics, labelled with its name (feature `metrics`).
    pub(crate) metrics: LimiterMetrics,
}

impl Shared {
    /// Each strict window `request` is counted in, with its key in the store: `name:key`, the
    /// key the endpoint key unless the window is keyed otherwise.
    pub(crate) fn windows_of<B>(
        &self,
        request: &http::Request<B>,
        endpoint: &str,
    ) -> Vec<(&WindowLimit, String)> {
        self.windows
            .iter()
            .zip(&self.window_keys)
            .filter_map(|(w, key)| {
                let key = match key {
                    Some(f) => f(request.method(), request.uri(), request.headers())?,
                    None => endpoint.to_owned(),
                };
                Some((w, format!("{}:{key}", w.name())))
            })
            .collect()
    }

    /// The cost of a request, in units.
    pub(crate) fn cost<B>(&self, request: &http::Request<B>) -> u64 {
        match &self.cost {
            Some(cost) => cost(request.method(), request.uri(), request.headers()),
            None => 1,
        }
    }

    /// The cost of a request in tokens, if the estimator can tell.
    pub(crate) fn tokens<B>(&self, request: &http::Request<B>) -> Option<u64> {
        let tokens = self.tokens.as_ref()?;
        tokens(request.method(), request.uri(), request.headers())
    }

    /// What each request's [`pacer_core::Exchange`] is driven with.
    pub(crate) fn driver(&self) -> pacer_core::Driver<'_> {
        pacer_core::Driver {
            name: &self.name,
            engine: &self.engine,
            rules: &self.rules,
            options: &self.options,
            clock: &self.clock,
            metrics: &self.metrics,
            instance_count: self.instance_count(),
        }
    }

    /// The number of processes sharing the layer's budget: set live, else the options'.
    pub(crate) fn instance_count(&self) -> u32 {
        match self.live_instance_count.load(Ordering::Relaxed) {
            0 => self.options.instance_count,
            count => count,
        }
    }

    /// The endpoint key of `uri`: the same as the middleware's for the same URL.
    pub(crate) fn key(&self, uri: &Uri) -> String {
        let scheme = uri.scheme_str().unwrap_or("");
        let port = uri.port_u16().or(match scheme {
            "http" | "ws" => Some(80),
            "https" | "wss" => Some(443),
            _ => None,
        });
        let mut key = String::new();
        self.key
            .write_key(scheme, uri.host().unwrap_or(""), port, uri.path(), &mut key);
        key
    }

    /// The endpoint `key`, made on first use (and, with a fleet, made a member of it, its task
    /// spawned).
    pub(crate) fn endpoint(&self, key: &str, now: Timestamp) -> Arc<Endpoint> {
        let mut joins = None;
        let endpoint = self.engine.endpoint(
            key,
            now,
            || {
                let mut builder = Limiter::builder(self.options.clone())
                    .clock(Arc::clone(&self.clock))
                    .name(Arc::clone(&self.name));
                if self.fleet.is_some() {
                    let link = FleetLink::new();
                    builder =
                        builder.controller(Fleet::controller(&self.options, Arc::clone(&link)));
                    joins = Some(link);
                } else if let Some(make) = &self.controller {
                    builder = builder.controller(make());
                }
                let limiter = builder
                    .build()
                    .expect("the options are validated when the layer is built");
                if let count @ 1.. = self.live_instance_count.load(Ordering::Relaxed) {
                    let _ = limiter.set_instance_count(count);
                }
                self.metrics.endpoint_added(&limiter);
                limiter
            },
            |gone| self.metrics.endpoint_gone(gone),
        );
        if let (Some(fleet), Some(link)) = (&self.fleet, joins) {
            let clock = Arc::clone(&self.clock);
            fleet.join(&self.name, &endpoint, link, &self.options, clock, now);
        }
        endpoint
    }
}

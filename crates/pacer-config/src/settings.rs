//! The typed result of loading: every limiter's settings, comparable and convertible into the
//! middleware's [`LimiterConfig`].

use crate::error::{ConfigError, Problem, ProblemKind, Problems};
use crate::fleet::FleetSettings;
use crate::spelling::join;
use crate::window::WindowSettings;
use pacer_core::{
    AdaptiveDelay, Composite, DeclaredDialect, DefaultClassifier, FixedThreshold, Global, KeyMode,
    LimiterOptions, Pacing, Percentage, Rules, ServerStopPolicy, ThrottlingAlgorithm,
};
#[cfg(feature = "reqwest")]
use reqwest_pacer::{BuildError, LimiterConfig, PacerBuilder, PacerMiddleware};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// The proactive throttling algorithm a limiter uses (`Throttling` in configuration), with its
/// parameters.
///
/// ```
/// use pacer_config::ThrottlingSettings;
/// use pacer_core::Pacing;
///
/// let s = ThrottlingSettings::Pacing(Pacing::new(3));
/// assert_eq!(s.name(), "Pacing");
/// assert!(s.algorithm().is_some());
/// assert!(ThrottlingSettings::None.algorithm().is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ThrottlingSettings {
    /// No proactive throttling (`None`); the server-ordered stop still applies.
    None,
    /// [`Percentage`], the default.
    Percentage(Percentage),
    /// [`FixedThreshold`].
    FixedThreshold(FixedThreshold),
    /// [`AdaptiveDelay`].
    AdaptiveDelay(AdaptiveDelay),
    /// [`Pacing`].
    Pacing(Pacing),
    /// [`Global`].
    Global(Global),
    /// [`Composite`]: the algorithms in order; the first that throttles decides. Never empty.
    Composite(Vec<ThrottlingSettings>),
}

impl Default for ThrottlingSettings {
    fn default() -> Self {
        ThrottlingSettings::Percentage(Percentage::default())
    }
}

impl ThrottlingSettings {
    /// The names of the algorithms, as configuration writes them (`Algorithm`).
    pub const NAMES: [&'static str; 7] = [
        "Percentage",
        "FixedThreshold",
        "AdaptiveDelay",
        "Pacing",
        "Global",
        "Composite",
        "None",
    ];

    /// The algorithm's name, as configuration writes it.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            ThrottlingSettings::None => "None",
            ThrottlingSettings::Percentage(_) => "Percentage",
            ThrottlingSettings::FixedThreshold(_) => "FixedThreshold",
            ThrottlingSettings::AdaptiveDelay(_) => "AdaptiveDelay",
            ThrottlingSettings::Pacing(_) => "Pacing",
            ThrottlingSettings::Global(_) => "Global",
            ThrottlingSettings::Composite(_) => "Composite",
        }
    }

    /// A new instance of the algorithm; `None` for no proactive throttling.
    #[must_use]
    pub fn algorithm(&self) -> Option<Box<dyn ThrottlingAlgorithm>> {
        Some(match self {
            ThrottlingSettings::None => return None,
            ThrottlingSettings::Percentage(a) => Box::new(*a),
            ThrottlingSettings::FixedThreshold(a) => Box::new(*a),
            ThrottlingSettings::AdaptiveDelay(a) => Box::new(*a),
            ThrottlingSettings::Pacing(a) => Box::new(*a),
            ThrottlingSettings::Global(a) => Box::new(*a),
            ThrottlingSettings::Composite(parts) => {
                let parts: Vec<_> = parts.iter().filter_map(Self::algorithm).collect();
                // Loading never makes an empty composite; an empty one built in code throttles
                // nothing, like `None`.
                Box::new(Composite::new(parts).ok()?)
            }
        })
    }
}

/// Everything one named limiter has, as loaded from configuration. Compare two with `==`; turn
/// one into the middleware's settings with [`LimiterSettings::to_limiter_config`].
///
/// The defaults are the middleware's own ([`LimiterConfig::default`]).
///
/// ```
/// use pacer_config::LimiterSettings;
/// use reqwest_pacer::KeyMode;
///
/// let s = LimiterSettings::default();
/// assert_eq!(s.endpoint_key, KeyMode::SchemeHostPort);
/// assert_eq!(s.max_endpoints, 10_000);
/// let config = s.to_limiter_config()?;
/// assert_eq!(config.options().initial_units_per_minute, None, "unlimited until throttled");
/// # Ok::<(), pacer_config::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LimiterSettings {
    /// The adaptive options (`Enabled`, `Controller`, the rates, `Aimd.*`, `Cubic.*`, …).
    pub options: LimiterOptions,
    /// `MaxAttempts`: how many times a throttled request is sent in all, counting the first.
    /// Default 4 ([`Rules::DEFAULT_MAX_ATTEMPTS`]).
    pub max_attempts: NonZeroU32,
    /// `Throttling`: the proactive algorithm. Default [`Percentage`].
    pub throttling: ThrottlingSettings,
    /// `MaxExhaustedDelay`: the cap on a stop for an exhausted quota. Default 5 min; above zero
    /// (loading checks it; a zero set in code is an error of
    /// [`to_limiter_config`](Self::to_limiter_config)).
    pub max_exhausted_delay: Duration,
    /// `EndpointKey`: how requests are keyed. Default [`KeyMode::SchemeHostPort`].
    pub endpoint_key: KeyMode,
    /// `Classifier`: which statuses are throttles. Default [`DefaultClassifier::default`].
    pub classifier: DefaultClassifier,
    /// `MaxEndpoints`: at most this many endpoints keep state. Default 10,000.
    pub max_endpoints: usize,
    /// `EndpointIdleTtl`: an endpoint idle this long forgets its state. Default 1 h.
    pub endpoint_idle_ttl: Duration,
    /// `Windows`: strict windows, per endpoint key. Default none.
    pub windows: Vec<WindowSettings>,
    /// `Fleet`: the fleet every endpoint's limiter joins, shared through Redis. Default none.
    pub fleet: Option<FleetSettings>,
    /// `QueryCost`: read each JSON response's body for a GraphQL query's cost (Shopify's
    /// `extensions.cost`; [`Rules::with_query_cost`]). Default false.
    pub query_cost: bool,
    /// `Dialects`: the rate-limit fields of APIs no built-in dialect reads, declared
    /// ([`Rules::with_dialect`]). Default none.
    pub dialects: Vec<DeclaredDialect>,
    /// What the file says that has no effect, each a [`Problem`](crate::Problem) of kind
    /// [`ProblemKind::Ignored`](crate::ProblemKind::Ignored): a controller's table beside
    /// another `Controller`. Loading logs each (`tracing::warn!`); `pacer-sim` prints them.
    /// Not written back. Default none.
    pub warnings: Vec<crate::Problem>,
}

/// The middleware's defaults for what [`LimiterConfig`] does not expose.
pub(crate) const DEFAULT_MAX_ENDPOINTS: usize = 10_000;
pub(crate) const DEFAULT_ENDPOINT_IDLE_TTL: Duration = Duration::from_secs(3600);

impl Default for LimiterSettings {
    fn default() -> Self {
        LimiterSettings {
            options: LimiterOptions::default(),
            max_attempts: Rules::DEFAULT_MAX_ATTEMPTS,
            throttling: ThrottlingSettings::default(),
            max_exhausted_delay: ServerStopPolicy::DEFAULT_MAX_EXHAUSTED_DELAY,
            endpoint_key: KeyMode::default(),
            classifier: DefaultClassifier::default(),
            max_endpoints: DEFAULT_MAX_ENDPOINTS,
            endpoint_idle_ttl: DEFAULT_ENDPOINT_IDLE_TTL,
            windows: Vec::new(),
            fleet: None,
            query_cost: false,
            dialects: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

impl LimiterSettings {
    /// The engine's rules of this limiter (`Classifier`, `MaxExhaustedDelay`, `Throttling`,
    /// `MaxAttempts`, `QueryCost`, `Dialects`), for
    /// any driver: the middleware's [`to_limiter_config`](Self::to_limiter_config) uses them,
    /// and so does tower-pacer's `PacerLayer::from_settings`.
    ///
    /// ```
    /// use pacer_config::LimiterSettings;
    ///
    /// let rules = LimiterSettings::default().rules()?;
    /// assert!(rules.algorithm().is_some(), "Percentage by default");
    /// # Ok::<(), pacer_config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] for a zero `MaxExhaustedDelay` set in code (loading refuses it).
    pub fn rules(&self) -> Result<Rules, ConfigError> {
        self.rules_at("")
            .map_err(|p| ConfigError::Invalid(Problems::new(vec![p]).expect("one problem")))
    }

    /// [`rules`](Self::rules), its problem's path under `at`.
    pub(crate) fn rules_at(&self, at: &str) -> Result<Rules, Problem> {
        let stop = ServerStopPolicy::new(self.max_exhausted_delay).map_err(|e| {
            Problem::new(
                join(at, "MaxExhaustedDelay"),
                Some(format!("{:?}", self.max_exhausted_delay)),
                e.to_string(),
                ProblemKind::OutOfRange,
            )
        })?;
        Ok(Rules::default()
            .with_classifier(Arc::new(self.classifier.clone()))
            .with_server_stop(stop)
            .with_algorithm(self.throttling.algorithm().map(Arc::from))
            .with_max_attempts(self.max_attempts)
            .with_query_cost(self.query_cost)
            .with_dialects(self.dialects.iter().cloned()))
    }

    /// The middleware's settings for this limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] naming the window (`Windows[0]`) when a strict window cannot be
    /// built (a geometry, Redis URL or key prefix set in code that loading would have refused):
    /// a strict window is never left out. The same for a zero `MaxExhaustedDelay` set in code.
    #[cfg(feature = "reqwest")]
    pub fn to_limiter_config(&self) -> Result<LimiterConfig, ConfigError> {
        self.limiter_config("")
            .map_err(|p| ConfigError::Invalid(Problems::new(vec![p]).expect("one problem")))
    }

    /// [`to_limiter_config`](Self::to_limiter_config), its problem's path under `at`.
    #[cfg(feature = "reqwest")]
    pub(crate) fn limiter_config(&self, at: &str) -> Result<LimiterConfig, Problem> {
        let mut config = LimiterConfig::new(self.options.clone())
            .endpoint_key(self.endpoint_key)
            .rules(self.rules_at(at)?)
            .max_endpoints(self.max_endpoints)
            .endpoint_idle_ttl(self.endpoint_idle_ttl);
        for (i, window) in self.windows.iter().enumerate() {
            match window.to_strict_window() {
                Ok(w) => config = config.window(w),
                Err(e) => {
                    return Err(Problem::new(
                        join(at, &format!("Windows[{i}]")),
                        None,
                        format!("the window {:?} cannot be built: {e}", window.name),
                        ProblemKind::OutOfRange,
                    ));
                }
            }
        }
        if let Some(fleet) = &self.fleet {
            match fleet.to_store() {
                Ok(store) => config = config.fleet(store, fleet.options),
                Err(e) => {
                    return Err(Problem::new(
                        join(at, "Fleet"),
                        None,
                        format!("the fleet cannot be built: {e}"),
                        ProblemKind::OutOfRange,
                    ));
                }
            }
        }
        Ok(config)
    }
}

/// Every limiter of a configuration, in the file's order, and the default one.
///
/// ```
/// use pacer_config::{ConfigLoader, Format};
///
/// let toml = r#"
/// [adaptive_rate_limiting.limiters.orders-api]
/// max_units_per_minute = 1200
/// [adaptive_rate_limiting.limiters.search-api]
/// controller = "Cubic"
/// "#;
/// let settings = ConfigLoader::new().string(toml, Format::Toml).load()?;
/// assert_eq!(settings.names().collect::<Vec<_>>(), ["orders-api", "search-api"]);
/// assert_eq!(settings.default_limiter(), "orders-api");
/// let pacer = settings.build()?;
/// assert_eq!(pacer.limiter_names(), ["orders-api", "search-api"]);
/// # Ok::<(), pacer_config::ConfigError>(())
/// ```
///
/// # In your own configuration struct
///
/// `PacerSettings` implements `serde::Deserialize` (and `Serialize`), so it can be a field of the
/// application's configuration, loaded by config-rs, figment or serde directly. The field holds
/// what the section holds (`Limiters`, `DefaultLimiter`), read by the same rules and with the
/// same errors as [`ConfigLoader`](crate::ConfigLoader) (environment overrides are the loading
/// crate's business then). Serializing writes the appsettings form: PascalCase keys, TimeSpans.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct AppConfig {
///     database_url: String,
///     pacer: pacer_config::PacerSettings,
/// }
///
/// let toml = r#"
/// database_url = "postgres://localhost/app"
/// [pacer.limiters.orders-api]
/// max_units_per_minute = 1200
/// max_wait = "30s"
/// "#;
/// let config: AppConfig = config::Config::builder()
///     .add_source(config::File::from_str(toml, config::FileFormat::Toml))
///     .build()?
///     .try_deserialize()?;
/// let orders = config.pacer.limiter("orders-api").unwrap();
/// assert_eq!(orders.options.max_wait, std::time::Duration::from_secs(30));
/// let pacer = config.pacer.build()?; // the middleware
///
/// // Written back in the appsettings form.
/// let json = serde_json::to_value(&config.pacer)?;
/// assert_eq!(json["Limiters"]["orders-api"]["MaxWait"], "00:00:30");
/// # let _ = (pacer, config.database_url);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PacerSettings {
    pub(crate) limiters: Vec<(String, LimiterSettings)>,
    pub(crate) default_limiter: String,
}

impl PacerSettings {
    /// The limiters' names, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.limiters.iter().map(|(n, _)| n.as_str())
    }

    /// Every limiter with its settings, in the file's order.
    pub fn limiters(&self) -> impl Iterator<Item = (&str, &LimiterSettings)> {
        self.limiters.iter().map(|(n, s)| (n.as_str(), s))
    }

    /// One limiter's settings, by its exact name.
    #[must_use]
    pub fn limiter(&self, name: &str) -> Option<&LimiterSettings> {
        self.limiters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
    }

    /// The limiter requests use when they name none: `DefaultLimiter`, else the first one.
    #[must_use]
    pub fn default_limiter(&self) -> &str {
        &self.default_limiter
    }

    /// A middleware builder with every limiter and the default set, to add a clock or limiters
    /// made in code before [`PacerBuilder::build`].
    ///
    /// # Errors
    ///
    /// As [`LimiterSettings::to_limiter_config`], the path starting with the limiter's name.
    #[cfg(feature = "reqwest")]
    pub fn builder(&self) -> Result<PacerBuilder, ConfigError> {
        Ok(self.limiter_configs()?.into_iter().fold(
            PacerMiddleware::builder().default_limiter(&self.default_limiter),
            |b, (name, config)| b.limiter(name, config),
        ))
    }

    /// Every limiter's middleware settings, or every problem (nothing half-built).
    #[cfg(feature = "reqwest")]
    pub(crate) fn limiter_configs(&self) -> Result<Vec<(&str, LimiterConfig)>, ConfigError> {
        let mut configs = Vec::new();
        let mut problems = Vec::new();
        for (name, s) in &self.limiters {
            match s.limiter_config(name) {
                Ok(config) => configs.push((name.as_str(), config)),
                Err(p) => problems.push(p),
            }
        }
        match Problems::new(problems) {
            Some(problems) => Err(ConfigError::Invalid(problems)),
            None => Ok(configs),
        }
    }

    /// The middleware with every limiter.
    ///
    /// # Errors
    ///
    /// As [`builder`](Self::builder).
    #[cfg(feature = "reqwest")]
    pub fn build(&self) -> Result<PacerMiddleware, ConfigError> {
        self.builder()?.build().map_err(|e| {
            // Settings are validated when loaded, so this does not happen; report it anyway.
            let (path, message) = match &e {
                BuildError::InvalidOptions { limiter, .. } => (limiter.clone(), e.to_string()),
                _ => (self.default_limiter.clone(), e.to_string()),
            };
            let problem = Problem::new(path, None, message, ProblemKind::OutOfRange);
            ConfigError::Invalid(Problems::new(vec![problem]).expect("one problem"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "reqwest")]
    fn the_defaults_are_the_middlewares() {
        assert_eq!(
            format!(
                "{:?}",
                LimiterSettings::default().to_limiter_config().unwrap()
            ),
            format!("{:?}", LimiterConfig::default())
        );
    }

    #[test]
    fn every_algorithm_builds() {
        let all = [
            ThrottlingSettings::Percentage(Percentage::default()),
            ThrottlingSettings::FixedThreshold(FixedThreshold::default()),
            ThrottlingSettings::AdaptiveDelay(AdaptiveDelay::default()),
            ThrottlingSettings::Pacing(Pacing::default()),
            ThrottlingSettings::Global(Global::default()),
            ThrottlingSettings::Composite(vec![ThrottlingSettings::Pacing(Pacing::default())]),
        ];
        for s in all {
            assert!(s.algorithm().is_some(), "{s:?}");
            assert!(ThrottlingSettings::NAMES.contains(&s.name()));
        }
        assert!(
            ThrottlingSettings::Composite(Vec::new())
                .algorithm()
                .is_none()
        );
    }
}

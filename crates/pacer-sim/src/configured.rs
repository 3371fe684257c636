//! A limiter of a configuration file (`--config FILE --limiter NAME`), run whole or refused.
//!
//! A configured limiter is more than its [`LimiterOptions`]: strict windows, a throttling
//! algorithm, a classifier, an endpoint key. `live` runs the real middleware, so it builds all of
//! it ([`ConfiguredLimiter::live_config`], durations turned into real time at the run's speed).
//! `compare` runs it through the engine the middleware runs, on virtual time: its options, its
//! rules and its strict windows kept in memory; it refuses, by name, what it cannot honour (a
//! window kept in Redis, a fleet, an `EndpointIdleTtl` shorter than the run):
//! [`ConfiguredLimiter::compare_mode`].

use crate::modes::{LimiterMode, WindowsFn};
use crate::{SimError, Speed};
use pacer_config::{ConfigLoader, LimiterSettings, ThrottlingSettings, WindowStoreSettings};
use pacer_core::{
    AdaptiveDelay, Clock, FixedThreshold, FleetOptions, Global, LimiterOptions, MemoryWindowStore,
    Pacing, Percentage, ServerStopPolicy, WindowGeometry, WindowLimit,
};
use reqwest_pacer::LimiterConfig;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A limiter loaded from a configuration file, every setting of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfiguredLimiter {
    /// The limiter's name (the row's).
    pub name: String,
    /// The file it comes from.
    pub file: PathBuf,
    /// Everything it has, in story time.
    pub settings: LimiterSettings,
}

impl ConfiguredLimiter {
    /// Loads limiter `name` of `file` (its limiters under the default section).
    ///
    /// # Errors
    /// The file cannot be read or is invalid, or has no such limiter; the message names the file.
    pub fn load(file: &Path, name: &str) -> Result<Self, SimError> {
        ConfiguredLimiter::load_with(ConfigLoader::new().file(file).env(), file, name)
    }

    /// Loads limiter `name` with `loader` (the file `file` and the environment overrides it
    /// reads), named as the file writes it (`orders-api` for `--limiter ORDERS_API`).
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn load_with(loader: ConfigLoader, file: &Path, name: &str) -> Result<Self, SimError> {
        let (name, settings) = loader
            .load_named_limiter(name)
            .map_err(|e| SimError::Options(format!("--config {}: {e}", file.display())))?;
        for warning in &settings.warnings {
            eprintln!("pacer-sim: --config {}: warning: {warning}", file.display());
        }
        Ok(ConfiguredLimiter {
            name,
            file: file.to_owned(),
            settings,
        })
    }

    /// The mode `compare` runs for this limiter over a run of `run_length`: its options, its
    /// rules (classifier, throttling algorithm, `MaxExhaustedDelay`, dialects) and its strict
    /// windows kept in memory — each instance's own, as a process's `Store = "Memory"` window
    /// is — on the run's virtual time, through the engine the middleware runs. Named as the
    /// file names it.
    ///
    /// # Errors
    /// Names the limiter and every setting `compare` cannot honour: a window kept in Redis
    /// (shared by processes: compare's instances share no store but the fleet's), a `Fleet`,
    /// an `EndpointIdleTtl` shorter than the run. (`EndpointKey` and `MaxEndpoints` change
    /// nothing: the model API is one endpoint.)
    pub fn compare_mode(&self, run_length: Duration) -> Result<LimiterMode, SimError> {
        let s = &self.settings;
        let mut refused = Vec::new();
        for w in &s.windows {
            if w.store != WindowStoreSettings::Memory {
                refused.push(format!(
                    "Windows ({:?}: {} per {}, Store Redis: compare's instances share no store \
                     for windows; a Store \"Memory\" window is each process's own)",
                    w.name,
                    w.limit,
                    secs(w.per)
                ));
            }
        }
        if let Some(fleet) = &s.fleet {
            refused.push(format!(
                "Fleet (Store {}: compare's instances share a fleet only in `--mode fleet`)",
                redacted(&fleet.url)
            ));
        }
        if s.endpoint_idle_ttl < run_length {
            refused.push(format!(
                "EndpointIdleTtl ({}, shorter than the run)",
                secs(s.endpoint_idle_ttl)
            ));
        }
        if !refused.is_empty() {
            return Err(SimError::Options(format!(
                "--config {} --limiter {}: compare cannot run its {}. Run the whole limiter with \
                 `pacer-sim live` against `pacer-sim serve`, or remove these settings",
                self.file.display(),
                self.name,
                refused.join(", ")
            )));
        }
        let rules = s.rules().map_err(|e| {
            SimError::Options(format!(
                "--config {} --limiter {}: {e}",
                self.file.display(),
                self.name
            ))
        })?;
        let windows = s.windows.clone();
        // Checked here, built for each instance on its clock.
        for w in &windows {
            WindowGeometry::for_limit(w.limit, w.per, w.frames).map_err(|e| {
                SimError::Options(format!(
                    "--config {} --limiter {}: Windows ({:?}): {e}",
                    self.file.display(),
                    self.name,
                    w.name
                ))
            })?;
        }
        let build: WindowsFn = Arc::new(move |clock: Arc<dyn Clock>| {
            (windows.iter())
                .map(|w| {
                    let geometry = WindowGeometry::for_limit(w.limit, w.per, w.frames)
                        .expect("checked when the mode was made");
                    let store = Arc::new(MemoryWindowStore::with_shared_clock(Arc::clone(&clock)));
                    WindowLimit::with_geometry(w.name.as_str(), w.limit, geometry, store)
                        .on_store_failure(w.on_store_failure)
                })
                .collect()
        });
        Ok(LimiterMode::configured(
            self.name.clone(),
            s.options.clone(),
            rules,
            build,
        ))
    }

    /// The middleware's settings for one instance in `live`: `real` (this limiter's options on
    /// the real clock, `InstanceCount` set) with every other setting of the limiter, its
    /// durations turned into real time at `speed` (window lengths, `MaxExhaustedDelay`,
    /// `EndpointIdleTtl`, the throttling algorithm's delays). Each call builds fresh windows,
    /// so a `Memory` window is this instance's own, as in a process of a fleet.
    ///
    /// # Errors
    /// A window or an algorithm that cannot be built at this speed, or a Redis window the
    /// binary cannot reach (its URL is invalid); the message names the limiter and the setting.
    pub fn live_config(
        &self,
        real: LimiterOptions,
        speed: Speed,
    ) -> Result<LimiterConfig, SimError> {
        let s = &self.settings;
        let err = |setting: &str, e: String| {
            SimError::Options(format!(
                "--config {} --limiter {}: {setting}: {e}",
                self.file.display(),
                self.name
            ))
        };
        let mut config = LimiterConfig::new(real)
            .endpoint_key(s.endpoint_key)
            .classifier(s.classifier.clone())
            .max_endpoints(s.max_endpoints)
            .endpoint_idle_ttl(speed.to_real(s.endpoint_idle_ttl));
        for dialect in &s.dialects {
            config = config.dialect(dialect.clone());
        }
        if let Some(fleet) = &s.fleet {
            let store = fleet
                .to_store()
                .map_err(|e| err(&format!("Fleet (Store {})", redacted(&fleet.url)), e))?;
            let o = fleet.options;
            let mut options = FleetOptions::default();
            options.period = speed.to_real(o.period);
            options.lease = speed.to_real(o.lease);
            options.timeout = speed.to_real(o.timeout);
            options.fallback_after = speed.to_real(o.fallback_after);
            config = config.fleet(store, options);
        }
        let stop = ServerStopPolicy::new(speed.to_real(s.max_exhausted_delay))
            .map_err(|e| err("MaxExhaustedDelay", e.to_string()))?;
        config = config.server_stop(stop);
        for window in &s.windows {
            let mut w = window.clone();
            w.per = speed.to_real(window.per);
            let strict = w
                .to_strict_window()
                .map_err(|e| err(&format!("Windows ({:?})", window.name), e))?;
            config = config.window(strict);
        }
        Ok(
            match scaled(&s.throttling, speed)
                .map_err(|e| err("Throttling", e))?
                .algorithm()
            {
                Some(algorithm) => config.throttling(algorithm),
                None => config.no_throttling(),
            },
        )
    }
}

/// The throttling settings with their delays in real time at `speed` (thresholds, factors and
/// reserves are kept).
fn scaled(t: &ThrottlingSettings, speed: Speed) -> Result<ThrottlingSettings, String> {
    let real = |d: Duration| speed.to_real(d);
    Ok(match t {
        ThrottlingSettings::Percentage(a) => ThrottlingSettings::Percentage(
            Percentage::builder()
                .threshold(a.threshold())
                .factor(a.factor())
                .max_delay(real(a.max_delay()))
                .build()
                .map_err(|e| e.to_string())?,
        ),
        ThrottlingSettings::FixedThreshold(a) => ThrottlingSettings::FixedThreshold(
            FixedThreshold::new(a.min_remaining(), real(a.delay())).map_err(|e| e.to_string())?,
        ),
        ThrottlingSettings::AdaptiveDelay(a) => ThrottlingSettings::AdaptiveDelay(
            AdaptiveDelay::builder()
                .threshold(a.threshold())
                .min_delay(real(a.min_delay()))
                .max_delay(real(a.max_delay()))
                .build()
                .map_err(|e| e.to_string())?,
        ),
        ThrottlingSettings::Pacing(a) => ThrottlingSettings::Pacing(
            Pacing::new(a.reserve()).with_min_spacing(real(a.min_spacing())),
        ),
        ThrottlingSettings::Global(a) => ThrottlingSettings::Global(
            Global::builder()
                .threshold(a.threshold())
                .max_delay(real(a.max_delay()))
                .build()
                .map_err(|e| e.to_string())?,
        ),
        ThrottlingSettings::Composite(parts) => ThrottlingSettings::Composite(
            parts
                .iter()
                .map(|p| scaled(p, speed))
                .collect::<Result<_, _>>()?,
        ),
        ThrottlingSettings::None => ThrottlingSettings::None,
        other => {
            return Err(format!(
                "{}: live cannot turn this algorithm's delays into real time",
                other.name()
            ));
        }
    })
}

/// A Redis URL without its password, as the messages write it (`redis://:***@host:6379/0`).
pub(crate) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// A duration in seconds, as the messages write it.
fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `toml` to a file of its own and loads limiter `name` from it.
    fn load(tag: &str, toml: &str, name: &str) -> Result<ConfiguredLimiter, SimError> {
        let dir = std::env::temp_dir().join(format!("pacer-sim-configured-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{tag}.toml"));
        std::fs::write(&file, toml).unwrap();
        ConfiguredLimiter::load(&file, name)
    }

    const WINDOW_5_PER_10_MINUTES: &str = r#"
[adaptive_rate_limiting.limiters.capped]
controller = "Aimd"
[[adaptive_rate_limiting.limiters.capped.windows]]
name = "cap"
limit = 5
per = "10m"
"#;

    const REDIS_WINDOW: &str = r#"
[adaptive_rate_limiting.limiters.shared]
[[adaptive_rate_limiting.limiters.shared.windows]]
name = "fleet"
limit = 100
per = "1m"
store = "redis://127.0.0.1:1/"
"#;

    const EVERYTHING_ELSE: &str = r#"
[adaptive_rate_limiting.limiters.search]
max_exhausted_delay = "2m"
endpoint_idle_ttl = "5m"
endpoint_key = "HostAndFirstSegment"
max_endpoints = 10
[adaptive_rate_limiting.limiters.search.throttling]
algorithm = "Composite"
algorithms = [
    { algorithm = "Pacing", reserve = 2, min_spacing = "60ms" },
    { algorithm = "FixedThreshold", min_remaining = 5, delay = "3s" },
]
[adaptive_rate_limiting.limiters.search.classifier]
throttled = [429, 420]
"#;

    const FIFTEEN_MINUTES: Duration = Duration::from_secs(900);

    /// A run of `minutes` of the free-run story, seed 42, 2 instances, with `mode` alone.
    fn run(mode: LimiterMode, minutes: u32) -> crate::metrics::RunMetrics {
        let options = crate::SimOptions {
            minutes,
            ..crate::SimOptions::default()
        };
        let story = crate::Story::by_name("free-run").expect("a story");
        let modes: Vec<Box<dyn crate::Mode>> = vec![Box::new(mode)];
        let c = crate::compare(&options, &[story], &modes).expect("runs");
        c.rows[0].metrics.clone()
    }

    #[test]
    fn compare_runs_a_memory_window_and_the_window_holds() {
        let c = load("window", WINDOW_5_PER_10_MINUTES, "capped").unwrap();
        let m = run(c.compare_mode(FIFTEEN_MINUTES).unwrap(), 2);
        // 5 units per 10 minutes in each of the 2 instances' own window: 10 in 2 minutes, of
        // the thousands the demand asks for.
        assert!(m.accepted_units <= 10, "{}", m.accepted_units);
        assert!(m.accepted_units >= 2, "{}", m.accepted_units);
    }

    #[test]
    fn compare_refuses_a_redis_window_by_the_limiter_s_name_and_the_setting() {
        let c = load("redis", REDIS_WINDOW, "shared").unwrap();
        let e = c.compare_mode(FIFTEEN_MINUTES).unwrap_err().to_string();
        assert!(
            e.contains("--limiter shared: compare cannot run its Windows (\"fleet\": 100 per 60 s, Store Redis"),
            "{e}"
        );
        assert!(e.contains("pacer-sim live"), "{e}");
        assert!(!e.contains("feature"), "{e}");
    }

    #[test]
    fn compare_runs_the_throttling_classifier_and_stop_policy_and_names_what_it_cannot() {
        let c = load("else", EVERYTHING_ELSE, "search").unwrap();
        let e = c.compare_mode(FIFTEEN_MINUTES).unwrap_err().to_string();
        assert!(
            e.contains("EndpointIdleTtl (300 s, shorter than the run)"),
            "{e}"
        );
        for setting in [
            "Throttling",
            "Classifier",
            "MaxExhaustedDelay",
            "EndpointKey",
        ] {
            assert!(!e.contains(setting), "{setting} runs: {e}");
        }
        // The same limiter over a run shorter than its idle TTL runs whole.
        let mode = c.compare_mode(Duration::from_secs(120)).unwrap();
        let m = run(mode, 2);
        assert!(m.accepted_units > 0, "{m:?}");
        // A limiter of options only runs, with every option.
        let plain = "[adaptive_rate_limiting.limiters.p]\nqueue_limit = 7\nthrottling = \"None\"\n";
        let c = load("plain", plain, "p").unwrap();
        let o = c
            .compare_mode(FIFTEEN_MINUTES)
            .unwrap()
            .options_for(&LimiterOptions::default());
        assert_eq!(o.queue_limit, 7);
    }

    #[test]
    fn live_builds_the_window_in_real_time() {
        let c = load("live-window", WINDOW_5_PER_10_MINUTES, "capped").unwrap();
        let speed = Speed::new(60.0).unwrap();
        let config = c.live_config(c.settings.options.clone(), speed).unwrap();
        let w = &config.windows()[0];
        assert_eq!((w.name(), w.limit()), ("cap", 5));
        assert_eq!(
            w.geometry().window(),
            Duration::from_secs(10),
            "10 min ÷ 60"
        );
    }

    #[tokio::test]
    async fn live_builds_a_redis_window() {
        // The binary has pacer-config's `redis` feature; the store connects on first use.
        let c = load("live-redis", REDIS_WINDOW, "shared").unwrap();
        let config = c
            .live_config(c.settings.options.clone(), Speed::REAL_TIME)
            .unwrap();
        assert_eq!(config.windows()[0].name(), "fleet");
    }

    #[test]
    fn live_scales_the_throttling_algorithm_s_delays() {
        let c = load("live-else", EVERYTHING_ELSE, "search").unwrap();
        let ThrottlingSettings::Composite(parts) =
            scaled(&c.settings.throttling, Speed::new(3.0).unwrap()).unwrap()
        else {
            panic!("composite");
        };
        let ThrottlingSettings::Pacing(p) = &parts[0] else {
            panic!("pacing");
        };
        assert_eq!(
            (p.reserve(), p.min_spacing()),
            (2, Duration::from_millis(20))
        );
        let ThrottlingSettings::FixedThreshold(f) = &parts[1] else {
            panic!("fixed threshold");
        };
        assert_eq!((f.min_remaining(), f.delay()), (5, Duration::from_secs(1)));
        let config = c
            .live_config(c.settings.options.clone(), Speed::new(3.0).unwrap())
            .unwrap();
        assert!(config.throttling_algorithm().is_some());
    }
}

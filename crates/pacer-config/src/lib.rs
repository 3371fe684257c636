//! Pacer's configuration: named limiters from appsettings-style JSON and TOML files plus
//! environment overrides, validated with messages that say exactly what is wrong, and an opt-in
//! reload watcher.
//!
//! A team moving from the .NET library points Pacer at its existing `appsettings.json`
//! unchanged; a Rust project writes the same in TOML:
//!
//! ```json
//! { "AdaptiveRateLimiting": { "Limiters": { "orders-api": {
//!     "InitialUnitsPerMinute": 600, "MinUnitsPerMinute": 60, "MaxUnitsPerMinute": 1200,
//!     "DecreaseCooldown": "00:00:05", "Controller": "Aimd",
//!     "Aimd": { "IncreaseStep": 60, "IncreaseInterval": "00:00:10" } } } } }
//! ```
//!
//! ```toml
//! [adaptive_rate_limiting.limiters.orders-api]
//! initial_units_per_minute = 600
//! min_units_per_minute = 60
//! max_units_per_minute = 1200
//! decrease_cooldown = "5s"
//! controller = "Aimd"
//! aimd = { increase_step = 60, increase_interval = "10s" }
//! ```
//!
//! ```no_run
//! # fn main() -> Result<(), pacer_config::ConfigError> {
//! let pacer = pacer_config::from_config_file("config/appsettings.json")?;
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(pacer)
//!     .build();
//! # let _ = client; Ok(()) }
//! ```
//!
//! * **Keys** match without regard to case, `_` or `-` (`MaxUnitsPerMinute`,
//!   `max_units_per_minute`, `MAXUNITSPERMINUTE`); limiter names keep their case.
//! * **Durations** are .NET TimeSpans (`"00:00:05"`), lengths (`"5s"`, `"250ms"`, `"1m30s"`) or
//!   numbers of seconds.
//! * **Environment overrides** (`PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE=900`)
//!   win over files: [`ConfigLoader::env`].
//! * **Errors** list every problem, one per line, with the full path, the value and the rule;
//!   an unknown key suggests the nearest known one: [`ConfigError`].
//! * **Reload** is opt-in: [`ConfigWatcher`] keeps each endpoint's rate, clamped into the new
//!   bounds; an invalid new file is logged and changes nothing.
//!
//! Building the reqwest middleware ([`from_config_file`], [`PacerSettings::build`], the
//! watcher) needs the `reqwest` feature, off by default (the `pacer` crate's `config` feature
//! turns it on); without it the crate reads and validates settings on `pacer-core` alone.
//!
//! Every key, its default and its range: `docs/configuration.md` in the repository.

mod dialect;
mod duration;
mod env;
mod error;
mod fleet;
mod limiter;
mod loader;
mod reader;
mod section;
mod serde_settings;
mod settings;
mod source;
mod spelling;
mod throttling;
mod tree;
#[cfg(feature = "reqwest")]
mod watch;
mod window;
mod write;

pub use error::{ConfigError, Problem, ProblemKind, Problems};
pub use fleet::FleetSettings;
pub use loader::{
    ConfigLoader, DEFAULT_ENV_PREFIX, DEFAULT_SECTION, Format, limiter_options_from_file,
};
pub use settings::{LimiterSettings, PacerSettings, ThrottlingSettings};
#[cfg(feature = "reqwest")]
pub use watch::{ConfigWatcher, DEFAULT_WATCH_INTERVAL, Reload, WatchHandle, watch};
pub use window::{WindowSettings, WindowStoreSettings};

#[cfg(feature = "reqwest")]
use reqwest_pacer::PacerMiddleware;
#[cfg(feature = "reqwest")]
use std::path::Path;

#[cfg(feature = "reqwest")]
/// The middleware from one configuration file (format by extension), its limiters under
/// [`DEFAULT_SECTION`], without environment overrides.
///
/// # Errors
/// The file cannot be read or parsed, or its settings are invalid (every problem is listed).
pub fn from_config_file(path: impl AsRef<Path>) -> Result<PacerMiddleware, ConfigError> {
    ConfigLoader::new().file(path).build()
}

#[cfg(feature = "reqwest")]
/// As [`from_config_file`], with environment overrides under [`DEFAULT_ENV_PREFIX`]
/// (`PACER__ADAPTIVERATELIMITING__LIMITERS__<NAME>__<KEY>`), which win over the file.
///
/// # Errors
/// As [`from_config_file`].
pub fn from_config_file_with_env(path: impl AsRef<Path>) -> Result<PacerMiddleware, ConfigError> {
    ConfigLoader::new().file(path).env().build()
}

#[cfg(feature = "reqwest")]
/// As [`from_config_file`], with the limiters under a custom section (levels separated by `:`,
/// `.` or `__`: `"SearchApi:RateLimit"` holds `Limiters` and `DefaultLimiter`).
///
/// # Errors
/// As [`from_config_file`].
pub fn from_config_section(
    path: impl AsRef<Path>,
    section: &str,
) -> Result<PacerMiddleware, ConfigError> {
    ConfigLoader::new().file(path).section(section).build()
}

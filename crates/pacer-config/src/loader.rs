//! [`ConfigLoader`]: which sources, which section, and turning them into [`PacerSettings`].

use crate::error::{ConfigError, ProblemKind, Problems};
use crate::reader::Collector;
use crate::section::read_settings;
use crate::settings::{LimiterSettings, PacerSettings};
use crate::spelling::{join, nearest};
use crate::tree::{Gap, Node, normalize};
use crate::{env, source};
use pacer_core::LimiterOptions;
#[cfg(feature = "reqwest")]
use reqwest_pacer::PacerMiddleware;
use std::path::{Path, PathBuf};

/// The section Pacer reads by default, as in the .NET adaptive limiter: `AdaptiveRateLimiting`, holding
/// `Limiters.<name>` and `DefaultLimiter`.
pub const DEFAULT_SECTION: &str = "AdaptiveRateLimiting";

/// The prefix of environment overrides by default: `PACER__ADAPTIVERATELIMITING__LIMITERS__…`.
pub const DEFAULT_ENV_PREFIX: &str = "PACER";

/// The format of a configuration source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// JSON, as `appsettings.json`.
    Json,
    /// TOML, as `pacer.toml`.
    Toml,
}

impl Format {
    /// The format of a file by its extension (`.json`, `.toml`, any case).
    #[must_use]
    pub fn of_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?;
        if ext.eq_ignore_ascii_case("json") {
            Some(Format::Json)
        } else if ext.eq_ignore_ascii_case("toml") {
            Some(Format::Toml)
        } else {
            None
        }
    }
}

#[derive(Debug, Clone)]
enum SourceSpec {
    File {
        path: PathBuf,
        format: Option<Format>,
    },
    Text {
        text: String,
        format: Format,
    },
}

#[derive(Debug, Clone)]
struct EnvSpec {
    prefix: String,
    /// Explicit variables instead of the process environment.
    vars: Option<Vec<(String, String)>>,
}

/// Loads Pacer's limiters from configuration files and environment overrides.
///
/// Sources are applied in the order they are added, later ones winning key by key; environment
/// overrides, when enabled, come last. Keys match without regard to case, `_` or `-`, so the
/// .NET adaptive limiter's `appsettings.json` (`MaxUnitsPerMinute`, TimeSpans like `"00:00:05"`) and a Rust-style
/// `pacer.toml` (`max_units_per_minute`, `"5s"`) load the same. The section (default
/// [`DEFAULT_SECTION`]) holds `Limiters.<name>` and `DefaultLimiter`.
///
/// ```
/// use pacer_config::{ConfigLoader, Format};
///
/// let json = r#"{ "AdaptiveRateLimiting": { "Limiters": { "orders-api": {
///     "InitialUnitsPerMinute": 600, "MinUnitsPerMinute": 60, "MaxUnitsPerMinute": 1200,
///     "DecreaseCooldown": "00:00:05", "Controller": "Aimd",
///     "Aimd": { "IncreaseStep": 60, "IncreaseInterval": "00:00:10" } } } } }"#;
/// let settings = ConfigLoader::new()
///     .string(json, Format::Json)
///     .env_vars("PACER", [("PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE", "900")])
///     .load()?;
/// let orders = settings.limiter("orders-api").unwrap();
/// assert_eq!(orders.options.max_units_per_minute, 900.0); // the environment wins
/// assert_eq!(orders.options.aimd.increase_step, 60.0);
/// # Ok::<(), pacer_config::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ConfigLoader {
    sources: Vec<SourceSpec>,
    section: String,
    env: Option<EnvSpec>,
}

impl Default for ConfigLoader {
    fn default() -> Self {
        ConfigLoader::new()
    }
}

impl ConfigLoader {
    /// A loader with no source yet, the section [`DEFAULT_SECTION`] and no environment overrides.
    pub fn new() -> Self {
        ConfigLoader {
            sources: Vec::new(),
            section: DEFAULT_SECTION.to_owned(),
            env: None,
        }
    }

    /// Adds a file; its format comes from its extension (`.json` or `.toml`).
    pub fn file(mut self, path: impl AsRef<Path>) -> Self {
        self.sources.push(SourceSpec::File {
            path: path.as_ref().to_owned(),
            format: None,
        });
        self
    }

    /// Adds a file in the given format, whatever its extension.
    pub fn file_with_format(mut self, path: impl AsRef<Path>, format: Format) -> Self {
        self.sources.push(SourceSpec::File {
            path: path.as_ref().to_owned(),
            format: Some(format),
        });
        self
    }

    /// Adds configuration text (embedded defaults, tests).
    pub fn string(mut self, text: impl Into<String>, format: Format) -> Self {
        self.sources.push(SourceSpec::Text {
            text: text.into(),
            format,
        });
        self
    }

    /// The section that holds `Limiters` and `DefaultLimiter`, its levels separated by `:` (as
    /// .NET writes it), `.` or `__`: `"SearchApi:RateLimit"`. An empty section is the root of the
    /// file. Default [`DEFAULT_SECTION`].
    pub fn section(mut self, section: impl Into<String>) -> Self {
        self.section = section.into();
        self
    }

    /// Environment overrides from the process environment with the prefix [`DEFAULT_ENV_PREFIX`]:
    /// `PACER__ADAPTIVERATELIMITING__LIMITERS__ORDERS-API__MAXUNITSPERMINUTE=900`.
    pub fn env(self) -> Self {
        self.env_prefix(DEFAULT_ENV_PREFIX)
    }

    /// Environment overrides from the process environment with this prefix; levels are
    /// separated by `__`. Variables under the prefix must name the section (a misspelt one is an
    /// error, not ignored). An empty prefix reads every variable and checks none of those
    /// outside the section.
    pub fn env_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.env = Some(EnvSpec {
            prefix: prefix.into(),
            vars: None,
        });
        self
    }

    /// Environment overrides from these variables instead of the process environment, read as
    /// [`env_prefix`](Self::env_prefix) reads the real one. For tests, and for overrides that
    /// come from somewhere else.
    pub fn env_vars<I, K, V>(mut self, prefix: impl Into<String>, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env = Some(EnvSpec {
            prefix: prefix.into(),
            vars: Some(
                vars.into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        });
        self
    }

    /// The files this loader reads, in order (what a watcher watches).
    #[must_use]
    pub fn files(&self) -> Vec<&Path> {
        self.sources
            .iter()
            .filter_map(|s| match s {
                SourceSpec::File { path, .. } => Some(path.as_path()),
                SourceSpec::Text { .. } => None,
            })
            .collect()
    }

    /// The section's levels.
    fn section_path(&self) -> Vec<String> {
        self.section
            .replace("__", ":")
            .split([':', '.'])
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Reads every source and merges them into one tree.
    fn tree(&self, p: &mut Collector) -> Result<Node, ConfigError> {
        let mut root = Node::default();
        for source in &self.sources {
            let (tree, name) = read_source(source)?;
            for gap in root.merge(tree) {
                let path = gap.path.join(".");
                p.push(
                    format!("{name}: {path}.{}", gap.index),
                    None,
                    gap_message(&gap),
                    ProblemKind::OutOfRange,
                );
            }
        }
        if let Some(spec) = &self.env {
            let section = self.section_path();
            let first_levels = match section.first() {
                Some(first) => vec![first.as_str()],
                None => vec!["Limiters", "DefaultLimiter"],
            };
            let env = env::read(p, &spec.prefix, spec.vars.as_deref(), &first_levels);
            if let (Some(first), false) = (section.first(), spec.prefix.is_empty()) {
                check_env_roots(p, &env.tree, first, &spec.prefix);
            }
            for gap in root.merge(env.tree.clone()) {
                let mut under = gap.path.clone();
                under.push(gap.index.to_string());
                let names = env.variables_under(&under);
                p.push(
                    names.join(", "),
                    None,
                    gap_message(&gap),
                    ProblemKind::OutOfRange,
                );
            }
        }
        Ok(root)
    }

    /// Loads and validates every limiter.
    ///
    /// # Errors
    /// [`ConfigError::Source`] when a source cannot be read or parsed; [`ConfigError::Invalid`]
    /// with every problem otherwise.
    pub fn load(&self) -> Result<PacerSettings, ConfigError> {
        let mut p = Collector::default();
        let root = self.tree(&mut p)?;
        let settings = read_settings(&mut p, &root, &self.section_path());
        match Problems::new(p.list) {
            Some(problems) => Err(ConfigError::Invalid(problems)),
            None => {
                let settings = settings.expect("no problem means settings");
                for (_, limiter) in settings.limiters() {
                    for warning in &limiter.warnings {
                        tracing::warn!("configuration: {warning}");
                    }
                }
                Ok(settings)
            }
        }
    }

    /// Loads the configuration and returns one limiter's settings (matched by exact name, else
    /// without regard to case, `_` or `-`).
    ///
    /// # Errors
    /// As [`load`](Self::load), and [`ConfigError::Invalid`] when there is no such limiter.
    pub fn load_limiter(&self, name: &str) -> Result<LimiterSettings, ConfigError> {
        self.load_named_limiter(name).map(|(_, settings)| settings)
    }

    /// As [`load_limiter`](Self::load_limiter), with the limiter's name as the file writes it
    /// (`orders-api` for `ORDERS_API`).
    ///
    /// # Errors
    /// As [`load_limiter`](Self::load_limiter).
    pub fn load_named_limiter(&self, name: &str) -> Result<(String, LimiterSettings), ConfigError> {
        let settings = self.load()?;
        let found = settings.limiters().find(|(n, _)| *n == name).or_else(|| {
            settings
                .limiters()
                .find(|(n, _)| normalize(n) == normalize(name))
        });
        match found {
            Some((n, s)) => Ok((n.to_owned(), s.clone())),
            None => {
                let names: Vec<&str> = settings.names().collect();
                let mut p = Collector::default();
                let path = join(&join(&self.section, "Limiters"), name);
                let message = match nearest(name, &names) {
                    Some(near) => format!("no such limiter; did you mean {near}?"),
                    None => format!("no such limiter; the limiters are {}", names.join(", ")),
                };
                p.push(path, None, message, ProblemKind::Missing);
                Err(ConfigError::Invalid(
                    Problems::new(p.list).expect("one problem"),
                ))
            }
        }
    }

    #[cfg(feature = "reqwest")]
    /// Loads the configuration and builds the middleware with every limiter.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn build(&self) -> Result<PacerMiddleware, ConfigError> {
        self.load()?.build()
    }
}

/// What an override with a list index past the end is told.
fn gap_message(gap: &Gap) -> String {
    let next = match gap.len {
        0 => "a list set here starts at index 0".to_owned(),
        1 => "the list has 1 item, so the next index is 1".to_owned(),
        n => format!("the list has {n} items, so the next index is {n}"),
    };
    format!(
        "index {} is past the end of the list: {next} (an index within the list replaces that item, the next one appends)",
        gap.index
    )
}

/// A file or text as our tree, with the name errors give it.
fn read_source(source: &SourceSpec) -> Result<(Node, String), ConfigError> {
    let (text, format, name) = match source {
        SourceSpec::File { path, format } => {
            let format = match format.or_else(|| Format::of_path(path)) {
                Some(f) => f,
                None => {
                    return Err(ConfigError::Source {
                        message: format!(
                            "{}: unknown configuration format: expected a .json or .toml file",
                            path.display()
                        ),
                        source: None,
                    });
                }
            };
            let text = std::fs::read_to_string(path).map_err(|e| {
                ConfigError::source_error(format!("{}: cannot be read: {e}", path.display()), e)
            })?;
            (text, format, path.display().to_string())
        }
        SourceSpec::Text { text, format } => (text.clone(), *format, "configuration text".into()),
    };
    let tree = match format {
        Format::Json => source::json(&text, &name)?,
        Format::Toml => source::toml(&text, &name)?,
    };
    Ok((tree, name))
}

/// Every variable under the prefix must start with the section; a misspelt one is reported
/// rather than silently ignored.
fn check_env_roots(p: &mut Collector, tree: &Node, section: &str, prefix: &str) {
    let Node::Table(entries) = tree else { return };
    for (key, _) in entries {
        if normalize(key) == normalize(section) {
            continue;
        }
        let shown = format!("{}__{}", prefix.to_uppercase(), key.to_uppercase());
        let message = match nearest(key, &[section]) {
            Some(near) => format!(
                "unknown key in the environment; did you mean {}__{}?",
                prefix.to_uppercase(),
                near.to_uppercase()
            ),
            None => format!(
                "unknown key in the environment: variables under {}__ must start with {}__{}",
                prefix.to_uppercase(),
                prefix.to_uppercase(),
                section.to_uppercase()
            ),
        };
        p.push(
            shown,
            None,
            message,
            ProblemKind::UnknownKey { suggestion: None },
        );
    }
}

/// One limiter's adaptive options from a file, for the simulator's `--config FILE --limiter
/// NAME`: the [`LimiterOptions`] (the built-in controller is `options.controller`).
///
/// `section` is the section holding `Limiters` (`None`: [`DEFAULT_SECTION`]). The whole file is
/// validated; the limiter is matched by exact name, else without regard to case, `_` or `-`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let path = dir.path().join("pacer.toml");
/// # std::fs::write(&path, "[adaptive_rate_limiting.limiters.orders-api]\ncontroller = \"Cubic\"\nmax_units_per_minute = 5625\n").unwrap();
/// use pacer_core::ControllerKind;
///
/// let options = pacer_config::limiter_options_from_file(&path, None, "orders-api")?;
/// assert_eq!(options.controller, ControllerKind::Cubic);
/// assert_eq!(options.max_units_per_minute, 5625.0);
/// # Ok::<(), pacer_config::ConfigError>(())
/// ```
///
/// # Errors
/// As [`ConfigLoader::load_limiter`].
pub fn limiter_options_from_file(
    path: impl AsRef<Path>,
    section: Option<&str>,
    limiter: &str,
) -> Result<LimiterOptions, ConfigError> {
    let loader = ConfigLoader::new()
        .file(path)
        .section(section.unwrap_or(DEFAULT_SECTION));
    Ok(loader.load_limiter(limiter)?.options)
}

//! `Deserialize` and `Serialize` for the settings, so that an application's own configuration
//! struct can hold them as a field, whatever loads it (config-rs, figment, serde_json, toml).
//!
//! Why on top of the tree rather than derived: there is one reader. A value is deserialized into
//! the same tree the files are read into ([`Node`]), then read by the same validating reader as
//! [`ConfigLoader`](crate::ConfigLoader): keys match without regard to case, `_` or `-`,
//! durations are TimeSpans or lengths, every problem is reported with its path under the field
//! (`Limiters.orders-api.MaxWait`) and an unknown key suggests the nearest one. A derive would
//! be a second reader with its own rules and messages.
//!
//! Serializing writes the appsettings form (PascalCase keys, TimeSpan durations; see
//! `write.rs`), which deserializes back to equal settings.

use crate::error::{ConfigError, Problems};
use crate::reader::{At, Collector};
use crate::section::read_settings;
use crate::settings::{LimiterSettings, PacerSettings, ThrottlingSettings};
use crate::source::NodeVisitor;
use crate::spelling::Style;
use crate::tree::Node;
use crate::{limiter, throttling, write};
use serde::de::{self, Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Nil => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Int(i) => match i64::try_from(*i) {
                Ok(i) => s.serialize_i64(i),
                Err(_) => match u64::try_from(*i) {
                    Ok(u) => s.serialize_u64(u),
                    Err(_) => s.serialize_i128(*i),
                },
            },
            Node::Float(f) => s.serialize_f64(*f),
            Node::Str(text) => s.serialize_str(text),
            Node::Table(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Node::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

/// Deserializes any value into the tree, then reads it with `read`; every problem becomes one
/// line of the error.
fn read_with<'de, D, T>(
    d: D,
    read: impl FnOnce(&mut Collector, &At<'_>) -> Option<T>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let node = d.deserialize_any(NodeVisitor)?;
    let mut p = Collector::default();
    let value = read(&mut p, &At::new(String::new(), &node, Style::Pascal));
    match (Problems::new(p.list), value) {
        (None, Some(value)) => Ok(value),
        (Some(problems), _) => Err(de::Error::custom(ConfigError::Invalid(problems))),
        (None, None) => Err(de::Error::custom("invalid Pacer settings")),
    }
}

/// The section's content: `Limiters` by name, and `DefaultLimiter` (the table that sits under
/// `AdaptiveRateLimiting` in a file).
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct AppConfig {
///     database_url: String,
///     pacer: pacer_config::PacerSettings,
/// }
///
/// let config: AppConfig = serde_json::from_str(r#"{
///     "database_url": "postgres://localhost/app",
///     "pacer": { "Limiters": { "orders-api": { "MaxUnitsPerMinute": 1200, "MaxWait": "00:00:30" } } }
/// }"#)?;
/// assert_eq!(config.pacer.default_limiter(), "orders-api");
/// let pacer = config.pacer.build()?; // the middleware
/// # let _ = (pacer, config.database_url);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<'de> Deserialize<'de> for PacerSettings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read_with(d, |p, at| read_settings(p, at.node(), &[]))
    }
}

/// Writes the appsettings form: `{ "Limiters": { … }, "DefaultLimiter": "…" }`.
impl Serialize for PacerSettings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write::settings(self).serialize(s)
    }
}

/// One limiter's table (`MaxUnitsPerMinute`, `Throttling`, `Windows`, …), read and validated as
/// a limiter under `Limiters` is.
///
/// ```
/// let s: pacer_config::LimiterSettings =
///     serde_json::from_str(r#"{ "max_units_per_minute": 1200, "max_wait": "30s" }"#)?;
/// assert_eq!(s.options.max_units_per_minute, 1200.0);
/// let err = serde_json::from_str::<pacer_config::LimiterSettings>(r#"{ "MaxWiat": "30s" }"#)
///     .unwrap_err();
/// assert!(err.to_string().contains("MaxWiat: unknown key; did you mean MaxWait?"), "{err}");
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<'de> Deserialize<'de> for LimiterSettings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read_with(d, limiter::read)
    }
}

/// Writes the appsettings form, every option included.
impl Serialize for LimiterSettings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write::limiter(self).serialize(s)
    }
}

/// `Throttling`: an algorithm's name (`"Pacing"`) or a table with `Algorithm` and its parameters.
impl<'de> Deserialize<'de> for ThrottlingSettings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read_with(d, throttling::read)
    }
}

/// Writes `"None"`, or a table with `Algorithm` and every parameter.
impl Serialize for ThrottlingSettings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write::throttling(self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConfigLoader, Format};

    fn sample(name: &str) -> PacerSettings {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
        ConfigLoader::new().file(path.join(name)).load().unwrap()
    }

    #[test]
    fn a_round_trip_gives_the_same_settings() {
        for name in ["appsettings.json", "pacer.toml"] {
            let settings = sample(name);
            let json = serde_json::to_string(&settings).unwrap();
            let back: PacerSettings = serde_json::from_str(&json).unwrap();
            assert_eq!(back, settings, "{json}");
            let toml = toml::to_string(&settings).unwrap();
            let back: PacerSettings = toml::from_str(&toml).unwrap();
            assert_eq!(back, settings, "{toml}");
        }
    }

    #[test]
    fn the_appsettings_form_is_written() {
        let settings = ConfigLoader::new()
            .string(
                "[adaptive_rate_limiting.limiters.a]\nmax_wait = \"1d2h3m4.5s\"\nthrottling = \"None\"\n",
                Format::Toml,
            )
            .load()
            .unwrap();
        let value = serde_json::to_value(&settings).unwrap();
        let a = &value["Limiters"]["a"];
        assert_eq!(a["MaxWait"], "1.02:03:04.5");
        assert_eq!(a["Throttling"], "None");
        assert_eq!(a["MaxUnitsPerMinute"], 1e9);
        assert!(a.get("InitialUnitsPerMinute").is_none(), "unset: unlimited");
        assert!(a.get("MaxConcurrent").is_none(), "unset: no cap");
        assert_eq!(value["DefaultLimiter"], "a");
        let orders = serde_json::to_value(sample("pacer.toml")).unwrap();
        assert_eq!(orders["Limiters"]["orders-api"]["MaxConcurrent"], 8);
    }

    #[test]
    fn problems_are_the_readers() {
        let err = serde_json::from_str::<PacerSettings>(
            r#"{ "Limiters": { "a": { "MaxWait": "soon", "Brust": "1s" } }, "DefaultLimitr": "a" }"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("Limiters.a.MaxWait = \"soon\": expected a duration"),
            "{err}"
        );
        assert!(
            err.contains("Limiters.a.Brust: unknown key; did you mean Burst?"),
            "{err}"
        );
        assert!(
            err.contains("DefaultLimitr: unknown key; did you mean DefaultLimiter?"),
            "{err}"
        );
        let err = serde_json::from_str::<ThrottlingSettings>(r#""Pacng""#).unwrap_err();
        assert!(
            err.to_string().contains("did you mean \"Pacing\"?"),
            "{err}"
        );
    }
}

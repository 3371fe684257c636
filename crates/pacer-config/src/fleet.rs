//! A limiter's fleet (`Fleet`: a table), and turning it into a fleet store.

use crate::error::ProblemKind;
use crate::reader::{At, Collector};
use crate::window::{check_key_prefix, check_redis_url, is_redis_url};
use pacer_core::{FleetOptions, FleetStore, InvalidOption};
use std::sync::Arc;

const FLEET_KEYS: &[&str] = &[
    "Store",
    "KeyPrefix",
    "Period",
    "Lease",
    "Timeout",
    "FallbackAfter",
];

/// A limiter's fleet: every process whose limiter of this name has the same `Fleet` shares one
/// learned rate per endpoint through Redis (docs/fleet.md). Needs the `redis` feature.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FleetSettings {
    /// `Store`: the Redis URL (`redis://…` or `rediss://…`; it may hold a password, and is
    /// never logged). Required.
    pub url: String,
    /// `KeyPrefix`: the prefix of the fleet's keys; Pacer's default (`pacer:f:`) when `None`.
    pub key_prefix: Option<String>,
    /// `Period`, `Lease`, `Timeout`, `FallbackAfter`: how a member talks to the store.
    pub options: FleetOptions,
}

impl FleetSettings {
    /// A fleet in the Redis at `url`, with the default options.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        FleetSettings {
            url: url.into(),
            key_prefix: None,
            options: FleetOptions::default(),
        }
    }

    /// The store, connected on its first use (a process starts while Redis is down; its
    /// members then run their own controllers until it answers).
    ///
    /// # Errors
    ///
    /// A message when the URL or the key prefix is invalid, or without the `redis` feature;
    /// [`crate::ConfigLoader::load`] checks these already.
    pub fn to_store(&self) -> Result<Arc<dyn FleetStore>, String> {
        redis_store(&self.url, self.key_prefix.as_deref())
    }
}

#[cfg(feature = "redis")]
fn redis_store(url: &str, key_prefix: Option<&str>) -> Result<Arc<dyn FleetStore>, String> {
    let windows = pacer_redis::RedisWindowStore::builder()
        .connect_lazy(url)
        .map_err(|e| e.to_string())?;
    let store = match key_prefix {
        Some(prefix) => pacer_redis::RedisFleetStore::with_prefix(&windows, prefix)
            .map_err(|e| e.to_string())?,
        None => pacer_redis::RedisFleetStore::on(&windows),
    };
    Ok(Arc::new(store))
}

#[cfg(not(feature = "redis"))]
fn redis_store(_url: &str, _key_prefix: Option<&str>) -> Result<Arc<dyn FleetStore>, String> {
    Err(NEEDS_REDIS.to_owned())
}

const NEEDS_REDIS: &str = "a fleet is kept in Redis, which needs Pacer's `redis` feature";

/// Reads `Fleet`: a table with a `Store` (a Redis URL) and the members' options.
pub(crate) fn read(p: &mut Collector, at: &At<'_>) -> Option<FleetSettings> {
    let before = p.count();
    let mut t = at.table(p)?;
    let url = match t.get(p, "Store") {
        Some(f) => match f.text(p) {
            Some(s) if is_redis_url(&s) => {
                if cfg!(not(feature = "redis")) {
                    p.push(f.path.clone(), None, NEEDS_REDIS, ProblemKind::NotSupported);
                } else if let Err(e) = check_redis_url(&s) {
                    p.push(f.path.clone(), None, e, ProblemKind::WrongType);
                }
                Some(s)
            }
            Some(_) => {
                // The value may be a URL with a password: never repeat it.
                p.push(
                    f.path.clone(),
                    None,
                    "expected a Redis URL (redis://… or rediss://…): a fleet is shared through Redis",
                    ProblemKind::WrongType,
                );
                None
            }
            None => None,
        },
        None => {
            p.push(
                t.path_of("Store"),
                None,
                "a fleet needs its store, a Redis URL",
                ProblemKind::Missing,
            );
            None
        }
    };
    let mut key_prefix = None;
    if let Some(f) = t.get(p, "KeyPrefix")
        && let Some(prefix) = f.text(p)
    {
        match check_key_prefix(&prefix) {
            Ok(()) => key_prefix = Some(prefix),
            Err(e) => p.push(f.path.clone(), Some(f.shown()), e, ProblemKind::OutOfRange),
        }
    }
    let mut options = FleetOptions::default();
    let mut shown = Vec::new();
    for (key, slot) in [
        ("Period", &mut options.period),
        ("Lease", &mut options.lease),
        ("Timeout", &mut options.timeout),
        ("FallbackAfter", &mut options.fallback_after),
    ] {
        if let Some(f) = t.get(p, key)
            && let Some(d) = f.duration(p)
        {
            *slot = d;
            shown.push((key, f.path.clone(), f.shown()));
        }
    }
    if let Err(e) = options.validate() {
        for InvalidOption {
            option,
            value: in_force,
            rule,
            ..
        } in e.into_errors()
        {
            // An option the file leaves out is shown at its default, marked as such: the rule
            // it breaks is about another option written beside it.
            let (path, value) = shown.iter().find(|(key, _, _)| *key == option).map_or_else(
                || {
                    (
                        t.path_of(&option),
                        Some(format!("{in_force} (the default)")),
                    )
                },
                |(_, path, value)| (path.clone(), Some(value.clone())),
            );
            p.push(path, value, rule, ProblemKind::OutOfRange);
        }
    }
    t.finish(p, FLEET_KEYS);
    if p.count() > before {
        return None;
    }
    Some(FleetSettings {
        url: url?,
        key_prefix,
        options,
    })
}

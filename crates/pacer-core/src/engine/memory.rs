//! What a limiter's endpoints learnt, saved and given to a restarted process: a deploy starts
//! where it was instead of learning each endpoint's limit again (docs/limiter.md, "Across a
//! restart").

use super::Engine;
use crate::LimiterMemory;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// What one endpoint's limiter learnt, with the endpoint's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EndpointMemory {
    /// The endpoint's key (`https://api.example.com:443` with the default key).
    pub key: String,
    /// What its limiter learnt.
    #[serde(flatten)]
    pub limiter: LimiterMemory,
}

/// What the endpoints of a driver's limiters learnt, by limiter name, and when it was saved
/// (wall-clock time): `PacerMiddleware::remember` and `recall` (`PacerLayer`'s too), to keep in
/// a file or a database across a restart. Serialized with serde (JSON below).
///
/// A memory older than a limiter's `EndpointIdleTtl` (1 h by default: the age at which an idle
/// endpoint forgets what it learnt) is not recalled for that limiter.
///
/// ```
/// use pacer_core::PacerMemory;
///
/// let json = r#"{
///   "saved_at": "2026-12-07T09:00:00Z",
///   "limiters": { "orders": [
///     { "key": "https://api.example.com:443", "rate": 1200.0,
///       "controller": { "limit": 1250.0, "firm": true } } ] }
/// }"#;
/// let memory: PacerMemory = serde_json::from_str(json).unwrap();
/// assert_eq!(memory.limiters["orders"][0].limiter.rate, 1200.0);
/// let again: PacerMemory = serde_json::from_str(&serde_json::to_string(&memory).unwrap()).unwrap();
/// assert_eq!(again, memory);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PacerMemory {
    /// When it was saved: its age when it is recalled decides whether it is trusted.
    #[serde(with = "rfc3339")]
    pub saved_at: SystemTime,
    /// Each limiter's endpoints, by the limiter's name.
    pub limiters: BTreeMap<String, Vec<EndpointMemory>>,
}

impl PacerMemory {
    /// An empty memory saved at `saved_at`.
    #[must_use]
    pub fn new(saved_at: SystemTime) -> Self {
        PacerMemory {
            saved_at,
            limiters: BTreeMap::new(),
        }
    }

    /// Its age at `now` (zero if it was saved in the future of `now`, a clock that stepped
    /// back).
    #[must_use]
    pub fn age(&self, now: SystemTime) -> Duration {
        now.duration_since(self.saved_at).unwrap_or_default()
    }
}

/// What a recall did ([`PacerMemory`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recalled {
    /// Endpoints that start from what they learnt before.
    pub endpoints: usize,
    /// Endpoints not recalled: the memory is older than their limiter's `EndpointIdleTtl`,
    /// its numbers are not sound, the endpoint had already had a response, or its limiter is
    /// in a fleet.
    pub skipped: usize,
    /// Limiter names in the memory that this driver does not have.
    pub unknown_limiters: Vec<String>,
}

impl Recalled {
    /// Counts one endpoint's recall by what it changed ([`Limiter::recall`](crate::Limiter::recall)): nothing, when
    /// it was skipped.
    pub fn count(&mut self, changes: &crate::Changes) {
        if changes.is_empty() {
            self.skipped += 1;
        } else {
            self.endpoints += 1;
        }
    }
}

impl Engine {
    /// What each endpoint that limits learnt ([`Limiter::memory`](crate::Limiter::memory)), by key.
    #[must_use]
    pub fn remember(&self) -> Vec<EndpointMemory> {
        self.limiters()
            .into_iter()
            .filter_map(|(key, limiter)| {
                Some(EndpointMemory {
                    key: key.to_string(),
                    limiter: limiter.memory()?,
                })
            })
            .collect()
    }
}

/// A `SystemTime` as an RFC 3339 date in UTC (`2026-12-07T09:00:00.250Z`), read back with any
/// offset.
mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub(super) fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::headers::format_rfc3339(*t))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(d)?;
        crate::headers::parse_rfc3339(&text)
            .map(crate::headers::from_epoch_nanos)
            .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 date: {text:?}")))
    }
}

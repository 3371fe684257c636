//! `GET /stats`: what the served model has counted, as JSON, for tests and for `live`.

use serde::{Deserialize, Serialize};

/// The value of [`ServerStats::server`], by which `live` knows the target is a `pacer-sim serve`.
pub const SERVER_NAME: &str = "pacer-sim";

/// The body of `GET /stats` (and of `POST /reset`, after the reset). Times and quotas are in
/// story time: units per story minute, story seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Always [`SERVER_NAME`].
    pub server: String,
    /// The story the server plays.
    pub story: String,
    /// `--speed`: story time runs this many times faster than the real clock.
    pub speed: f64,
    /// `--headers`: `none`, `draft11` or `github`.
    pub headers: String,
    /// `--quirk`: the quirks on, in the order of [`QUIRK_NAMES`](super::QUIRK_NAMES); empty
    /// when none is (and when a server from before quirks answers).
    #[serde(default)]
    pub quirks: Vec<String>,
    /// `--quota`: the hidden quota before the story changes it, units per story minute.
    pub base_quota: u64,
    /// The quota available to clients now (the story's, less a neighbour's share; 0 during a
    /// stop), units per story minute, that is per window.
    pub quota: u64,
    /// The window of the quota, story seconds (60).
    pub window_s: u64,
    /// Story seconds since the server started or was last reset.
    pub elapsed_s: f64,
    /// Units in the window now.
    pub used_units: u64,
    /// Units accepted since the start or the last reset.
    pub accepted_units: u64,
    /// Requests accepted since the start or the last reset.
    pub accepted_requests: u64,
    /// 429s answered since the start or the last reset.
    pub throttled: u64,
    /// Requests refused with 400 (a bad `x-cost`).
    pub bad_requests: u64,
}

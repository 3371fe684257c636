//! What the Pacer controller remembers between events, besides its estimate.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a throttle before the limiter was a window old measured.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct Young {
    /// The units accepted since the start, per minute of `QuotaWindow` (this process's).
    pub(super) accepted: f64,
    /// The highest send rate at the young throttles since the last one a success read (this
    /// process's), units per minute.
    pub(super) sent: f64,
    /// The limiter's age at the throttle.
    pub(super) age: Duration,
    /// When the throttle came (as a [`Controller`](crate::Controller); `None` in the pure
    /// contract, which sees no times).
    #[serde(default)]
    pub(super) at: Option<crate::Timestamp>,
    /// A success to a request sent before the throttle came a settled while after it: the
    /// server held the request (a queue, as nginx's `limit_req` keeps without `nodelay`), so
    /// what it accepted since the start came at its pace, not as a burst.
    #[serde(default)]
    pub(super) queued: bool,
}

/// An estimate set aside by a long Retry-After that met the rate at or under it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct Suspended {
    /// The estimate (whole budget) and whether it was firm.
    pub(super) limit: f64,
    pub(super) firm: bool,
    /// The limiter's age a window after the pause ends.
    pub(super) until: Duration,
}

/// A higher limit seen before the limit fell.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct Ceiling {
    /// The limit (whole budget) and whether it was firm.
    pub(super) limit: f64,
    pub(super) firm: bool,
    /// The limiter's age when it fell.
    pub(super) at: Duration,
}

/// A level the limit held: a fall in steps is measured from it, and a run of bare throttles
/// far under it is no bucket's slack (a fall is then measured as at any throttle).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct Peak {
    /// The level (whole budget): a firm estimate a throttle confirmed and that held a minute,
    /// or the lower of a first estimate and the throttle that found no fall from it.
    pub(super) limit: f64,
    /// The limiter's age at the throttle that ended it.
    pub(super) at: Duration,
    /// The throttles since that one.
    pub(super) steps: u32,
}

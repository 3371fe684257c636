//! The model of the server's limiter: what one process can tell of the limiter an API runs, from
//! what it sent and what came back.
//!
//! Every endpoint keeps a [`Record`] of its last [`RECORD_CAPACITY`] sends: when, how many units,
//! and whether the server accepted or refused them (with its `Retry-After`), and the units
//! accepted each second for [`OLDER_SECS`] before them. From it, [`Record::estimate`] scores
//! hypotheses about the server's limiter — a sliding window, a fixed window with its boundary, a
//! token or leaky bucket, each over the common windows (1 s, 10 s, 1 min, 15 min) or the window
//! the server's rate-limit fields name — and returns the likeliest as a [`ServerModel`]: its
//! [`LimiterKind`], its limit and window, a confidence.
//!
//! How a hypothesis is scored (`docs/server-model.md` gives the derivation):
//! - **Separation.** Under the true hypothesis the server refuses a request exactly when the units
//!   its limiter holds, plus the request's, pass the limit. This process sees only its own units,
//!   but while the other clients' share is steady its own usage still ranks the requests the way
//!   the server's does: the refused ones above the accepted ones. The score is the probability
//!   that a refused request's usage is above an accepted one's (the area under the ROC curve of
//!   usage as a predictor of refusal): 1 for a perfect separation, ½ for none.
//! - **Retry-After.** A fixed window's refusal says when the window turns: every refusal's send
//!   time plus its `Retry-After` falls on one lattice of step W (to the second the header is
//!   rounded to). A bucket's says when one request's units have drained, a short time; a sliding
//!   window's, no later than when this process's oldest units leave it. The score is the share of
//!   refusals whose `Retry-After` the hypothesis predicts.
//!
//! The limit of the likeliest hypothesis is this process's usage at its refusals (their median)
//! times the instance count: each process of a fleet that shares the limit evenly sees its share.

mod estimate;
mod record;
#[cfg(test)]
mod tests;

pub use record::{EVERY_REFUSAL, OLDER_SECS, RECORD_CAPACITY, Record};

use std::fmt;
use std::time::Duration;

/// The kind of limiter a server runs, as far as [`ServerModel`] can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimiterKind {
    /// A sliding window: at most `limit` units in any span of `window`.
    SlidingWindow,
    /// A fixed window: at most `limit` units between two boundaries `window` apart.
    FixedWindow,
    /// A token bucket, a leaky bucket or GCRA (one algorithm seen from outside): a burst of
    /// `limit` units, refilled at `limit` per `window`.
    Bucket,
}

impl LimiterKind {
    /// The kind's name as the docs and `pacer-sim` print it: `sliding`, `fixed`, `bucket`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            LimiterKind::SlidingWindow => "sliding",
            LimiterKind::FixedWindow => "fixed",
            LimiterKind::Bucket => "bucket",
        }
    }
}

impl fmt::Display for LimiterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What this process has learned of an endpoint's server-side limiter: the likeliest hypothesis
/// and how sure it is. Read it with [`Endpoint::server_model`](crate::Endpoint::server_model),
/// the middleware's `EndpointState::server` or the layer's `PacerLayer::server_model`.
///
/// ```
/// use pacer_core::{LimiterKind, ServerModel};
/// # fn show(model: &ServerModel) {
/// println!(
///     "{} window, {:.0} per {:?} (confidence {:.2})",
///     model.kind, model.limit, model.window, model.confidence
/// );
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerModel {
    /// The kind of limiter.
    pub kind: LimiterKind,
    /// Its limit in units per [`window`](Self::window), for the whole budget (this process's
    /// share times the instance count), or the limit the server's fields name.
    pub limit: f64,
    /// Its window (a bucket's: the time it takes to refill from empty).
    pub window: Duration,
    /// A fixed window's boundary: where its windows start, as an offset into the window from
    /// time zero on the limiter's clock. `None` for the other kinds.
    pub boundary: Option<Duration>,
    /// How likely the kind is against the other kinds, from 0 to 1 (one third: the record
    /// cannot tell them apart).
    pub confidence: f64,
    /// True when the limit and the window are the ones the server's rate-limit fields name.
    pub from_fields: bool,
    /// The refusals the estimate rests on.
    pub refusals: u32,
    /// The longest `Retry-After` seen, when it is longer than the window: the server shuts a
    /// client out for longer than its window (a penalty box), so a refusal costs more than a
    /// window's wait.
    pub penalty: Option<Duration>,
}

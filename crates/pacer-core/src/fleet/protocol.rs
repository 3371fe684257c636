//! What a member and a fleet store say to each other: two calls, each atomic in the store.

use crate::Timestamp;
use std::time::Duration;

/// What one member measures of its own requests, reported at each sync.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct Gauges {
    /// The units its callers asked for, per minute (whatever was granted, queued or refused).
    pub demand: f64,
    /// Its limiter's measured send rate, units per minute.
    pub measured: f64,
    /// The units waiting in its limiter's queue.
    pub queued: f64,
    /// Whether a request waited for units since its last report.
    pub waited: bool,
}

impl Gauges {
    /// A limiter's gauges: its measured send rate, its queued units, and whether a request
    /// waited (the member adds its demand).
    #[must_use]
    pub fn new(measured: f64, queued: f64, waited: bool) -> Self {
        Gauges {
            demand: 0.0,
            measured,
            queued,
            waited,
        }
    }
}

/// A member's periodic call: it renews its lease, adds what it saw since its last sync, and
/// asks for the fleet's state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SyncRequest {
    /// The member's id (unique in the fleet).
    pub member: String,
    /// How long the member counts as alive without another sync.
    pub lease: Duration,
    /// The version of the fleet's state the member holds (0: none): the store sends the state
    /// only when its version differs.
    pub known_version: u64,
    /// Its gauges now.
    pub gauges: Gauges,
    /// Units of successful responses since its last sync that reached the store.
    pub accepted: f64,
    /// How long a tick the store hands this member may take before another member may tick.
    pub claim: Duration,
}

/// The store's answer to a [`SyncRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SyncReply {
    /// The store's clock when it answered: the fleet's timeline.
    pub now: Timestamp,
    /// The members alive (the caller among them).
    pub members: u32,
    /// The version of the fleet's state (0: there is none).
    pub version: u64,
    /// The state, when its version differs from the one the member holds.
    pub state: Option<Vec<u8>>,
    /// Units of successful responses the members reported that no commit has counted yet.
    pub accepted: f64,
    /// When the fleet's controller is due a tick and this member is to run it: every live
    /// member's last gauges.
    pub tick: Option<TickData>,
}

/// What a member that runs a tick is given.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TickData {
    /// Every live member's last gauges.
    pub gauges: Vec<Gauges>,
}

/// A member writes the fleet's state: only over the version it read, so that no change is lost.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CommitRequest {
    /// The member's id.
    pub member: String,
    /// The version the new state was made from (0: there was none).
    pub expected_version: u64,
    /// The new state.
    pub state: Vec<u8>,
    /// The accepted units the new state counted (taken off the store's sum; what members added
    /// since stays for the next commit).
    pub accepted: f64,
    /// For a tick: when the next one is due, on the store's clock (the caller's claim is
    /// released).
    pub next_tick: Option<Timestamp>,
    /// Whether the other members should hear of it at once (a cut, a stop): the store tells
    /// them ([`FleetMember::on_news`](crate::FleetMember::on_news)), and they sync.
    pub urgent: bool,
}

/// The store's answer to a [`CommitRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CommitReply {
    /// True if the state was written (the version was the expected one).
    pub committed: bool,
    /// The state's version now.
    pub version: u64,
    /// When not committed: the state in the store (another member wrote first).
    pub state: Option<Vec<u8>>,
}

impl SyncRequest {
    /// A request of `member` with `lease`, holding version `known_version`.
    #[must_use]
    pub fn new(member: impl Into<String>, lease: Duration, known_version: u64) -> Self {
        SyncRequest {
            member: member.into(),
            lease,
            known_version,
            gauges: Gauges::default(),
            accepted: 0.0,
            claim: lease,
        }
    }
}

impl SyncReply {
    /// An answer at `now` (the store's clock) with `members` alive and the state at `version`,
    /// not sent; nothing accepted, no tick. For a store of one's own.
    #[must_use]
    pub fn new(now: Timestamp, members: u32, version: u64) -> Self {
        SyncReply {
            now,
            members,
            version,
            state: None,
            accepted: 0.0,
            tick: None,
        }
    }
}

impl CommitReply {
    /// An answer: written or not, the version now, and (when not written) the state in the
    /// store. For a store of one's own.
    #[must_use]
    pub fn new(committed: bool, version: u64, state: Option<Vec<u8>>) -> Self {
        CommitReply {
            committed,
            version,
            state,
        }
    }
}

impl CommitRequest {
    /// A write of `state` by `member` over version `expected_version`.
    #[must_use]
    pub fn new(member: impl Into<String>, expected_version: u64, state: Vec<u8>) -> Self {
        CommitRequest {
            member: member.into(),
            expected_version,
            state,
            accepted: 0.0,
            next_tick: None,
            urgent: false,
        }
    }
}

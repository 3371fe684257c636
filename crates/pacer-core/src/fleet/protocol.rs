//! What a member and a fleet store say to each other: two calls, each atomic in the store, and
//! the pool's draw.

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

/// A request's units drawn from the fleet's pool ([`FleetStore::draw`](crate::FleetStore::draw)):
/// in a fleet so large that a member's even share could not serve its requests from a queue of
/// its own, every member draws each request's units from one bucket in the store, filled at the
/// fleet's rate ([`FleetMember::pool`](crate::FleetMember::pool)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DrawRequest {
    /// The units the request costs.
    pub units: f64,
    /// The fleet's rate, units per minute: the pool fills at it.
    pub rate: f64,
    /// The units the pool may hold when no one draws (the fleet's `Burst` at its rate).
    pub burst: f64,
    /// The longest the request may wait for its units: past it the store takes nothing.
    pub max_wait: Duration,
    /// The end of the server's stop, on the store's clock ([`Timestamp::ZERO`]: none): no unit
    /// is handed out for a send before it, and the bucket is empty then, so that the requests
    /// that waited the stop out go at the rate, not at its end at once.
    pub not_before: Timestamp,
}

impl DrawRequest {
    /// A draw of `units` from a pool filled at `rate` units a minute, holding at most `burst`,
    /// for a request that may wait `max_wait`.
    #[must_use]
    pub fn new(units: f64, rate: f64, burst: f64, max_wait: Duration) -> Self {
        DrawRequest {
            units,
            rate,
            burst,
            max_wait,
            not_before: Timestamp::ZERO,
        }
    }
}

/// The store's answer to a [`DrawRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DrawReply {
    /// The store's clock when it answered.
    pub now: Timestamp,
    /// When the request may go, on the store's clock (`now` or later, at most `max_wait`
    /// after it): its units are taken. `None`: it would wait longer than `max_wait`, and
    /// nothing was taken.
    pub at: Option<Timestamp>,
    /// When the units would be there (`at` when they were taken): how long a refused request
    /// would have had to wait.
    pub earliest: Timestamp,
}

impl DrawReply {
    /// An answer at `now`: the units taken for a send at `at`, or not taken (`None`) though
    /// they would be there at `earliest`. For a store of one's own.
    #[must_use]
    pub fn new(now: Timestamp, at: Option<Timestamp>, earliest: Timestamp) -> Self {
        DrawReply { now, at, earliest }
    }
}

/// The pool's rule, one for every store (GCRA, on the store's clock, in microseconds as Redis
/// keeps it). The pool keeps `tat`, when it would next be full (T: a unit's time at the rate,
/// `burst × T` its slack), and the rate of its last draw:
///
/// 1. a draw at another rate restates the backlog (`tat − now`, the units handed out ahead) at
///    the new rate: after a cut the units already promised take longer to drain, and no new
///    unit is handed out before they have;
/// 2. the bucket is empty when a stop ends (`tat` at least `not_before + burst × T`): the
///    requests that waited the stop out go at the rate, not as one burst;
/// 3. a draw of `units` at `now` may go at `max(now, max(tat, now) − burst × T)`; if that is no
///    later than `max_wait` from `now`, its units are taken (`tat` becomes
///    `max(tat, now) + units × T`).
///
/// Returns the send time, and the new `tat` when the units were taken.
pub(crate) fn draw_rule(
    tat: u64,
    rate: f64,
    now: u64,
    request: &DrawRequest,
) -> (u64, Option<u64>) {
    if !(request.rate > 0.0 && request.rate.is_finite()) {
        return (u64::MAX, None);
    }
    let tat = if rate > 0.0 && tat > now && rate != request.rate {
        now + ((tat - now) as f64 * rate / request.rate) as u64
    } else {
        tat
    };
    let unit_us = 60e6 / request.rate;
    let slack = (request.burst.max(0.0) * unit_us) as u64;
    // No stop: nothing is empty at time zero.
    let stop_end = match request.not_before.as_nanos() / 1_000 {
        0 => 0,
        not_before => not_before.saturating_add(slack),
    };
    let base = tat.max(stop_end).max(now);
    let at = base.saturating_sub(slack).max(now);
    if at - now > u64::try_from(request.max_wait.as_micros()).unwrap_or(u64::MAX) {
        return (at, None);
    }
    (at, Some(base + (request.units.max(0.0) * unit_us) as u64))
}

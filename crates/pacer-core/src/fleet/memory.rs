//! A fleet store in memory: for tests, the simulator, and the processes of one machine that
//! share one store value.

use super::protocol::draw_rule;
use super::{
    CommitReply, CommitRequest, DrawReply, DrawRequest, FleetFuture, FleetStore, Gauges,
    NewsFuture, SyncReply, SyncRequest, TickData,
};
use crate::{Clock, Timestamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A fleet no member syncs for this long is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Fleets in memory, on a [`Clock`] of the caller's (the simulator calls
/// [`sync_at`](Self::sync_at) and [`commit_at`](Self::commit_at) on its virtual time instead).
/// Same rules as every [`FleetStore`].
///
/// ```
/// use pacer_core::{FleetStore, MemoryFleetStore, RealClock, SyncRequest};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = MemoryFleetStore::new(RealClock::new());
/// let reply = store
///     .sync("orders-api:https://api.example.com", &SyncRequest::new("a", Duration::from_secs(3), 0))
///     .await?;
/// assert_eq!((reply.members, reply.version), (1, 0), "the first member; no state yet");
/// assert!(reply.tick.is_some(), "a fleet that never ticked is due one");
/// # Ok(()) }
/// ```
pub struct MemoryFleetStore {
    clock: Arc<dyn Clock>,
    fleets: Mutex<HashMap<String, Fleet>>,
    /// Each fleet's news of urgent commits, for the members waiting on it.
    news: Mutex<HashMap<String, Arc<Notify>>>,
}

impl fmt::Debug for MemoryFleetStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryFleetStore")
            .field("fleets", &self.fleets.lock().len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Fleet {
    /// Member → its lease's end and its last gauges.
    members: HashMap<String, (Timestamp, Gauges)>,
    version: u64,
    state: Option<Vec<u8>>,
    accepted: f64,
    next_tick: Option<Timestamp>,
    claim: Option<(String, Timestamp)>,
    /// The pool's `tat` (when it would next be full), in microseconds, and the rate of its last
    /// draw.
    pool_tat: u64,
    pool_rate: f64,
    touched: Timestamp,
}

impl MemoryFleetStore {
    /// A store on `clock`.
    pub fn new(clock: impl Clock) -> Self {
        MemoryFleetStore {
            clock: Arc::new(clock),
            fleets: Mutex::new(HashMap::new()),
            news: Mutex::new(HashMap::new()),
        }
    }

    /// [`FleetStore::sync`] at `now`.
    pub fn sync_at(&self, key: &str, request: &SyncRequest, now: Timestamp) -> SyncReply {
        let mut fleets = self.fleets.lock();
        fleets.retain(|_, f| now.saturating_duration_since(f.touched) < FORGET_AFTER);
        let fleet = fleets.entry(key.to_owned()).or_default();
        fleet.touched = now;
        fleet.members.retain(|_, (until, _)| *until > now);
        fleet.members.insert(
            request.member.clone(),
            (now.saturating_add(request.lease), request.gauges),
        );
        fleet.accepted += request.accepted;
        let due = fleet.next_tick.is_none_or(|next| now >= next);
        let free = match &fleet.claim {
            None => true,
            Some((holder, until)) => *until <= now || *holder == request.member,
        };
        let tick = (due && free).then(|| {
            fleet.claim = Some((request.member.clone(), now.saturating_add(request.claim)));
            TickData {
                gauges: fleet.members.values().map(|(_, g)| *g).collect(),
            }
        });
        SyncReply {
            now,
            members: fleet.members.len() as u32,
            version: fleet.version,
            state: (fleet.version != request.known_version)
                .then(|| fleet.state.clone())
                .flatten(),
            accepted: fleet.accepted,
            tick,
        }
    }

    /// [`FleetStore::commit`] at `now`.
    pub fn commit_at(&self, key: &str, request: &CommitRequest, now: Timestamp) -> CommitReply {
        let mut fleets = self.fleets.lock();
        let fleet = fleets.entry(key.to_owned()).or_default();
        fleet.touched = now;
        if fleet.version != request.expected_version {
            return CommitReply {
                committed: false,
                version: fleet.version,
                state: fleet.state.clone(),
            };
        }
        fleet.version += 1;
        fleet.state = Some(request.state.clone());
        fleet.accepted = (fleet.accepted - request.accepted).max(0.0);
        if let Some(next) = request.next_tick {
            fleet.next_tick = Some(next);
            if fleet
                .claim
                .as_ref()
                .is_some_and(|(holder, _)| *holder == request.member)
            {
                fleet.claim = None;
            }
        }
        let version = fleet.version;
        drop(fleets);
        if request.urgent
            && let Some(news) = self.news.lock().get(key)
        {
            news.notify_waiters();
        }
        CommitReply {
            committed: true,
            version,
            state: None,
        }
    }

    /// [`FleetStore::draw`] at `now`.
    pub fn draw_at(&self, key: &str, request: &DrawRequest, now: Timestamp) -> DrawReply {
        let mut fleets = self.fleets.lock();
        let fleet = fleets.entry(key.to_owned()).or_default();
        fleet.touched = now;
        let now_us = now.as_nanos() / 1_000;
        let (at, tat) = draw_rule(fleet.pool_tat, fleet.pool_rate, now_us, request);
        // `now` itself to the nanosecond when there is no wait.
        let earliest = if at <= now_us {
            now
        } else {
            Timestamp::from_nanos(at.saturating_mul(1_000))
        };
        if let Some(tat) = tat {
            fleet.pool_tat = tat;
            fleet.pool_rate = request.rate;
        }
        DrawReply {
            now,
            at: tat.map(|_| earliest),
            earliest,
        }
    }

    /// [`FleetStore::leave`], at once.
    pub fn leave_now(&self, key: &str, member: &str) {
        if let Some(fleet) = self.fleets.lock().get_mut(key) {
            fleet.members.remove(member);
        }
    }

    /// Forgets every fleet (as a flush of a shared store would).
    pub fn clear(&self) {
        self.fleets.lock().clear();
    }
}

impl FleetStore for MemoryFleetStore {
    fn sync<'a>(&'a self, key: &'a str, request: &'a SyncRequest) -> FleetFuture<'a, SyncReply> {
        let reply = self.sync_at(key, request, self.clock.now());
        Box::pin(std::future::ready(Ok(reply)))
    }

    fn commit<'a>(
        &'a self,
        key: &'a str,
        request: &'a CommitRequest,
    ) -> FleetFuture<'a, CommitReply> {
        let reply = self.commit_at(key, request, self.clock.now());
        Box::pin(std::future::ready(Ok(reply)))
    }

    fn leave<'a>(&'a self, key: &'a str, member: &'a str) -> FleetFuture<'a, ()> {
        self.leave_now(key, member);
        Box::pin(std::future::ready(Ok(())))
    }

    fn draw<'a>(&'a self, key: &'a str, request: &'a DrawRequest) -> FleetFuture<'a, DrawReply> {
        let reply = self.draw_at(key, request, self.clock.now());
        Box::pin(std::future::ready(Ok(reply)))
    }

    fn news<'a>(&'a self, key: &'a str) -> NewsFuture<'a> {
        let notify = Arc::clone(self.news.lock().entry(key.to_owned()).or_default());
        // Made now: an urgent commit from this moment on wakes it, polled or not.
        let notified = notify.notified_owned();
        Box::pin(notified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;
    use crate::fleet_conformance::FleetFixture;

    struct Memory {
        clock: ManualClock,
        store: MemoryFleetStore,
    }

    impl FleetFixture for Memory {
        fn store(&self) -> &dyn FleetStore {
            &self.store
        }
        fn clock(&self) -> &ManualClock {
            &self.clock
        }
    }

    async fn memory() -> Memory {
        let clock = ManualClock::new();
        Memory {
            store: MemoryFleetStore::new(clock.clone()),
            clock,
        }
    }

    mod conformance {
        use super::*;
        crate::fleet_conformance_tests!(memory());
    }
}

//! The one store of a limiter's endpoints: per endpoint key, everything known of it (its
//! adaptive limiter, the server's numbers, its budgets in other units), with bounded memory.

use super::ServerState;
use crate::{EndpointSnapshot, Limiter, RateLimitInfo, RateLimitStateProvider, Timestamp};
use crate::{FleetHandle, Record, ServerModel, UnitBudgets};
use hashbrown::HashTable;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// How many operations a shard runs between two sweeps of its idle entries.
const SWEEP_EVERY: u32 = 1024;
const SHARDS: usize = 16;

/// The number of the next store made (a thread's last endpoint is told apart by it).
static NEXT_STORE: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The endpoint this thread looked up last, and the number of its store: a run of requests
    /// to one endpoint finds it without the shard's lock and hash. Weak: it keeps nothing alive.
    static LAST: RefCell<Option<(u64, Weak<Endpoint>)>> = const { RefCell::new(None) };
}

/// Endpoint key → [`Endpoint`] (hashed once with `foldhash`, seeded per process: the hash picks
/// the shard and finds the entry in it). Sharded by key; an
/// entry idle for `idle_ttl` with nobody waiting is dropped by a sweep amortised over the
/// look-ups that reach its shard, and a full shard drops its least recently used idle entry. An
/// endpoint with waiters, or with requests in flight under `MaxConcurrent`, is never dropped
/// (the capacity may then be exceeded until they are served). Each thread remembers the endpoint it looked up last ([`LAST`]): a run of requests
/// to one endpoint finds it there, touching it, without the shard.
pub(crate) struct Endpoints {
    /// This store's number, for [`LAST`].
    id: u64,
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    shard_capacity: usize,
    idle_ttl: Duration,
}

#[derive(Default)]
struct Shard {
    map: HashTable<Slot>,
    ops: u32,
}

struct Slot {
    /// The key's hash (kept: a growing table moves entries by it, and a look-up compares it
    /// before the key).
    hash: u64,
    endpoint: Arc<Endpoint>,
}

impl Slot {
    fn is(&self, hash: u64, key: &str) -> bool {
        self.hash == hash && *self.endpoint.key == *key
    }
}

/// One endpoint: everything the engine knows of it. A request holds it (one reference count) for
/// its whole flow, so the key needs no copy of its own.
#[derive(Debug)]
pub struct Endpoint {
    key: Arc<str>,
    limiter: Limiter,
    pub(crate) server: Mutex<ServerState>,
    /// What it sent and what came back, for the model of the server.
    pub(crate) record: Mutex<Record>,
    /// The endpoint's member of its fleet, when its limiter shares a fleet's rate.
    fleet: OnceLock<Arc<FleetHandle>>,
    /// When it was last looked up, in nanoseconds (for the idle sweep and the LRU).
    touched: AtomicU64,
    /// Whether its store still holds it (a thread's last endpoint is used only then).
    stored: AtomicBool,
}

impl Endpoint {
    /// The endpoint's key.
    #[must_use]
    pub fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// The endpoint's adaptive limiter.
    #[must_use]
    pub fn limiter(&self) -> &Limiter {
        &self.limiter
    }

    /// Makes the endpoint a member of a fleet: the engine reports its requests and responses
    /// to `handle` from now on (the driver runs [`FleetHandle::run`] beside them). An endpoint
    /// joins one fleet at most; a second call changes nothing and returns false.
    pub fn join_fleet(&self, handle: Arc<FleetHandle>) -> bool {
        self.fleet.set(handle).is_ok()
    }

    /// The endpoint's member of its fleet, if it has joined one.
    #[must_use]
    pub fn fleet(&self) -> Option<&Arc<FleetHandle>> {
        self.fleet.get()
    }

    /// The rate-limit state the server last reported, adjusted to `now`; `None` when it is
    /// spent or none was reported.
    #[must_use]
    pub fn server_state(&self, now: Timestamp) -> Option<RateLimitInfo> {
        self.server.lock().current(now)
    }

    /// What is known of the server's numbers at `now` (the state, the time since it was
    /// reported and since the last send), or `None` when nothing was reported or sent.
    #[must_use]
    pub fn snapshot(&self, now: Timestamp) -> Option<EndpointSnapshot> {
        self.server.lock().snapshot(now)
    }

    /// The endpoint's budgets in other units than requests (tokens) at `now`: as the server
    /// last reported them, less what this process reserved and settled since, refilled to
    /// `now` ([`UnitBudget::left`](crate::UnitBudget::left) reads each); empty when the server
    /// reported none.
    #[must_use]
    pub fn budgets(&self, now: Timestamp) -> UnitBudgets {
        self.server.lock().units.budgets().as_of(now)
    }

    /// What this process has learned of the server's limiter from the endpoint's sends, as
    /// its last refusal left it ([`Record::learn`]); `None` until a refusal it could rank.
    #[must_use]
    pub fn server_model(&self) -> Option<ServerModel> {
        self.record.lock().believed().cloned()
    }

    /// Marks it looked up at `now`.
    fn touch(&self, now: Timestamp) {
        self.touched.fetch_max(now.as_nanos(), Ordering::Relaxed);
    }

    /// When it was last looked up.
    fn touched(&self) -> Timestamp {
        Timestamp::from_nanos(self.touched.load(Ordering::Relaxed))
    }
}

impl Endpoints {
    /// About how many endpoints are kept.
    pub(crate) fn capacity(&self) -> usize {
        self.shard_capacity * self.shards.len()
    }

    /// How long an idle endpoint is kept.
    pub(crate) fn idle_ttl(&self) -> Duration {
        self.idle_ttl
    }

    pub(crate) fn new(capacity: usize, idle_ttl: Duration) -> Self {
        Endpoints {
            id: NEXT_STORE.fetch_add(1, Ordering::Relaxed),
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: foldhash::fast::RandomState::default(),
            shard_capacity: capacity.div_ceil(SHARDS).max(1),
            idle_ttl,
        }
    }

    /// The key's hash and its shard. The shard is picked with bits the table uses for neither
    /// the bucket (the low ones) nor the tag (the top seven), so that the entries of a shard
    /// spread over its whole table.
    fn shard(&self, key: &str) -> (u64, &Mutex<Shard>) {
        let hash = self.hasher.hash_one(key);
        (hash, &self.shards[((hash >> 32) % SHARDS as u64) as usize])
    }

    /// The endpoint `key`, with a limiter made with `make` if there is none. `evicted` is told of
    /// every limiter dropped to make room or for idleness.
    pub(crate) fn get_or_insert(
        &self,
        key: &str,
        now: Timestamp,
        make: impl FnOnce() -> Limiter,
        evicted: impl FnMut(&Limiter),
    ) -> Arc<Endpoint> {
        if let Some(endpoint) = self.last(key) {
            endpoint.touch(now);
            return endpoint;
        }
        let endpoint = self.get_or_insert_stored(key, now, make, evicted);
        LAST.with_borrow_mut(|last| *last = Some((self.id, Arc::downgrade(&endpoint))));
        endpoint
    }

    /// The endpoint this thread looked up last, if it is `key`'s in this store and still held.
    fn last(&self, key: &str) -> Option<Arc<Endpoint>> {
        LAST.with_borrow(|last| {
            let (_, endpoint) = last.as_ref().filter(|(id, _)| *id == self.id)?;
            let endpoint = endpoint.upgrade()?;
            (endpoint.stored.load(Ordering::Relaxed) && *endpoint.key == *key).then_some(endpoint)
        })
    }

    /// [`get_or_insert`](Self::get_or_insert) in the store itself. The amortised sweep counts
    /// these look-ups.
    fn get_or_insert_stored(
        &self,
        key: &str,
        now: Timestamp,
        make: impl FnOnce() -> Limiter,
        mut evicted: impl FnMut(&Limiter),
    ) -> Arc<Endpoint> {
        let (hash, shard) = self.shard(key);
        let mut shard = shard.lock();
        shard.ops += 1;
        if shard.ops >= SWEEP_EVERY {
            shard.ops = 0;
            shard.sweep(now, self.idle_ttl, &mut evicted);
        }
        if let Some(slot) = shard.map.find(hash, |s| s.is(hash, key)) {
            slot.endpoint.touch(now);
            return Arc::clone(&slot.endpoint);
        }
        if shard.map.len() >= self.shard_capacity {
            shard.sweep(now, self.idle_ttl, &mut evicted);
            if shard.map.len() >= self.shard_capacity {
                shard.evict_lru(&mut evicted);
            }
        }
        let endpoint = Arc::new(Endpoint {
            key: Arc::from(key),
            limiter: make(),
            server: Mutex::new(ServerState::default()),
            record: Mutex::new(Record::new()),
            fleet: OnceLock::new(),
            touched: AtomicU64::new(now.as_nanos()),
            stored: AtomicBool::new(true),
        });
        shard.map.insert_unique(
            hash,
            Slot {
                hash,
                endpoint: Arc::clone(&endpoint),
            },
            |s| s.hash,
        );
        endpoint
    }

    /// The endpoint `key`, if there is one (none is made).
    pub(crate) fn find(&self, key: &str) -> Option<Arc<Endpoint>> {
        let (hash, shard) = self.shard(key);
        shard
            .lock()
            .map
            .find(hash, |s| s.is(hash, key))
            .map(|s| Arc::clone(&s.endpoint))
    }

    /// Every endpoint key and its limiter (a copy: the map can change meanwhile).
    pub(crate) fn all(&self) -> Vec<(Arc<str>, Limiter)> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            all.extend(
                shard
                    .map
                    .iter()
                    .map(|s| (Arc::clone(&s.endpoint.key), s.endpoint.limiter.clone())),
            );
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Drops every idle entry now.
    pub(crate) fn evict_idle(&self, now: Timestamp, mut evicted: impl FnMut(&Limiter)) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().sweep(now, self.idle_ttl, &mut evicted))
            .sum()
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// Visits every endpoint's current server state at `now` (spent ones left out). A shard's
    /// endpoints are copied out before the visit, so no lock is held while `visit` runs.
    fn for_each_current(&self, now: Timestamp, visit: &mut dyn FnMut(&str, &RateLimitInfo)) {
        for shard in self.shards.iter() {
            let endpoints: Vec<Arc<Endpoint>> = shard
                .lock()
                .map
                .iter()
                .map(|s| Arc::clone(&s.endpoint))
                .collect();
            for endpoint in endpoints {
                if let Some(info) = endpoint.server_state(now) {
                    visit(&endpoint.key, &info);
                }
            }
        }
    }

    /// Every endpoint's server state as of `now`, for the algorithms that look across
    /// endpoints ([`crate::Global`]).
    pub(crate) fn at(&self, now: Timestamp) -> States<'_> {
        States {
            endpoints: self,
            now,
        }
    }
}

/// Every endpoint's server state as of one instant: the store's [`RateLimitStateProvider`].
#[derive(Clone, Copy)]
pub(crate) struct States<'a> {
    endpoints: &'a Endpoints,
    now: Timestamp,
}

impl RateLimitStateProvider for States<'_> {
    fn for_each_state(&self, visit: &mut dyn FnMut(&str, &RateLimitInfo)) {
        self.endpoints.for_each_current(self.now, visit);
    }

    fn state(&self, endpoint: &str) -> Option<RateLimitInfo> {
        self.endpoints.find(endpoint)?.server_state(self.now)
    }
}

impl Shard {
    fn sweep(
        &mut self,
        now: Timestamp,
        idle_ttl: Duration,
        evicted: &mut impl FnMut(&Limiter),
    ) -> usize {
        let before = self.map.len();
        self.map.retain(|slot| {
            let keep = now - slot.endpoint.touched() < idle_ttl || slot.endpoint.limiter.is_busy();
            if !keep {
                slot.endpoint.stored.store(false, Ordering::Relaxed);
                evicted(&slot.endpoint.limiter);
            }
            keep
        });
        before - self.map.len()
    }

    fn evict_lru(&mut self, evicted: &mut impl FnMut(&Limiter)) {
        let idle = |s: &Slot| !s.endpoint.limiter.is_busy();
        // Usually the least recently used entry is idle; only look further when it is not.
        let oldest = self
            .map
            .iter()
            .min_by_key(|s| s.endpoint.touched())
            .filter(|s| idle(s))
            .or_else(|| {
                self.map
                    .iter()
                    .filter(|s| idle(s))
                    .min_by_key(|s| s.endpoint.touched())
            })
            .map(|s| (s.hash, Arc::clone(&s.endpoint)));
        let found = oldest.and_then(|(hash, endpoint)| {
            self.map
                .find_entry(hash, |s| Arc::ptr_eq(&s.endpoint, &endpoint))
                .ok()
        });
        if let Some(entry) = found {
            let (slot, _) = entry.remove();
            slot.endpoint.stored.store(false, Ordering::Relaxed);
            evicted(&slot.endpoint.limiter);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LimiterOptions;

    fn limiter() -> Limiter {
        Limiter::new(LimiterOptions::default()).unwrap()
    }

    #[test]
    fn memory_stays_bounded_with_many_distinct_keys() {
        let map = Endpoints::new(1_000, Duration::from_secs(60));
        let mut evicted = 0usize;
        // Entries are what is measured here, not limiters: clones of one are enough.
        let template = limiter();
        for i in 0..200_000u64 {
            let now = Timestamp::from_nanos(i * 1_000_000); // 1 ms apart
            let make = || template.clone();
            let _ = map.get_or_insert(&format!("k{i}"), now, make, |_| evicted += 1);
            if i % 10_000 == 0 {
                assert!(map.len() <= 1_000 + SHARDS, "len {}", map.len());
            }
        }
        assert!(map.len() <= 1_000 + SHARDS);
        assert_eq!(evicted + map.len(), 200_000);
    }

    #[test]
    fn the_same_key_gets_the_same_limiter_and_idle_ones_are_swept() {
        let map = Endpoints::new(100, Duration::from_secs(10));
        let a = map.get_or_insert("a", Timestamp::ZERO, limiter, |_| {});
        assert_eq!(&**a.key(), "a");
        let _ = a.limiter.try_acquire(1);
        let again = map.get_or_insert("a", Timestamp::ZERO, limiter, |_| panic!("no eviction"));
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(
            a.limiter.snapshot().stats.granted_units,
            again.limiter.snapshot().stats.granted_units
        );
        assert_eq!(
            map.evict_idle(Timestamp::from_nanos(9_000_000_000), |_| {}),
            0
        );
        assert_eq!(
            map.evict_idle(Timestamp::from_nanos(10_000_000_000), |_| {}),
            1
        );
        assert!(map.find("a").is_none());
    }

    #[test]
    fn a_thread_s_last_endpoint_is_the_store_s_and_follows_it() {
        let secs = |s: u64| Timestamp::from_nanos(s * 1_000_000_000);
        let map = Endpoints::new(100, Duration::from_secs(10));
        let a = map.get_or_insert("a", secs(0), limiter, |_| {});
        // Found again (the thread's last): the same endpoint, touched now.
        let again = map.get_or_insert("a", secs(9), limiter, |_| panic!("no eviction"));
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(map.evict_idle(secs(10), |_| {}), 0, "touched at 9 s");
        // Another key, then back: each the store's own.
        let b = map.get_or_insert("b", secs(9), limiter, |_| {});
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(Arc::ptr_eq(
            &map.get_or_insert("a", secs(9), limiter, |_| {}),
            &a
        ));
        // Swept: the next look-up makes a new endpoint, though this thread still knows the old.
        assert_eq!(map.evict_idle(secs(19), |_| {}), 2);
        let fresh = map.get_or_insert("a", secs(19), limiter, |_| {});
        assert!(
            !Arc::ptr_eq(&a, &fresh),
            "an evicted endpoint is not handed out again"
        );
        assert!(Arc::ptr_eq(&map.find("a").unwrap(), &fresh));
        // Another store on the same thread has its own endpoints.
        let other = Endpoints::new(100, Duration::from_secs(10));
        let elsewhere = other.get_or_insert("a", secs(19), limiter, |_| {});
        assert!(!Arc::ptr_eq(&fresh, &elsewhere));
        assert!(Arc::ptr_eq(
            &map.get_or_insert("a", secs(19), limiter, |_| {}),
            &fresh
        ));
    }

    #[test]
    fn the_last_endpoint_keeps_nothing_alive() {
        let map = Endpoints::new(100, Duration::from_secs(10));
        let weak = Arc::downgrade(&map.get_or_insert("a", Timestamp::ZERO, limiter, |_| {}));
        drop(map);
        assert!(weak.upgrade().is_none());
    }
}

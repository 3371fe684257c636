//! The adaptive limiters of one named limiter, one per endpoint key, with bounded memory.

use crate::unit_quota::UnitQuotas;
use pacer_core::{Limiter, Timestamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

/// How many operations a shard runs between two sweeps of its idle entries.
const SWEEP_EVERY: u32 = 1024;
const SHARDS: usize = 16;

/// Endpoint key → adaptive limiter (hashed with `foldhash`, seeded per process). Sharded by key; an entry idle for `idle_ttl` with nobody
/// waiting is dropped by an amortised sweep, and a full shard drops its least recently used idle
/// entry. A limiter with waiters is never dropped (the capacity may then be exceeded until they
/// are served).
pub(crate) struct EndpointLimiters {
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    shard_capacity: usize,
    idle_ttl: Duration,
}

#[derive(Default)]
struct Shard {
    map: HashMap<Arc<str>, Slot, foldhash::fast::RandomState>,
    ops: u32,
}

struct Slot {
    endpoint: Arc<Endpoint>,
    touched: Timestamp,
}

/// One endpoint: its key, its adaptive limiter and its budgets in other units (tokens). A
/// request holds it (one reference count) for its whole flow, so the key needs no copy of its
/// own.
pub(crate) struct Endpoint {
    pub(crate) key: Arc<str>,
    pub(crate) limiter: Limiter,
    pub(crate) units: Mutex<UnitQuotas>,
}

impl EndpointLimiters {
    pub(crate) fn new(capacity: usize, idle_ttl: Duration) -> Self {
        EndpointLimiters {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: foldhash::fast::RandomState::default(),
            shard_capacity: capacity.div_ceil(SHARDS).max(1),
            idle_ttl,
        }
    }

    fn shard(&self, key: &str) -> &Mutex<Shard> {
        &self.shards[(self.hasher.hash_one(key) % SHARDS as u64) as usize]
    }

    /// The endpoint `key`, with a limiter made with `make` if there is none. `evicted` is told of
    /// every limiter dropped to make room or for idleness.
    pub(crate) fn get_or_insert(
        &self,
        key: &str,
        now: Timestamp,
        make: impl FnOnce() -> Limiter,
        mut evicted: impl FnMut(&Limiter),
    ) -> Arc<Endpoint> {
        let mut shard = self.shard(key).lock();
        shard.ops += 1;
        if shard.ops >= SWEEP_EVERY {
            shard.ops = 0;
            shard.sweep(now, self.idle_ttl, &mut evicted);
        }
        if let Some(slot) = shard.map.get_mut(key) {
            slot.touched = slot.touched.max(now);
            return Arc::clone(&slot.endpoint);
        }
        if shard.map.len() >= self.shard_capacity {
            shard.sweep(now, self.idle_ttl, &mut evicted);
            if shard.map.len() >= self.shard_capacity {
                shard.evict_lru(&mut evicted);
            }
        }
        let key: Arc<str> = Arc::from(key);
        let endpoint = Arc::new(Endpoint {
            key: Arc::clone(&key),
            limiter: make(),
            units: Mutex::new(UnitQuotas::default()),
        });
        shard.map.insert(
            key,
            Slot {
                endpoint: Arc::clone(&endpoint),
                touched: now,
            },
        );
        endpoint
    }

    /// The endpoint `key`, if there is one (none is made).
    pub(crate) fn find(&self, key: &str) -> Option<Arc<Endpoint>> {
        self.shard(key)
            .lock()
            .map
            .get(key)
            .map(|s| Arc::clone(&s.endpoint))
    }

    /// The limiter of `key`, if there is one.
    pub(crate) fn get(&self, key: &str) -> Option<Limiter> {
        self.shard(key)
            .lock()
            .map
            .get(key)
            .map(|s| s.endpoint.limiter.clone())
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
                    .map(|(k, s)| (Arc::clone(k), s.endpoint.limiter.clone())),
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
}

impl Shard {
    fn sweep(
        &mut self,
        now: Timestamp,
        idle_ttl: Duration,
        evicted: &mut impl FnMut(&Limiter),
    ) -> usize {
        let before = self.map.len();
        self.map.retain(|_, slot| {
            let keep = now - slot.touched < idle_ttl || slot.endpoint.limiter.queue_len() > 0;
            if !keep {
                evicted(&slot.endpoint.limiter);
            }
            keep
        });
        before - self.map.len()
    }

    fn evict_lru(&mut self, evicted: &mut impl FnMut(&Limiter)) {
        let idle = |s: &Slot| s.endpoint.limiter.queue_len() == 0;
        // Usually the least recently used entry is idle; only look further when it is not.
        let oldest = self
            .map
            .iter()
            .min_by_key(|(_, s)| s.touched)
            .filter(|(_, s)| idle(s))
            .or_else(|| {
                self.map
                    .iter()
                    .filter(|(_, s)| idle(s))
                    .min_by_key(|(_, s)| s.touched)
            })
            .map(|(k, _)| Arc::clone(k));
        if let Some(slot) = oldest.and_then(|key| self.map.remove(&key)) {
            evicted(&slot.endpoint.limiter);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pacer_core::LimiterOptions;

    fn limiter() -> Limiter {
        Limiter::new(LimiterOptions::default()).unwrap()
    }

    #[test]
    fn memory_stays_bounded_with_many_distinct_keys() {
        let map = EndpointLimiters::new(1_000, Duration::from_secs(60));
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
        let map = EndpointLimiters::new(100, Duration::from_secs(10));
        let a = map.get_or_insert("a", Timestamp::ZERO, limiter, |_| {});
        assert_eq!(&*a.key, "a");
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
        assert!(map.get("a").is_none());
    }
}

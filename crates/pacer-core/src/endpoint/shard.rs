//! One shard of the endpoint store: a map with amortised eviction of spent, idle and
//! least-recently-touched entries.
//!
//! Nothing runs in the background. Every mutation counts; once the count reaches half the
//! shard's size (at least [`MIN_SWEEP_EVERY`]) the shard drops what is removable, so a sweep's
//! O(n) cost is spread over n/2 operations. A new key arriving at a full shard first sweeps, and
//! if that frees nothing, drops the least recently touched eighth of the shard (found in O(n)
//! with a selection, again amortised over the n/8 inserts it makes room for).

use std::collections::HashMap;
use std::time::Duration;

use crate::{RateLimitInfo, Timestamp};

/// Sweeps happen at least this many mutations apart.
const MIN_SWEEP_EVERY: usize = 32;

/// A spent entry (nothing left in its info) is kept this long after its last touch, so that a
/// send recorded just before its response arrives is not lost.
pub(crate) const SPENT_GRACE: Duration = Duration::from_secs(60);

/// What the store keeps per endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) info: RateLimitInfo,
    pub(crate) observed_at: Timestamp,
    pub(crate) last_send: Option<Timestamp>,
    pub(crate) touched: Timestamp,
}

impl Entry {
    /// The info adjusted to `now`; `None` when spent.
    pub(crate) fn current(&self, now: Timestamp) -> Option<RateLimitInfo> {
        let info = self.info.aged(now - self.observed_at);
        (!info.is_empty()).then_some(info)
    }

    fn removable(&self, now: Timestamp, idle_ttl: Duration) -> bool {
        let idle = now - self.touched;
        idle >= idle_ttl
            || (idle >= SPENT_GRACE.min(idle_ttl)
                && self.info.is_spent_after(now - self.observed_at))
    }
}

#[derive(Debug, Default)]
pub(crate) struct Shard {
    pub(crate) map: HashMap<Box<str>, Entry, foldhash::fast::RandomState>,
    ops: usize,
}

impl Shard {
    /// Counts a mutation and sweeps when enough have accumulated.
    pub(crate) fn tick(&mut self, now: Timestamp, idle_ttl: Duration) {
        self.ops += 1;
        if self.ops >= MIN_SWEEP_EVERY.max(self.map.len() / 2) {
            self.sweep(now, idle_ttl);
        }
    }

    /// Drops every removable entry; returns how many.
    pub(crate) fn sweep(&mut self, now: Timestamp, idle_ttl: Duration) -> usize {
        self.ops = 0;
        let before = self.map.len();
        self.map.retain(|_, e| !e.removable(now, idle_ttl));
        before - self.map.len()
    }

    /// Makes room for one new key in a shard holding at most `capacity`.
    pub(crate) fn make_room(&mut self, now: Timestamp, idle_ttl: Duration, capacity: usize) {
        if self.map.len() < capacity {
            return;
        }
        self.sweep(now, idle_ttl);
        if self.map.len() < capacity {
            return;
        }
        let drop = (self.map.len() / 8).max(1);
        let mut touched: Vec<Timestamp> = self.map.values().map(|e| e.touched).collect();
        let (_, cutoff, _) = touched.select_nth_unstable(drop - 1);
        let cutoff = *cutoff;
        self.map.retain(|_, e| e.touched > cutoff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Timestamp {
        Timestamp::from_duration(Duration::from_secs(secs))
    }

    fn entry(info: RateLimitInfo, t: u64) -> Entry {
        Entry {
            info,
            observed_at: at(t),
            last_send: None,
            touched: at(t),
        }
    }

    #[test]
    fn sweeps_drop_idle_and_spent_entries() {
        let ttl = Duration::from_secs(3600);
        let live = RateLimitInfo::new().with_retry_after(Duration::from_secs(10_000));
        let short = RateLimitInfo::new().with_retry_after(Duration::from_secs(5));
        let mut s = Shard::default();
        s.map.insert("idle".into(), entry(live.clone(), 0));
        s.map.insert("spent".into(), entry(short, 4000));
        s.map.insert("live".into(), entry(live, 4000));
        // At 4010 s the short one is spent but was touched only 10 s ago: kept.
        assert_eq!(s.sweep(at(4010), ttl), 1);
        assert!(s.map.contains_key("spent"));
        assert_eq!(s.sweep(at(4061), ttl), 1);
        assert_eq!(s.map.keys().map(|k| &**k).collect::<Vec<_>>(), ["live"]);
    }

    #[test]
    fn a_full_shard_drops_the_least_recently_touched_eighth() {
        let info = RateLimitInfo::new().with_retry_after(Duration::from_secs(10_000));
        let mut s = Shard::default();
        for i in 0..16 {
            s.map.insert(i.to_string().into(), entry(info.clone(), i));
        }
        s.make_room(at(20), Duration::from_secs(3600), 16);
        assert_eq!(s.map.len(), 14);
        assert!(!s.map.contains_key("0") && !s.map.contains_key("1"));
        s.make_room(at(20), Duration::from_secs(3600), 16);
        assert_eq!(s.map.len(), 14, "room enough: nothing dropped");
    }
}

//! [`EndpointStore`]: the last rate-limit state of every endpoint, shared by concurrent requests.
//!
//! The store is a fixed array of `parking_lot::Mutex<HashMap>` shards rather than `dashmap`:
//! eviction here is per shard (a shard sweeps itself every so many mutations and evicts its own
//! least recently used entries when full), which needs each shard's map and an operation counter
//! under one lock. `dashmap` hides its shards unless its `raw-api` is enabled, and that API is
//! explicitly unstable. With short critical sections (a hash lookup and a clone), a sharded mutex
//! is as fast and adds no dependency.

use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::time::Duration;

use parking_lot::Mutex;

use super::shard::{Entry, Shard};
use super::view::{EndpointSnapshot, EndpointView};
use crate::{
    RateLimitInfo, ServerStopPolicy, ThrottlingAlgorithm, ThrottlingContext, ThrottlingResult,
    Timestamp,
};

/// The last [`RateLimitInfo`] of every endpoint key, with when it was observed and when a request
/// was last sent, in bounded memory.
///
/// * [`observe`](Self::observe) after each response; [`record_send`](Self::record_send) when a
///   request is sent.
/// * [`get`](Self::get) returns the info adjusted to `now` (resets counted down), or `None` once
///   it is **spent** (every reset has passed) or was never observed.
/// * [`throttle`](Self::throttle) makes the whole proactive decision for a key: the server-ordered
///   stop, else the algorithm, with every tracked state visible to it.
///
/// Memory stays bounded however many distinct keys arrive: an entry is dropped once it is
/// **idle** (neither observed nor sent to for `idle_ttl`, default 1 h) or **spent** and untouched
/// for a minute, and each of the store's shards holds at most its share of `capacity` (default
/// 10 000) by dropping its least recently touched entries. All of this happens inside the calls,
/// amortised; there is no background task.
///
/// Times are [`Timestamp`]s of one monotonic [`crate::Clock`].
///
/// ```
/// use pacer_core::{EndpointStore, Percentage, RateLimitInfo, ServerStopPolicy, Timestamp};
/// use http::HeaderMap;
/// use std::time::{Duration, SystemTime};
///
/// let store = EndpointStore::new();
/// let t0 = Timestamp::ZERO;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-ratelimit-limit", "100".parse()?);
/// headers.insert("x-ratelimit-remaining", "8".parse()?);
/// headers.insert("x-ratelimit-reset", "40".parse()?);
/// store.observe("https://api.example:443", RateLimitInfo::from_headers(&headers, SystemTime::UNIX_EPOCH), t0);
///
/// // Ten seconds later, 30 s remain until the reset: (0.10 - 0.08) × 30 s = 0.6 s.
/// let t1 = t0 + Duration::from_secs(10);
/// let decision = store.throttle(
///     "https://api.example:443",
///     t1,
///     &ServerStopPolicy::default(),
///     &Percentage::default(),
/// );
/// assert_eq!(decision.delay(), Duration::from_millis(600));
///
/// // After the reset the state is spent.
/// assert_eq!(store.get("https://api.example:443", t0 + Duration::from_secs(40)), None);
/// # Ok::<(), http::header::InvalidHeaderValue>(())
/// ```
#[derive(Debug)]
pub struct EndpointStore {
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    shard_capacity: usize,
    idle_ttl: Duration,
}

impl EndpointStore {
    /// The default bound on the number of entries.
    pub const DEFAULT_CAPACITY: usize = 10_000;
    /// The default idle time after which an entry is dropped (RateLimitHeaders drops states older
    /// than an hour).
    pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(3600);
    /// The default number of shards.
    pub const DEFAULT_SHARDS: usize = 16;

    /// A store with the default capacity, idle TTL and shards.
    #[must_use]
    pub fn new() -> EndpointStore {
        EndpointStore::builder().build()
    }

    /// A builder starting from the defaults.
    pub fn builder() -> EndpointStoreBuilder {
        EndpointStoreBuilder {
            capacity: NonZeroUsize::new(Self::DEFAULT_CAPACITY).unwrap_or(NonZeroUsize::MIN),
            idle_ttl: Self::DEFAULT_IDLE_TTL,
            shards: NonZeroUsize::new(Self::DEFAULT_SHARDS).unwrap_or(NonZeroUsize::MIN),
        }
    }

    fn shard(&self, key: &str) -> &Mutex<Shard> {
        let i = (self.hasher.hash_one(key) % self.shards.len() as u64) as usize;
        &self.shards[i]
    }

    /// Records the rate-limit state a response for `key` reported at `now`.
    ///
    /// The new info replaces the old one whole (the latest response is the truth). An info that
    /// reports nothing ([`RateLimitInfo::is_empty`]: the response had no rate-limit headers)
    /// replaces nothing: servers need not send the fields on every response, so the last state
    /// stands until it is spent.
    pub fn observe(&self, key: &str, info: RateLimitInfo, now: Timestamp) {
        let mut shard = self.shard(key).lock();
        if let Some(e) = shard.map.get_mut(key) {
            e.touched = e.touched.max(now);
            if !info.is_empty() {
                e.info = info;
                e.observed_at = now;
            }
        } else if !info.is_empty() {
            shard.make_room(now, self.idle_ttl, self.shard_capacity);
            shard.map.insert(
                key.into(),
                Entry {
                    info,
                    observed_at: now,
                    last_send: None,
                    touched: now,
                },
            );
        }
        shard.tick(now, self.idle_ttl);
    }

    /// Records that a request to `key` was sent at `at` (what [`crate::Pacing`] spaces from).
    /// A send earlier than one already recorded changes nothing.
    pub fn record_send(&self, key: &str, at: Timestamp) {
        let mut shard = self.shard(key).lock();
        if let Some(e) = shard.map.get_mut(key) {
            e.last_send = Some(e.last_send.map_or(at, |l| l.max(at)));
            e.touched = e.touched.max(at);
        } else {
            shard.make_room(at, self.idle_ttl, self.shard_capacity);
            shard.map.insert(
                key.into(),
                Entry {
                    info: RateLimitInfo::new(),
                    observed_at: at,
                    last_send: Some(at),
                    touched: at,
                },
            );
        }
        shard.tick(at, self.idle_ttl);
    }

    /// The info of `key` adjusted to `now`, or `None` when it is spent or unknown.
    #[must_use]
    pub fn get(&self, key: &str, now: Timestamp) -> Option<RateLimitInfo> {
        self.shard(key).lock().map.get(key)?.current(now)
    }

    /// Everything the store knows about `key` at `now`, or `None` when it knows nothing.
    #[must_use]
    pub fn snapshot(&self, key: &str, now: Timestamp) -> Option<EndpointSnapshot> {
        let shard = self.shard(key).lock();
        let e = shard.map.get(key)?;
        Some(EndpointSnapshot::new(
            e.current(now),
            now - e.observed_at,
            e.last_send.map(|s| now - s),
        ))
    }

    /// The proactive decision for the next request to `key` at `now`: the server-ordered stop
    /// when one holds, else `algorithm` on the adjusted state, with the time since the last send
    /// and every tracked state in its context. No state: no throttle.
    #[must_use]
    pub fn throttle(
        &self,
        key: &str,
        now: Timestamp,
        stop: &ServerStopPolicy,
        algorithm: &dyn ThrottlingAlgorithm,
    ) -> ThrottlingResult {
        let Some(snap) = self.snapshot(key, now) else {
            return ThrottlingResult::NO_THROTTLE;
        };
        let Some(info) = snap.info() else {
            return ThrottlingResult::NO_THROTTLE;
        };
        let view = self.at(now);
        let ctx = ThrottlingContext::new(info, key)
            .with_since_observed(snap.since_observed())
            .with_since_last_request(snap.since_last_request())
            .with_states(&view);
        stop.apply(algorithm, &ctx)
    }

    /// A view of every tracked state as of `now`, for cross-endpoint algorithms.
    #[must_use]
    pub fn at(&self, now: Timestamp) -> EndpointView<'_> {
        EndpointView::new(self, now)
    }

    /// Forgets `key`.
    pub fn remove(&self, key: &str) {
        self.shard(key).lock().map.remove(key);
    }

    /// Forgets every key.
    pub fn clear(&self) {
        for s in self.shards.iter() {
            s.lock().map.clear();
        }
    }

    /// Drops every idle or spent entry now (the store also does this by itself, amortised);
    /// returns how many were dropped.
    pub fn evict_idle(&self, now: Timestamp) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().sweep(now, self.idle_ttl))
            .sum()
    }

    /// The number of entries held, spent ones not yet swept included.
    #[must_use]
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// `true` when no entry is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most entries the store holds.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.shard_capacity.saturating_mul(self.shards.len())
    }

    /// Visits every entry's current info, one shard at a time, without holding a lock during
    /// `visit`.
    pub(crate) fn for_each_current(
        &self,
        now: Timestamp,
        visit: &mut dyn FnMut(&str, &RateLimitInfo),
    ) {
        for s in self.shards.iter() {
            let current: Vec<(Box<str>, RateLimitInfo)> = s
                .lock()
                .map
                .iter()
                .filter_map(|(k, e)| Some((k.clone(), e.current(now)?)))
                .collect();
            for (k, info) in &current {
                visit(k, info);
            }
        }
    }
}

impl Default for EndpointStore {
    fn default() -> Self {
        EndpointStore::new()
    }
}

/// Builds an [`EndpointStore`].
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct EndpointStoreBuilder {
    capacity: NonZeroUsize,
    idle_ttl: Duration,
    shards: NonZeroUsize,
}

impl EndpointStoreBuilder {
    /// The most entries to hold (default 10 000). The bound is kept per shard, each holding
    /// `ceil(capacity / shards)`.
    pub fn capacity(mut self, capacity: NonZeroUsize) -> Self {
        self.capacity = capacity;
        self
    }

    /// How long an entry may go without an observation or a send before it is dropped
    /// (default 1 h). A zero TTL drops entries as soon as time moves on.
    pub fn idle_ttl(mut self, idle_ttl: Duration) -> Self {
        self.idle_ttl = idle_ttl;
        self
    }

    /// The number of independently locked shards (default 16; never more than `capacity`).
    pub fn shards(mut self, shards: NonZeroUsize) -> Self {
        self.shards = shards;
        self
    }

    /// The store.
    pub fn build(self) -> EndpointStore {
        let shards = self.shards.get().min(self.capacity.get());
        EndpointStore {
            shards: (0..shards).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: foldhash::fast::RandomState::default(),
            shard_capacity: self.capacity.get().div_ceil(shards),
            idle_ttl: self.idle_ttl,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Pacing, Percentage, Policy, StopCause};

    fn at_ms(ms: u64) -> Timestamp {
        Timestamp::from_duration(Duration::from_millis(ms))
    }

    fn low(remaining: u64, reset_s: u64) -> RateLimitInfo {
        RateLimitInfo::new().with_policy(
            Policy::new(Dialect::XRateLimit)
                .with_limit(100)
                .with_remaining(remaining)
                .with_reset_after(Duration::from_secs(reset_s)),
        )
    }

    #[test]
    fn get_adjusts_for_elapsed_time_and_spends() {
        let s = EndpointStore::new();
        s.observe("a", low(8, 30), at_ms(0));
        assert_eq!(
            s.get("a", at_ms(10_000)).and_then(|i| i.reset_after()),
            Some(Duration::from_secs(20))
        );
        assert_eq!(s.get("a", at_ms(30_000)), None);
        assert_eq!(s.get("b", at_ms(0)), None);
        // A response without headers keeps the state.
        s.observe("a", RateLimitInfo::new(), at_ms(1_000));
        assert_eq!(
            s.get("a", at_ms(1_000)).and_then(|i| i.remaining()),
            Some(8)
        );
        // A new one replaces it.
        s.observe("a", low(50, 60), at_ms(2_000));
        assert_eq!(
            s.get("a", at_ms(2_000)).and_then(|i| i.remaining()),
            Some(50)
        );
    }

    #[test]
    fn throttle_applies_the_stop_then_the_algorithm() {
        let s = EndpointStore::new();
        let stop = ServerStopPolicy::default();
        s.observe("a", low(0, 30), at_ms(0));
        let got = s.throttle("a", at_ms(5_000), &stop, &Percentage::default());
        assert_eq!(got.delay(), Duration::from_secs(25));
        assert_eq!(
            stop.evaluate(&s.get("a", at_ms(5_000)).unwrap_or_default())
                .map(|x| x.cause()),
            Some(StopCause::Exhausted)
        );
        assert!(
            !s.throttle("a", at_ms(30_000), &stop, &Percentage::default())
                .should_throttle()
        );
        assert!(
            !s.throttle("unknown", at_ms(0), &stop, &Percentage::default())
                .should_throttle()
        );
    }

    #[test]
    fn pacing_spaces_from_the_recorded_send() {
        let s = EndpointStore::new();
        let stop = ServerStopPolicy::default();
        // 12 left, reset 5 s: one request per 500 ms.
        s.observe("a", low(12, 5), at_ms(0));
        assert!(
            !s.throttle("a", at_ms(0), &stop, &Pacing::default())
                .should_throttle()
        );
        s.record_send("a", at_ms(100));
        s.record_send("a", at_ms(50)); // an earlier send changes nothing
        let got = s.throttle("a", at_ms(200), &stop, &Pacing::default());
        // At 200 ms the reset is 4.8 s away: 480 ms apart, 380 ms to go after the send at 100 ms.
        assert_eq!(got.delay(), Duration::from_millis(380));
        let snap = s.snapshot("a", at_ms(200)).unwrap();
        assert_eq!(snap.since_last_request(), Some(Duration::from_millis(100)));
        assert_eq!(snap.since_observed(), Duration::from_millis(200));
    }

    #[test]
    fn a_million_keys_stay_within_capacity() {
        let s = EndpointStore::builder()
            .capacity(NonZeroUsize::new(10_000).unwrap())
            .build();
        let info = RateLimitInfo::new().with_retry_after(Duration::from_secs(86_400));
        let mut key = String::new();
        for i in 0..1_000_000u64 {
            key.clear();
            key.push_str("https://host-");
            key.push_str(&i.to_string());
            s.observe(&key, info.clone(), at_ms(i));
            if i % 50_000 == 0 {
                assert!(s.len() <= s.capacity(), "{} at {i}", s.len());
            }
        }
        assert!(s.len() <= s.capacity());
        assert!(
            s.len() >= 5_000,
            "eviction keeps most of the capacity: {}",
            s.len()
        );
        // The newest keys survive, the oldest are gone.
        assert!(s.get("https://host-999999", at_ms(1_000_000)).is_some());
        assert!(s.get("https://host-0", at_ms(1_000_000)).is_none());
    }

    #[test]
    fn a_million_keys_stay_within_the_idle_ttl() {
        // Capacity is no limit here; the 10 s idle TTL is. One key per ms means 10 000 live.
        let s = EndpointStore::builder()
            .capacity(NonZeroUsize::new(usize::MAX).unwrap())
            .idle_ttl(Duration::from_secs(10))
            .build();
        let info = RateLimitInfo::new().with_retry_after(Duration::from_secs(86_400));
        let mut peak = 0;
        for i in 0..1_000_000u64 {
            s.observe(&i.to_string(), info.clone(), at_ms(i));
            if i % 10_000 == 0 {
                peak = peak.max(s.len());
            }
        }
        assert!(peak <= 2 * 10_000 + 16 * 32, "peak {peak}");
        let held = s.len();
        assert_eq!(s.evict_idle(at_ms(2_000_000)), held);
        assert!(s.is_empty());
    }

    #[test]
    fn spent_entries_are_swept_after_a_minute() {
        let s = EndpointStore::new();
        s.observe("a", low(5, 1), at_ms(0));
        assert_eq!(s.evict_idle(at_ms(30_000)), 0);
        assert_eq!(s.evict_idle(at_ms(61_000)), 1);
        s.observe("b", low(5, 1), at_ms(0));
        s.remove("b");
        s.record_send("c", at_ms(0));
        s.clear();
        assert!(s.is_empty());
    }
}

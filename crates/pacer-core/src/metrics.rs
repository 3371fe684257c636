//! Metrics through the `metrics` facade (feature `metrics`), labelled with the limiter's name
//! only, so untrusted URLs can never multiply the series. docs/metrics.md has the table.
//!
//! The handles are registered with the recorder in force (the thread's local recorder, else the
//! global one) and kept together with that recorder's identity: a metric recorded under another
//! recorder (one installed after the first request, a common order at start-up) registers them
//! again with it. A recorded metric costs a look at the recorder in force and a read lock; no
//! allocation.

use crate::{Changes, Limiter};
#[cfg(feature = "metrics")]
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;
#[cfg(feature = "metrics")]
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The metrics of one named limiter, for a driver to record what it does (the middleware and
/// the tower layer record the same series): `pacer_units_total`, `pacer_throttled_total`,
/// `pacer_rejected_total`, `pacer_wait_seconds`, `pacer_rate` (the sum of the endpoints'
/// rates) and `pacer_waiting_requests`, each labelled `limiter` (docs/metrics.md has the
/// table). Without the `metrics` feature every call does nothing.
///
/// ```
/// use pacer_core::LimiterMetrics;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let metrics = LimiterMetrics::new(&Arc::from("orders"));
/// metrics.sent(1, Duration::from_millis(20));
/// let waiting = metrics.waiting(); // counted as waiting until dropped
/// drop(waiting);
/// ```
#[derive(Debug)]
pub struct LimiterMetrics {
    #[cfg(feature = "metrics")]
    name: Arc<str>,
    #[cfg(feature = "metrics")]
    /// The handles, and the address of the recorder they were registered with.
    handles: RwLock<Option<(usize, Handles)>>,
    #[cfg(feature = "metrics")]
    /// The sum of the endpoints' rates (the `pacer_rate` gauge).
    rate_sum: Mutex<f64>,
    #[cfg(feature = "metrics")]
    /// Requests waiting now.
    waiting: AtomicI64,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Handles {
    units: metrics::Counter,
    throttled: metrics::Counter,
    wait: metrics::Histogram,
    /// Registered at the first rate an endpoint holds requests to: until then the series does
    /// not exist (the unlimited start holds nothing back; a gauge at 0 would read as "stopped").
    rate: std::sync::OnceLock<metrics::Gauge>,
    waiting: metrics::Gauge,
}

impl LimiterMetrics {
    /// The metrics of the limiter named `name`.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    #[must_use]
    pub fn new(name: &Arc<str>) -> Self {
        LimiterMetrics {
            #[cfg(feature = "metrics")]
            name: Arc::clone(name),
            #[cfg(feature = "metrics")]
            handles: RwLock::new(None),
            #[cfg(feature = "metrics")]
            rate_sum: Mutex::new(0.0),
            #[cfg(feature = "metrics")]
            waiting: AtomicI64::new(0),
        }
    }

    /// Runs `f` on the handles registered with the recorder in force, registering them if they
    /// were registered with another (or not yet).
    #[cfg(feature = "metrics")]
    fn with_handles(&self, f: impl FnOnce(&Handles)) {
        let recorder = metrics::with_recorder(|r| std::ptr::from_ref(r).cast::<()>().addr());
        {
            let cached = self.handles.read();
            if let Some((at, handles)) = &*cached
                && *at == recorder
            {
                f(handles);
                return;
            }
        }
        let l = || ("limiter", Arc::clone(&self.name));
        let handles = Handles {
            units: metrics::counter!("pacer_units_total", l().0 => l().1),
            throttled: metrics::counter!("pacer_throttled_total", l().0 => l().1),
            wait: metrics::histogram!("pacer_wait_seconds", l().0 => l().1),
            rate: std::sync::OnceLock::new(),
            waiting: metrics::gauge!("pacer_waiting_requests", l().0 => l().1),
        };
        f(&handles);
        *self.handles.write() = Some((recorder, handles));
    }

    /// An attempt of `units` sent after waiting `waited`.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    #[inline]
    pub fn sent(&self, units: u64, waited: Duration) {
        #[cfg(feature = "metrics")]
        self.with_handles(|h| {
            h.units.increment(units);
            h.wait.record(waited.as_secs_f64());
        });
    }

    /// A response classified as a throttle.
    #[inline]
    pub fn throttled(&self) {
        #[cfg(feature = "metrics")]
        self.with_handles(|h| h.throttled.increment(1));
    }

    /// A refusal; `reason` is one of a few static names
    /// ([`RejectReason::kind`](crate::RejectReason::kind)), so the label set stays small.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub fn rejected(&self, reason: &'static str) {
        #[cfg(feature = "metrics")]
        metrics::counter!(
            "pacer_rejected_total",
            "limiter" => Arc::clone(&self.name),
            "reason" => reason
        )
        .increment(1);
    }

    /// An endpoint's model of the server changed ([`ServerModel`](crate::ServerModel)):
    /// `pacer_server_model_changes_total`, labelled with the limiter and the kind it names now
    /// (one of three).
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub fn server_model_changed(&self, kind: crate::LimiterKind) {
        #[cfg(feature = "metrics")]
        metrics::counter!(
            "pacer_server_model_changes_total",
            "limiter" => Arc::clone(&self.name),
            "kind" => kind.as_str()
        )
        .increment(1);
    }

    /// Keeps the rate gauge in step with a change of one endpoint's rate. An endpoint that holds
    /// nothing back (the unlimited start, before its first throttle signal) adds nothing to the
    /// gauge: it joins it with the rate it starts limiting at.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    #[inline]
    pub fn record(&self, changes: &Changes) {
        #[cfg(feature = "metrics")]
        if let Some(c) = changes.rate {
            let before = if changes.started_limiting {
                0.0
            } else {
                c.previous
            };
            self.add_rate(c.rate - before);
        }
    }

    /// A new endpoint's limiter: its rate joins the gauge if it limits from the start.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub fn endpoint_added(&self, limiter: &Limiter) {
        #[cfg(feature = "metrics")]
        if limiter.is_limiting() {
            self.add_rate(limiter.rate());
        }
    }

    /// An endpoint's limiter dropped (evicted): its rate leaves the gauge.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub fn endpoint_gone(&self, limiter: &Limiter) {
        #[cfg(feature = "metrics")]
        if limiter.is_limiting() {
            self.add_rate(-limiter.rate());
        }
    }

    #[cfg(feature = "metrics")]
    fn add_rate(&self, delta: f64) {
        let mut sum = self.rate_sum.lock();
        *sum = (*sum + delta).max(0.0);
        let rate = *sum;
        self.with_handles(|h| {
            h.rate
                .get_or_init(|| metrics::gauge!("pacer_rate", "limiter" => Arc::clone(&self.name)))
                .set(rate);
        });
    }

    /// Counts a request as waiting until the guard is dropped.
    #[must_use = "the request counts as waiting only while the guard lives"]
    pub fn waiting(&self) -> WaitingGuard<'_> {
        #[cfg(feature = "metrics")]
        {
            let n = self.waiting.fetch_add(1, Ordering::Relaxed) + 1;
            self.with_handles(|h| h.waiting.set(n as f64));
        }
        WaitingGuard { metrics: self }
    }
}

/// A request counted as waiting ([`LimiterMetrics::waiting`]) until this is dropped.
#[derive(Debug)]
pub struct WaitingGuard<'a> {
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    metrics: &'a LimiterMetrics,
}

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        {
            let n = self.metrics.waiting.fetch_sub(1, Ordering::Relaxed) - 1;
            self.metrics.with_handles(|h| h.waiting.set(n as f64));
        }
    }
}

//! Metrics through the `metrics` facade (feature `metrics`), labelled with the limiter's name
//! only, so untrusted URLs can never multiply the series. The table is in the crate docs.
//!
//! The handles are registered with the recorder in force (the thread's local recorder, else the
//! global one) and kept together with that recorder's identity: a metric recorded under another
//! recorder (one installed after the first request, a common order at start-up) registers them
//! again with it. A recorded metric costs a look at the recorder in force and a read lock; no
//! allocation.

#[cfg(feature = "metrics")]
use parking_lot::RwLock;
use std::sync::Arc;
use std::time::Duration;

/// The metric handles of one named limiter.
#[derive(Debug)]
pub(crate) struct Metrics {
    #[cfg(feature = "metrics")]
    name: Arc<str>,
    #[cfg(feature = "metrics")]
    /// The handles, and the address of the recorder they were registered with.
    handles: RwLock<Option<(usize, Handles)>>,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Handles {
    units: metrics::Counter,
    throttled: metrics::Counter,
    wait: metrics::Histogram,
    rate: metrics::Gauge,
    waiting: metrics::Gauge,
}

impl Metrics {
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn new(name: &Arc<str>) -> Self {
        Metrics {
            #[cfg(feature = "metrics")]
            name: Arc::clone(name),
            #[cfg(feature = "metrics")]
            handles: RwLock::new(None),
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
            rate: metrics::gauge!("pacer_rate", l().0 => l().1),
            waiting: metrics::gauge!("pacer_waiting_requests", l().0 => l().1),
        };
        f(&handles);
        *self.handles.write() = Some((recorder, handles));
    }

    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn sent(&self, units: u64, waited: Duration) {
        #[cfg(feature = "metrics")]
        self.with_handles(|h| {
            h.units.increment(units);
            h.wait.record(waited.as_secs_f64());
        });
    }

    pub(crate) fn throttled(&self) {
        #[cfg(feature = "metrics")]
        self.with_handles(|h| h.throttled.increment(1));
    }

    /// A refusal; `reason` is one of a few static names, so the label set stays small.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn rejected(&self, reason: &'static str) {
        #[cfg(feature = "metrics")]
        metrics::counter!(
            "pacer_rejected_total",
            "limiter" => Arc::clone(&self.name),
            "reason" => reason
        )
        .increment(1);
    }

    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn rate(&self, units_per_minute: f64) {
        #[cfg(feature = "metrics")]
        self.with_handles(|h| h.rate.set(units_per_minute));
    }

    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn waiting(&self, requests: i64) {
        #[cfg(feature = "metrics")]
        self.with_handles(|h| h.waiting.set(requests as f64));
    }
}

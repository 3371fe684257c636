//! Metrics through the `metrics` facade (feature `metrics`), labelled with the limiter's name
//! only, so untrusted URLs can never multiply the series. The table is in the crate docs.
//!
//! The handles are registered on a limiter's first request and kept, so install the metrics
//! recorder before the first request is sent.

use std::sync::Arc;
#[cfg(feature = "metrics")]
use std::sync::OnceLock;
use std::time::Duration;

/// The metric handles of one named limiter.
#[derive(Debug)]
pub(crate) struct Metrics {
    #[cfg(feature = "metrics")]
    name: Arc<str>,
    #[cfg(feature = "metrics")]
    handles: OnceLock<Handles>,
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
            handles: OnceLock::new(),
        }
    }

    #[cfg(feature = "metrics")]
    fn handles(&self) -> &Handles {
        self.handles.get_or_init(|| {
            let l = || ("limiter", Arc::clone(&self.name));
            Handles {
                units: metrics::counter!("pacer_units_total", l().0 => l().1),
                throttled: metrics::counter!("pacer_throttled_total", l().0 => l().1),
                wait: metrics::histogram!("pacer_wait_seconds", l().0 => l().1),
                rate: metrics::gauge!("pacer_rate", l().0 => l().1),
                waiting: metrics::gauge!("pacer_waiting_requests", l().0 => l().1),
            }
        })
    }

    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn sent(&self, units: u64, waited: Duration) {
        #[cfg(feature = "metrics")]
        {
            let h = self.handles();
            h.units.increment(units);
            h.wait.record(waited.as_secs_f64());
        }
    }

    pub(crate) fn throttled(&self) {
        #[cfg(feature = "metrics")]
        self.handles().throttled.increment(1);
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
        self.handles().rate.set(units_per_minute);
    }

    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn waiting(&self, requests: i64) {
        #[cfg(feature = "metrics")]
        self.handles().waiting.set(requests as f64);
    }
}

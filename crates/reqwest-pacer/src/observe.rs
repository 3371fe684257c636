//! Metrics through the `metrics` facade (feature `metrics`), labelled with the limiter's name
//! only, so untrusted URLs can never multiply the series. The table is in the crate docs.

use std::sync::Arc;
use std::time::Duration;

/// The metric handles of one named limiter.
#[derive(Debug, Clone)]
pub(crate) struct Metrics {
    #[cfg(feature = "metrics")]
    name: Arc<str>,
}

impl Metrics {
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn new(name: &Arc<str>) -> Self {
        Metrics {
            #[cfg(feature = "metrics")]
            name: Arc::clone(name),
        }
    }

    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn sent(&self, units: u64, waited: Duration) {
        #[cfg(feature = "metrics")]
        {
            let limiter = Arc::clone(&self.name);
            metrics::counter!("pacer_units_total", "limiter" => limiter.clone()).increment(units);
            metrics::histogram!("pacer_wait_seconds", "limiter" => limiter)
                .record(waited.as_secs_f64());
        }
    }

    pub(crate) fn throttled(&self) {
        #[cfg(feature = "metrics")]
        metrics::counter!("pacer_throttled_total", "limiter" => Arc::clone(&self.name))
            .increment(1);
    }

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
        metrics::gauge!("pacer_rate", "limiter" => Arc::clone(&self.name)).set(units_per_minute);
    }

    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn waiting(&self, requests: i64) {
        #[cfg(feature = "metrics")]
        metrics::gauge!("pacer_waiting_requests", "limiter" => Arc::clone(&self.name))
            .set(requests as f64);
    }
}

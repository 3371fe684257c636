//! The Prometheus exporter as the `prometheus` example sets it up, shared with its test: the
//! text format on `/metrics`, and `pacer_wait_seconds` as a histogram with buckets (the
//! exporter's default is a summary, which `histogram_quantile` cannot aggregate across
//! processes).
#![allow(dead_code, unreachable_pub)] // shared by the example and a test

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder};
use std::net::SocketAddr;

/// The buckets of `pacer_wait_seconds`, seconds: from a few milliseconds of pacing to a
/// Retry-After of half a minute.
pub const WAIT_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The server's limit, units per minute, as the example exports it (not a Pacer metric: Pacer
/// does not know it; the dashboard draws the rate against it).
pub const SERVER_LIMIT: &str = "demo_api_limit_units_per_minute";

/// An exporter serving `/metrics` on `addr`.
pub fn builder(addr: SocketAddr) -> Result<PrometheusBuilder, BuildError> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Full("pacer_wait_seconds".to_owned()), WAIT_BUCKETS)
}

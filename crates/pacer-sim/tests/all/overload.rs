//! A server that says "less" with a bare 503 and holds what is over its pace: nginx's
//! `limit_req` as a site leaves it (`--server nginx`: 5 requests a second, a burst of 20 queued
//! in nginx, a bare 503 over it). Seed 42, 2 instances, every request costing 1 unit, the
//! library's defaults and AIMD. docs/responses.md has the 20-seed figures and the live ones.

use super::run;
use pacer_sim::metrics::RunMetrics;
use pacer_sim::{Costs, SimOptions};
use std::time::Duration;

/// nginx's `rate=5r/s burst=20`: 300 a minute, a burst of 20 (a window of 4 s), for `minutes`.
fn behind_nginx(minutes: u32, modes: &[&str]) -> Vec<RunMetrics> {
    let options = SimOptions {
        seed: 42,
        instances: 2,
        quota: 300,
        minutes,
        server: "nginx".parse().expect("a shape"),
        costs: Costs::One,
        ..SimOptions::default()
    }
    .with_window(Duration::from_secs(4));
    let c = run(&options, "free-run", modes);
    c.rows.into_iter().map(|r| r.metrics).collect()
}

/// With a bare 503 neutral the defaults never slowed: 12 refusals for every request nginx
/// admitted, live. Read as overload, with the requests nginx held before the first refusal
/// counted as its pace (they come back at it), the defaults take nearly all nginx admits in 2
/// minutes with a refusal for every 36 requests it accepts; AIMD a little more with more than
/// twice the refusals. Before the held requests were read as a pace, the defaults took 52 %.
#[test]
fn the_library_s_defaults_pace_to_an_nginx_that_queues_and_answers_503() {
    let [default, aimd] = &behind_nginx(2, &["default", "aimd"])[..] else {
        unreachable!()
    };
    let accepted = default.accepted_units as f64;
    assert!(default.share >= 0.90, "{}", default.share);
    assert!(
        (default.throttled as f64) < accepted / 10.0,
        "{} refusals for {accepted} accepted",
        default.throttled
    );
    assert!(
        default.throttled < aimd.throttled,
        "{} {}",
        default.throttled,
        aimd.throttled
    );
    // Pinned: 96.3 % with 16 refusals.
    assert!((default.share - 0.9633).abs() <= 0.003, "{}", default.share);
    assert!(default.throttled.abs_diff(16) <= 2, "{}", default.throttled);
}

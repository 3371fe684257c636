//! Where Pacer stands against every server shape and window: the baseline table of
//! `docs/controllers.md` ("Other server shapes").
//!
//! ```sh
//! cargo run --release -p pacer-sim --example shapes
//! ```
//!
//! For each window (1, 10 and 60 s) and each `--server` shape, it runs the `free-run` story with
//! 2 instances and the simulator's other defaults on seeds 1 to 20, in the modes `aimd`, `pacer`
//! and `headers`, and prints the median share of the quota and the median 429s of each (the
//! mean of the two middle seeds). Each row is `pacer-sim compare --story free-run --window W
//! --server S --instances 2 --seed N` for N in 1–20.

use pacer_sim::{SHAPE_NAMES, SimOptions, Story, compare, mode_by_name};
use std::time::Duration;

const WINDOWS: [u64; 3] = [1, 10, 60];
const MODES: [&str; 3] = ["aimd", "pacer", "headers"];
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;

/// The median of `values`: the mean of the two middle ones for an even count.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let n = values.len();
    (values[(n - 1) / 2] + values[n / 2]) / 2.0
}

fn main() {
    let story = Story::by_name("free-run").expect("a built-in story");
    let modes: Vec<_> = MODES
        .iter()
        .map(|n| mode_by_name(n).expect("a known mode"))
        .collect();
    println!("| shape | window | AIMD | Pacer controller | following draft-11 headers |");
    println!("|---|---:|---:|---:|---:|");
    for shape in SHAPE_NAMES {
        for window in WINDOWS {
            // Per mode: (shares in %, 429s), one per seed.
            let mut runs = vec![(Vec::new(), Vec::new()); modes.len()];
            for seed in SEEDS {
                let options = SimOptions {
                    seed,
                    instances: 2,
                    server: shape.parse().expect("a known shape"),
                    ..SimOptions::default()
                }
                .with_window(Duration::from_secs(window));
                let c = compare(&options, std::slice::from_ref(&story), &modes)
                    .unwrap_or_else(|e| panic!("{shape}, {window} s, seed {seed}: {e}"));
                for (m, row) in c.rows.iter().enumerate() {
                    runs[m].0.push(row.metrics.share * 100.0);
                    runs[m].1.push(row.metrics.throttled as f64);
                }
            }
            let cells: Vec<String> = runs
                .into_iter()
                .map(|(share, throttled)| format!("{:.1} % / {}", median(share), median(throttled)))
                .collect();
            println!("| {shape} | {window} s | {} |", cells.join(" | "));
        }
    }
}

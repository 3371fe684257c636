//! What AIMD pays for the Pacer controller's share against buckets, and where the Pacer
//! controller's 429s come from: the evidence behind `docs/research/controllers-record.md`
//! ("Against buckets: 429s at the same share").
//!
//! ```sh
//! cargo run --release -p pacer-sim --example frontier
//! cargo run --release -p pacer-sim --example frontier -- --story cold-start --server leaky-bucket
//! ```
//!
//! For each bucket shape (`--server`, default: the token and the leaky bucket) and window (1, 10
//! and 60 s) it runs a story (`--story`, default `free-run`) with 2 instances on seeds 1 to 20,
//! as the `shapes` example does, in the modes `pacer` and `aimd`, the Pacer controller again
//! with its `HoldMargin` at 4 and 6 % (1.5 % by default), and AIMD again with its `IncreaseStep`
//! doubled and quadrupled (240 and 480 units a minute): the steeper AIMD climbs, the more of the
//! quota it takes and the more 429s it meets; a wider margin mostly trades a little of the Pacer
//! controller's share for fewer 429s. Each cell is the median share of the quota / the median
//! 429s (the medians of the 429s in the first minute and after it).

use pacer_core::ControllerKind;
use pacer_sim::{LimiterMode, Mode, SimOptions, Story, compare, mode_by_name};
use std::time::Duration;

const WINDOWS: [u64; 3] = [1, 10, 60];
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;
/// AIMD's increase steps beside its default (120 units a minute).
const STEPS: [f64; 2] = [240.0, 480.0];
/// The Pacer controller's `HoldMargin`s beside its default (1.5 %): how far under its estimate
/// it holds.
const HOLD_MARGINS: [f64; 2] = [0.04, 0.06];

/// The median of `values`: the mean of the two middle ones for an even count.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let n = values.len();
    (values[(n - 1) / 2] + values[n / 2]) / 2.0
}

/// The values given for `flag`, or `all` when none were.
fn chosen(args: &[String], flag: &str, all: &[&str]) -> Vec<String> {
    let given: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == flag)
        .map(|w| w[1].clone())
        .collect();
    if given.is_empty() {
        all.iter().map(|s| (*s).to_owned()).collect()
    } else {
        given
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let story_name = chosen(&args, "--story", &["free-run"])[0].clone();
    let story =
        Story::by_name(&story_name).unwrap_or_else(|| panic!("unknown story {story_name:?}"));
    let shapes = chosen(&args, "--server", &["token-bucket", "leaky-bucket"]);
    let mut modes: Vec<Box<dyn Mode>> = ["pacer", "aimd"]
        .iter()
        .map(|n| mode_by_name(n).expect("a built-in mode"))
        .collect();
    for margin in HOLD_MARGINS {
        modes.push(Box::new(LimiterMode::adjusted(
            format!("Pacer controller, hold {:.0} %", margin * 100.0),
            move |o| {
                o.controller = ControllerKind::Pacer;
                o.pacer.hold_margin = margin;
            },
        )));
    }
    for step in STEPS {
        modes.push(Box::new(LimiterMode::adjusted(
            format!("AIMD, step {step}"),
            move |o| {
                o.controller = ControllerKind::Aimd;
                o.aimd.increase_step = step;
            },
        )));
    }
    let names: Vec<String> = modes
        .iter()
        .map(|m| match m.name() {
            "pacer" => "Pacer controller".to_owned(),
            "aimd" => "AIMD".to_owned(),
            other => other.to_owned(),
        })
        .collect();
    println!("{story_name}: share / 429s (429s in the first minute + after)\n");
    println!("| shape | window | {} |", names.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(names.len()));
    for shape in &shapes {
        for window in WINDOWS {
            // Per mode: shares in %, 429s, 429s in the first minute and after; one per seed.
            let mut runs = vec![(Vec::new(), Vec::new(), Vec::new(), Vec::new()); modes.len()];
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
                    let first: u32 = row.series.throttled.iter().take(60).sum();
                    runs[m].0.push(row.metrics.share * 100.0);
                    runs[m].1.push(row.metrics.throttled as f64);
                    runs[m].2.push(f64::from(first));
                    runs[m]
                        .3
                        .push(row.metrics.throttled as f64 - f64::from(first));
                }
            }
            let cells: Vec<String> = runs
                .into_iter()
                .map(|(share, throttled, first, after)| {
                    format!(
                        "{:.1} % / {} ({} + {})",
                        median(share),
                        median(throttled),
                        median(first),
                        median(after)
                    )
                })
                .collect();
            println!("| {shape} | {window} s | {} |", cells.join(" | "));
        }
    }
}

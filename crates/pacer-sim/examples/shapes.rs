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
//!
//! To run part of the sweep, name what to run: `-- --server sliding --window 1 --mode headers`
//! (each flag may be given more than once; any left out runs all of its kind). `-- --costs one`
//! runs it with every request costing 1 unit instead of SharePoint's 1, 2 or 5,
//! `-- --story cold-start` another story than the free run, and `-- --forward 0.5` puts half of
//! each round trip on the way to the server (the server decides a request 25 to 100 ms after it
//! is sent, instead of at the send). `-- --window 10 --phase 3` starts the run 3 s into the
//! fixed window's current window, so its first boundary comes 7 s in (the phase is taken modulo
//! each window; 0 unless set, the windows starting with the run; the other shapes have no
//! boundary). `-- --no-retry-after` has every server answer its 429s bare, in every story.
//! `-- --evenness` prints, instead of the share and the 429s, the median (and the
//! lowest) evenness of each: the units the server accepted from the
//! instance that got the fewest over those of the one that got the most. `-- --lowest` adds
//! the lowest seed's share to each cell, and how many seeds took less than 95 %:
//! `median % (lowest %, n under 95 %) / 429s` (`--evenness` takes precedence).
//! `-- --mode pacer-buckets` runs the Pacer controller with the profile for buckets
//! (docs/controllers.md).

use pacer_sim::{Costs, SHAPE_NAMES, SimOptions, Story, compare, mode_by_name};
use std::time::Duration;

const WINDOWS: [&str; 3] = ["1", "10", "60"];
const MODES: [&str; 3] = ["aimd", "pacer", "headers"];
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;

/// The median of `values`: the mean of the two middle ones for an even count.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let n = values.len();
    (values[(n - 1) / 2] + values[n / 2]) / 2.0
}

/// The values given for `flag` on the command line, or `all` when none were.
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
    let mode_names = chosen(&args, "--mode", &MODES);
    let modes: Vec<_> = mode_names
        .iter()
        .map(|n| mode_by_name(n).unwrap_or_else(|e| panic!("{n:?}: {e}")))
        .collect();
    let windows: Vec<u64> = chosen(&args, "--window", &WINDOWS)
        .iter()
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("--window takes whole seconds, not {w:?}"))
        })
        .collect();
    let shapes = chosen(&args, "--server", &SHAPE_NAMES);
    let costs: Costs = chosen(&args, "--costs", &["sharepoint"])[0]
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    let forward: f64 = chosen(&args, "--forward", &["0"])[0]
        .parse()
        .unwrap_or_else(|_| panic!("--forward takes a share of the round trip, from 0 to 1"));
    // Taken modulo each window below.
    let phase: f64 = chosen(&args, "--phase", &["0"])[0]
        .parse()
        .ok()
        .filter(|p: &f64| p.is_finite() && *p >= 0.0)
        .unwrap_or_else(|| panic!("--phase takes seconds, at least 0"));
    let evenness = args.iter().any(|a| a == "--evenness");
    let lowest = args.iter().any(|a| a == "--lowest");
    let sends_retry_after = !args.iter().any(|a| a == "--no-retry-after");
    let header: Vec<&str> = mode_names
        .iter()
        .map(|m| match m.as_str() {
            "aimd" => "AIMD",
            "pacer" => "Pacer controller",
            "headers" => "following draft-11 headers",
            "pacer-buckets" => "Pacer controller, bucket profile",
            other => other,
        })
        .collect();
    println!("| shape | window | {} |", header.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(header.len()));
    for shape in &shapes {
        for &window in &windows {
            // Per mode: (shares in %, 429s, evenness), one per seed.
            let mut runs = vec![(Vec::new(), Vec::new(), Vec::new()); modes.len()];
            for seed in SEEDS {
                let options = SimOptions {
                    seed,
                    instances: 2,
                    server: shape.parse().expect("a known shape"),
                    costs,
                    forward,
                    phase: Duration::from_secs_f64(phase % window as f64),
                    sends_retry_after,
                    ..SimOptions::default()
                }
                .with_window(Duration::from_secs(window));
                let c = compare(&options, std::slice::from_ref(&story), &modes)
                    .unwrap_or_else(|e| panic!("{shape}, {window} s, seed {seed}: {e}"));
                for (m, row) in c.rows.iter().enumerate() {
                    runs[m].0.push(row.metrics.share * 100.0);
                    runs[m].1.push(row.metrics.throttled as f64);
                    runs[m].2.push(row.metrics.evenness.expect("two instances"));
                }
            }
            let cells: Vec<String> = runs
                .into_iter()
                .map(|(share, throttled, even)| {
                    if evenness {
                        let least_even = even.iter().copied().fold(f64::INFINITY, f64::min);
                        format!("{:.2} ({least_even:.2})", median(even))
                    } else if lowest {
                        let least = share.iter().copied().fold(f64::INFINITY, f64::min);
                        let under = share.iter().filter(|s| **s < 95.0).count();
                        format!(
                            "{:.1} % ({least:.1} %, {under} under 95 %) / {}",
                            median(share),
                            median(throttled)
                        )
                    } else {
                        format!("{:.1} % / {}", median(share), median(throttled))
                    }
                })
                .collect();
            println!("| {shape} | {window} s | {} |", cells.join(" | "));
        }
    }
}

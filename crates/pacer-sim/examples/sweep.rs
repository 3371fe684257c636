//! The spread of every mode over many seeds and instance counts: the evidence behind
//! `docs/controllers.md`.
//!
//! ```sh
//! cargo run --release -p pacer-sim --example sweep
//! cargo run --release -p pacer-sim --example sweep -- --instances 2 --seeds 5
//! cargo run --release -p pacer-sim --example sweep -- --instances 1 --demand 4000
//! cargo run --release -p pacer-sim --example sweep -- --story cold-start
//! cargo run --release -p pacer-sim --example sweep -- --no-retry-after
//! ```
//!
//! For each instance count (1, 2 and 4 by default), it runs every story with every default mode
//! on seed 42 and on seeds 1 to 20 (the simulator's other settings are its defaults; `--demand`
//! sets the demand per instance), and prints
//! the minimum, median and maximum share of the quota and 429s of each mode in each story, then,
//! seed by seed, how often `pacer` and `headers` had at least AIMD's share and at most its 429s,
//! and `default` (the library's defaults) at least `aimd-600`'s (the defaults before the
//! unlimited start).

use pacer_sim::metrics::RunMetrics;
use pacer_sim::{LIBRARY_DEFAULT_MODES, SimOptions, Story, compare, default_modes, mode_by_name};
use std::collections::BTreeMap;

struct Args {
    instances: Vec<u32>,
    seeds: Vec<u64>,
    /// Demand per instance, units per minute (the simulator's default unless given).
    demand: f64,
    /// The hidden quota's window (the simulator's default, a minute, unless given).
    window: std::time::Duration,
    /// The stories (`--story NAME`; every one of `--story all` unless given).
    stories: Vec<Story>,
    /// Whether the server says `Retry-After` where the story does (`--no-retry-after`: never).
    sends_retry_after: bool,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        instances: vec![1, 2, 4],
        seeds: std::iter::once(42).chain(1..=20).collect(),
        demand: SimOptions::default().demand,
        window: SimOptions::default().window,
        stories: Story::all(),
        sends_retry_after: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--no-retry-after" {
            out.sends_retry_after = false;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--instances" => {
                out.instances = value
                    .split(',')
                    .map(|v| v.trim().parse().map_err(|_| format!("--instances {value}")))
                    .collect::<Result<_, _>>()?;
            }
            "--seeds" => {
                let n: u64 = value.parse().map_err(|_| format!("--seeds {value}"))?;
                out.seeds = std::iter::once(42).chain(1..=n).collect();
            }
            "--demand" => {
                let d: f64 = value.parse().map_err(|_| format!("--demand {value}"))?;
                if !(d.is_finite() && d > 0.0) {
                    return Err(format!("--demand {value}: units per minute above 0"));
                }
                out.demand = d;
            }
            "--window" => {
                let w: u64 = value.parse().map_err(|_| format!("--window {value}"))?;
                out.window = std::time::Duration::from_secs(w);
            }
            "--story" if value != "all" => {
                out.stories = vec![Story::by_name(&value).ok_or(format!("--story {value}"))?];
            }
            "--story" => out.stories = Story::all(),
            other => {
                return Err(format!(
                    "unknown flag {other}: --instances 1,2,4 --seeds 20 --demand 2000 --window 60 \
                     --story all --no-retry-after"
                ));
            }
        }
    }
    Ok(out)
}

/// `(min, median, max)` of `values` (the lower median for an even count).
fn spread<T: PartialOrd + Copy>(mut values: Vec<T>) -> (T, T, T) {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let n = values.len();
    (values[0], values[(n - 1) / 2], values[n - 1])
}

fn main() {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut modes = default_modes();
    modes.extend(
        LIBRARY_DEFAULT_MODES
            .iter()
            .map(|n| mode_by_name(n).expect("a known mode")),
    );
    let stories = args.stories;
    for &instances in &args.instances {
        // (story, mode) → one RunMetrics per seed, in seed order.
        let mut runs: BTreeMap<(usize, usize), Vec<RunMetrics>> = BTreeMap::new();
        for &seed in &args.seeds {
            let options = SimOptions {
                seed,
                instances,
                demand: args.demand,
                sends_retry_after: args.sends_retry_after,
                ..SimOptions::default()
            }
            .with_window(args.window);
            let c = compare(&options, &stories, &modes).unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(2);
            });
            for (i, row) in c.rows.into_iter().enumerate() {
                let key = (i / modes.len(), i % modes.len());
                runs.entry(key).or_default().push(row.metrics);
            }
        }
        let window = if args.window == SimOptions::default().window {
            String::new()
        } else {
            format!(", a window of {} s", args.window.as_secs())
        };
        println!(
            "\n### {instances} instance{} — seeds 42 and 1–{}, demand {} per instance{window}\n",
            if instances == 1 { "" } else { "s" },
            args.seeds.len() - 1,
            args.demand
        );
        println!("| story | mode | share min / median / max | 429s min / median / max |");
        println!("|---|---|---:|---:|");
        for (s, story) in stories.iter().enumerate() {
            for (m, mode) in modes.iter().enumerate() {
                let rows = &runs[&(s, m)];
                let share = spread(rows.iter().map(|r| r.share * 100.0).collect());
                let throttled = spread(rows.iter().map(|r| r.throttled).collect());
                println!(
                    "| {} | {} | {:.1} / {:.1} / {:.1} % | {} / {} / {} |",
                    story.name,
                    mode.name(),
                    share.0,
                    share.1,
                    share.2,
                    throttled.0,
                    throttled.1,
                    throttled.2
                );
            }
        }
        let index = |name: &str| modes.iter().position(|m| m.name() == name);
        for (challenger, against) in [
            ("pacer", "aimd"),
            ("headers", "aimd"),
            ("default", "aimd-600"),
        ] {
            let (Some(c), Some(aimd)) = (index(challenger), index(against)) else {
                continue;
            };
            println!(
                "\n{challenger} against {against}, seed by seed (share at least its share and 429s \
                 at most its 429s / share only / 429s only):\n"
            );
            for (s, story) in stories.iter().enumerate() {
                let (ours, theirs) = (&runs[&(s, c)], &runs[&(s, aimd)]);
                let pairs = ours.iter().zip(theirs);
                let share = pairs.clone().filter(|(o, t)| o.share >= t.share).count();
                let fewer = pairs
                    .clone()
                    .filter(|(o, t)| o.throttled <= t.throttled)
                    .count();
                let both = pairs
                    .filter(|(o, t)| o.share >= t.share && o.throttled <= t.throttled)
                    .count();
                println!(
                    "- {}: {both}/{n} ({share}/{n} share, {fewer}/{n} 429s)",
                    story.name,
                    n = ours.len()
                );
            }
        }
    }
}

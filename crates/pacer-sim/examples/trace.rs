//! Second by second, what each mode did in one run: the evidence behind a seed's row.
//!
//! ```sh
//! cargo run --release -p pacer-sim --example trace -- --story quota-cut --instances 1 --seed 2 \
//!     --mode aimd --mode pacer --from 540 --to 720
//! ```
//!
//! For every second from `--from` to `--to` (default: the whole run) it prints the quota
//! available to our clients, and for each mode (default: `aimd` and `pacer`) its limiter rate
//! (the running instances' sum, units a minute), the units the API accepted, the units accepted
//! over the last 60 s, and its 429s ([`pacer_sim::report::trace`]); `docs/simulation.md` shows
//! how to read it. It takes `compare`'s `--story`, `--instances`, `--seed`, `--demand`,
//! `--quota`, `--window`, `--server`, `--costs`, `--forward`, `--phase`, `--no-retry-after`
//! and `--minutes`, and `--config FILE --limiter NAME` runs a limiter of a configuration file
//! as one more mode, as `compare` does.

use pacer_sim::model::STORY_NAMES;
use pacer_sim::report::trace;
use pacer_sim::{ConfiguredLimiter, SimOptions, Story, compare, mode_by_name};

fn main() {
    if let Err(e) = run() {
        eprintln!("trace: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut options = SimOptions::default();
    let mut story = Story::by_name("noisy-neighbour").ok_or("no default story")?;
    let mut modes = Vec::new();
    let (mut from, mut to) = (0usize, usize::MAX);
    let (mut config, mut limiter) = (None, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--no-retry-after" {
            options.sends_retry_after = false;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = || format!("{flag} {value}");
        match flag.as_str() {
            "--story" => {
                story = Story::by_name(&value).ok_or_else(|| {
                    format!("unknown story {value:?}: one of {}", STORY_NAMES.join(", "))
                })?;
            }
            "--instances" => options.instances = value.parse().map_err(|_| bad())?,
            "--seed" => options.seed = value.parse().map_err(|_| bad())?,
            "--demand" => options.demand = value.parse().map_err(|_| bad())?,
            "--quota" => options.quota = value.parse().map_err(|_| bad())?,
            "--window" => {
                let w = value.parse().map_err(|_| bad())?;
                options = options.with_window(std::time::Duration::from_secs(w));
            }
            "--server" => options.server = value.parse()?,
            "--costs" => options.costs = value.parse()?,
            // Its range is checked with the other options when the run starts.
            "--forward" => options.forward = value.parse().map_err(|_| bad())?,
            // Under `--window`: checked with the other options when the run starts.
            "--phase" => {
                options.phase =
                    std::time::Duration::try_from_secs_f64(value.parse().map_err(|_| bad())?)
                        .map_err(|_| bad())?;
            }
            "--minutes" => options.minutes = value.parse().map_err(|_| bad())?,
            "--mode" => modes.push(mode_by_name(&value).map_err(|e| e.to_string())?),
            "--config" => config = Some(std::path::PathBuf::from(value)),
            "--limiter" => limiter = Some(value),
            "--from" => from = value.parse().map_err(|_| bad())?,
            "--to" => to = value.parse().map_err(|_| bad())?,
            other => {
                return Err(format!(
                    "unknown flag {other}: --story S --instances N --seed S --demand D --quota Q \
                     --window SECONDS --server SHAPE --costs COSTS --forward SHARE --phase SECONDS --no-retry-after --minutes M --mode M (repeat) --config FILE \
                     --limiter NAME --from SECOND --to SECOND"
                ));
            }
        }
    }
    if let (Some(file), Some(name)) = (&config, &limiter) {
        let configured = ConfiguredLimiter::load(file, name).map_err(|e| e.to_string())?;
        let mode = configured
            .compare_mode(options.duration())
            .map_err(|e| e.to_string())?;
        modes.push(Box::new(mode));
    }
    if modes.is_empty() {
        for name in ["aimd", "pacer"] {
            modes.push(mode_by_name(name).map_err(|e| e.to_string())?);
        }
    }
    if from > to {
        return Err(format!("--from {from} is after --to {to}"));
    }
    let comparison =
        compare(&options, std::slice::from_ref(&story), &modes).map_err(|e| e.to_string())?;
    print!("{}", trace(&comparison, story.name, from..=to));
    Ok(())
}

//! The integration tests of `pacer-sim`, in one binary.

mod bad_input;
mod cli;
mod controllers;
mod determinism;
mod extension;
mod fidelity;
mod fleet;
mod live;
mod max_concurrent;
mod model;
mod overload;
mod plots;
mod quirks;
mod same_decisions;
mod shapes;

use pacer_sim::{Comparison, Mode, SimOptions, Story, compare, mode_by_name};

/// The .NET adaptive limiter's settings, shortened to `minutes`.
pub fn short(minutes: u32) -> SimOptions {
    SimOptions {
        minutes,
        ..SimOptions::default()
    }
}

/// Runs the named modes through the named story.
pub fn run(options: &SimOptions, story: &str, modes: &[&str]) -> Comparison {
    let stories = [Story::by_name(story).expect("a story")];
    let modes: Vec<Box<dyn Mode>> = modes
        .iter()
        .map(|m| mode_by_name(m).expect("a mode"))
        .collect();
    compare(options, &stories, &modes).expect("runs")
}

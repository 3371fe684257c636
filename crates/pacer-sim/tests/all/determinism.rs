//! The same seed prints the same bytes; another seed prints others; every mode sees the same
//! requests.

use crate::short;
use pacer_sim::report::{csv, json};
use pacer_sim::{Comparison, Story, compare, default_modes};

fn all_stories(seed: u64) -> Comparison {
    let options = pacer_sim::SimOptions { seed, ..short(8) };
    compare(&options, &Story::all(), &default_modes()).unwrap()
}

#[test]
fn the_same_seed_twice_gives_byte_identical_csv_json_and_plot() {
    let a = all_stories(42);
    let b = all_stories(42);
    assert_eq!(csv(&a), csv(&b));
    assert_eq!(json(&a), json(&b));
    assert_eq!(
        pacer_sim::plot::svg(&a).unwrap(),
        pacer_sim::plot::svg(&b).unwrap()
    );
    assert_eq!(a, b, "the series too, second by second");
}

#[test]
fn another_seed_gives_another_table() {
    assert_ne!(csv(&all_stories(42)), csv(&all_stories(43)));
}

#[test]
fn rows_come_in_story_then_mode_order_whatever_thread_ran_them() {
    let c = all_stories(1);
    let order: Vec<(String, String)> = c
        .rows
        .iter()
        .map(|r| (r.story.clone(), r.mode.clone()))
        .collect();
    let mut expected = Vec::new();
    for s in pacer_sim::model::STORY_NAMES {
        for m in pacer_sim::MODE_NAMES
            .iter()
            .filter(|m| !pacer_sim::NAMED_ONLY_MODES.contains(m))
        {
            expected.push((s.to_owned(), (*m).to_owned()));
        }
    }
    assert_eq!(order, expected);
}

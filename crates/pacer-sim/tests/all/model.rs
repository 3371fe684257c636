//! The model seen from the outside: the quota holds in every mode and story, and the counts add
//! up.

use crate::{run, short};
use pacer_sim::model::STORY_NAMES;
use pacer_sim::{SimOptions, Story};

#[test]
fn no_60_s_span_ever_holds_more_than_the_quota_in_force() {
    let options = short(12);
    for story in STORY_NAMES {
        let c = run(&options, story, &pacer_sim::MODE_NAMES);
        let s = Story::by_name(story).unwrap();
        for row in &c.rows {
            let a = &row.series.accepted;
            for start in 0..a.len().saturating_sub(59) {
                let used: u64 = a[start..start + 60].iter().sum();
                let limit = (start..start + 60)
                    .map(|t| {
                        s.available_quota(
                            options.quota as f64,
                            std::time::Duration::from_secs(t as u64),
                        )
                    })
                    .fold(0.0, f64::max);
                assert!(
                    used as f64 <= limit,
                    "{story}/{}: {used} units in [{start}, {}) s, limit {limit}",
                    row.mode,
                    start + 60
                );
            }
        }
    }
}

#[test]
fn every_request_is_counted_once() {
    let c = run(&short(10), "noisy-neighbour", &pacer_sim::MODE_NAMES);
    let requests = c.rows[0].metrics.requests;
    for row in &c.rows {
        let m = &row.metrics;
        assert_eq!(m.requests, requests, "{}: the same demand", row.mode);
        assert_eq!(
            m.succeeded + m.rejected + m.gave_up + m.unfinished,
            m.requests,
            "{}",
            row.mode
        );
        // Every attempt sent is accepted or throttled at once; an accepted one is a success
        // unless its response was still on its way when the run ended.
        assert!(m.succeeded + m.throttled <= m.attempts, "{}", row.mode);
        assert!(
            m.attempts <= m.succeeded + m.throttled + m.unfinished,
            "{}",
            row.mode
        );
        let units: u64 = row.series.accepted.iter().sum();
        assert_eq!(units, m.accepted_units, "{}", row.mode);
    }
}

#[test]
fn without_a_limiter_nothing_is_rejected_or_waits() {
    let c = run(&short(6), "free-run", &["none"]);
    let m = &c.rows[0].metrics;
    assert_eq!(m.rejected, 0);
    assert_eq!(m.p95_wait_s, 0.0);
    assert!(m.throttled > 1000);
    assert!(m.gave_up > 0);
}

#[test]
fn a_mode_that_never_goes_over_the_quota_is_never_throttled() {
    // 2 instances of 600 units/min against 3,000: nobody waits, nobody is refused.
    let options = SimOptions {
        demand: 600.0,
        ..short(6)
    };
    let c = run(&options, "free-run", &["none", "aimd"]);
    for row in &c.rows {
        assert_eq!(row.metrics.throttled, 0, "{}", row.mode);
        assert_eq!(row.metrics.rejected, 0, "{}", row.mode);
    }
}

#[test]
fn scale_out_tells_every_limiter_the_new_count() {
    let c = run(&short(8), "scale-out", &["fixed"]);
    let rate = &c.rows[0].series.rate;
    // Fixed at 1,500 for the budget: 2 × 750 before minute 5, and 3 × 500 after it only if the
    // first two were told (else 750 + 750 + 500).
    assert!((rate[299].unwrap() - 1500.0).abs() < 1e-9);
    assert!((rate[301].unwrap() - 1500.0).abs() < 1e-9);
    let alone = run(&short(8), "free-run", &["fixed"]);
    assert!(c.rows[0].metrics.requests > alone.rows[0].metrics.requests);
}

/// `SimOptions::sends_retry_after` false (`--no-retry-after`) answers every 429 of any story bare:
/// a run with it is the run of the same story made without `Retry-After`, not the run with it.
#[test]
fn no_retry_after_answers_every_story_s_429s_bare() {
    let with = short(5);
    let without = SimOptions {
        sends_retry_after: false,
        ..with.clone()
    };
    let story = Story::by_name("noisy-neighbour").expect("a story");
    let bare = Story {
        retry_after: false,
        ..story.clone()
    };
    let modes = [pacer_sim::mode_by_name("pacer").expect("a mode")];
    let metrics = |options: &SimOptions, story: &Story| {
        let c = pacer_sim::compare(options, std::slice::from_ref(story), &modes).expect("runs");
        c.rows.into_iter().next().expect("a row").metrics
    };
    let flagged = metrics(&without, &story);
    assert_eq!(flagged, metrics(&with, &bare));
    assert_ne!(flagged, metrics(&with, &story));
}

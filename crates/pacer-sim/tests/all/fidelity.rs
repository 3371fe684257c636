//! The default comparison has the shape of the .NET adaptive limiter's table (quota 3,000, 2 instances of 2,000,
//! 15 min, seed 42, noisy neighbour): who wins what, and the orders of magnitude.
//!
//! | Mode | Throughput | Share | 429s | Rejected | Gave up | p95 wait | Recovery |
//! |---|---|---|---|---|---|---|---|
//! | none | 2,901 | 100% | 64,931 | 0 | 9,003 | 0.0 s | 1 s |
//! | fixed | 1,516 | 52% | 4 | 20,919 | 0 | 70.4 s | 0 s |
//! | AIMD | 2,625 | 90% | 56 | 11,278 | 0 | 44.0 s | 8 s |
//! | CUBIC | 2,890 | 100% | 531 | 9,306 | 0 | 48.5 s | 27 s |

use pacer_sim::metrics::RunMetrics;
use pacer_sim::{SimOptions, Story, compare, default_modes};

fn default_table() -> Vec<RunMetrics> {
    let c = compare(
        &SimOptions::default(),
        &[Story::by_name("noisy-neighbour").unwrap()],
        &default_modes(),
    )
    .unwrap();
    c.rows.into_iter().map(|r| r.metrics).collect()
}

#[test]
fn the_default_table_has_the_dotnet_limiter_s_shape() {
    let t = default_table();
    let [none, fixed, aimd, cubic] = [&t[0], &t[1], &t[2], &t[3]];

    // No limiter: all the quota, tens of thousands of 429s, thousands give up, nothing waits.
    assert!(none.share > 0.98, "none share {}", none.share);
    assert!(none.throttled > 20_000, "none 429s {}", none.throttled);
    assert!(none.gave_up > 2_000, "none gave up {}", none.gave_up);
    assert_eq!((none.rejected, none.p95_wait_s), (0, 0.0));
    assert!(none.recovery_s.is_some_and(|s| s <= 2));

    // Fixed: about half the quota, almost no 429s, the most rejected, the longest waits.
    assert!(
        (0.48..=0.56).contains(&fixed.share),
        "fixed share {}",
        fixed.share
    );
    assert!(fixed.throttled < 20, "fixed 429s {}", fixed.throttled);
    assert!(fixed.rejected > aimd.rejected && fixed.rejected > cubic.rejected);
    assert!(fixed.p95_wait_s > 60.0, "fixed p95 {}", fixed.p95_wait_s);
    assert_eq!(fixed.recovery_s, Some(0));

    // AIMD: most of the quota with very few 429s.
    assert!(
        (0.8..=0.97).contains(&aimd.share),
        "aimd share {}",
        aimd.share
    );
    assert!(
        none.throttled >= 100 * aimd.throttled.max(1),
        "none has ≥ 100× AIMD's 429s"
    );
    assert!(aimd.throttled < 200, "aimd 429s {}", aimd.throttled);

    // CUBIC: at least AIMD's share, more 429s than AIMD, far fewer than none.
    assert!(
        cubic.share >= aimd.share,
        "cubic {} < aimd {}",
        cubic.share,
        aimd.share
    );
    assert!(cubic.share > 0.9, "cubic share {}", cubic.share);
    assert!(cubic.throttled > aimd.throttled);
    assert!(cubic.throttled * 10 < none.throttled);

    // Only the retry loop gives up.
    assert_eq!((fixed.gave_up, aimd.gave_up, cubic.gave_up), (0, 0, 0));
    for m in &t {
        assert!(
            (m.mean_quota - 2900.0).abs() < 1e-9,
            "3,000 for 14 minutes, 1,500 for one"
        );
    }
}

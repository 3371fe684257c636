//! Pacer's controller and header-aware control against AIMD: the acceptance figures of
//! `docs/controllers.md` (seed by seed in `docs/research/controllers-record.md`), pinned with
//! a small tolerance so that a later change cannot quietly lose them. The simulator is
//! deterministic, so each figure is exact; the tolerance only lets a harmless change (a
//! last-bit difference in `ln` or `cbrt`) through.

use pacer_sim::metrics::RunMetrics;
use pacer_sim::{Mode, SimOptions, Story, compare, mode_by_name};

const TOLERANCE_SHARE: f64 = 0.003;
const TOLERANCE_429S: u64 = 2;

/// The `aimd`, `pacer` and `headers` rows of every story, story by story, at the simulator's
/// default demand.
fn rows(seed: u64, instances: u32, stories: &[&str]) -> Vec<(String, [RunMetrics; 3])> {
    rows_at(seed, instances, SimOptions::default().demand, stories)
}

/// [`rows`] at `demand` units a minute per instance.
fn rows_at(
    seed: u64,
    instances: u32,
    demand: f64,
    stories: &[&str],
) -> Vec<(String, [RunMetrics; 3])> {
    let options = SimOptions {
        seed,
        instances,
        demand,
        ..SimOptions::default()
    };
    let stories: Vec<Story> = stories
        .iter()
        .map(|s| Story::by_name(s).expect("a story"))
        .collect();
    let modes: Vec<Box<dyn Mode>> = ["aimd", "pacer", "headers"]
        .iter()
        .map(|m| mode_by_name(m).expect("a mode"))
        .collect();
    let c = compare(&options, &stories, &modes).expect("runs");
    c.rows
        .chunks(3)
        .map(|r| {
            (
                r[0].story.clone(),
                [
                    r[0].metrics.clone(),
                    r[1].metrics.clone(),
                    r[2].metrics.clone(),
                ],
            )
        })
        .collect()
}

/// `pacer` (or `headers`) has at least AIMD's share and at most its 429s.
fn assert_beats_aimd(story: &str, aimd: &RunMetrics, pacer: &RunMetrics, what: &str) {
    assert!(
        pacer.share >= aimd.share && pacer.throttled <= aimd.throttled,
        "{what} {story}: {:.4} / {} against aimd {:.4} / {}",
        pacer.share,
        pacer.throttled,
        aimd.share,
        aimd.throttled
    );
}

/// A figure of the table at random seed 42, pinned.
fn assert_pinned(what: &str, m: &RunMetrics, share: f64, throttled: u64) {
    assert!(
        (m.share - share).abs() <= TOLERANCE_SHARE,
        "{what}: share {:.4}, pinned {share}",
        m.share
    );
    assert!(
        m.throttled.abs_diff(throttled) <= TOLERANCE_429S,
        "{what}: {} 429s, pinned {throttled}",
        m.throttled
    );
}

/// A table of every story, pinned: in each story `pacer` and `headers` have at least AIMD's
/// share and at most its 429s, and their figures are the pinned ones (story, pacer share, pacer
/// 429s, headers share, headers 429s); in the noisy neighbour `pacer` takes at least 97 % with
/// at most 30 429s, and `headers` at least 99 % with at most 5.
fn assert_table(
    what: &str,
    table: &[(String, [RunMetrics; 3])],
    pinned: &[(&str, f64, u64, f64, u64)],
) {
    assert_eq!(table.len(), pinned.len());
    for ((story, [aimd, pacer, headers]), pin) in table.iter().zip(pinned) {
        assert_eq!(story, pin.0);
        assert_beats_aimd(story, aimd, pacer, what);
        assert_beats_aimd(story, aimd, headers, &format!("{what}, headers"));
        assert_pinned(&format!("pacer {story}"), pacer, pin.1, pin.2);
        assert_pinned(&format!("headers {story}"), headers, pin.3, pin.4);
    }
    let [_, pacer, headers] = &table[1].1;
    assert_eq!(table[1].0, "noisy-neighbour");
    assert!(pacer.share >= 0.97 && pacer.throttled <= 30);
    assert!(headers.share >= 0.99 && headers.throttled <= 5);
}

/// The acceptance of `docs/controllers.md` on the default comparison (seed 42, 2 instances):
/// in every story `pacer` has at least AIMD's share and at most its 429s; in the noisy
/// neighbour `pacer` takes at least 97 % with at most 30 429s, and `headers` at least 99 % with
/// at most 5.
#[test]
fn seed_42_pacer_beats_aimd_in_every_story_and_headers_takes_99_percent() {
    let table = rows(42, 2, &pacer_sim::model::STORY_NAMES);
    // (story, pacer share, pacer 429s, headers share, headers 429s)
    let pinned = [
        ("free-run", 0.9808, 17, 0.9914, 0),
        ("noisy-neighbour", 0.9828, 15, 0.9907, 4),
        ("quota-cut", 0.9361, 22, 0.9871, 10),
        ("scale-out", 0.9813, 20, 0.9905, 0),
        ("top-of-hour", 0.9822, 15, 0.9914, 0),
        ("long-retry-after", 0.9836, 15, 0.9901, 4),
    ];
    assert_table("seed 42", &table, &pinned);
}

/// A few of the sweep's other seeds and instance counts, in the stories where the margins are
/// the thinnest: the noisy neighbour and the quota cut. The noisy neighbour keeps the issue's
/// 97 % with 4 instances too (95.6–96.7 % before a lapse stopped lowering the estimate). In the
/// quota cut, seeds 4 and 10 with 2 instances had 3 more 429s than AIMD (32 and 31) until a fall
/// within a lapse's window remembered the estimate the lapse set aside.
#[test]
fn other_seeds_and_instance_counts_keep_pacer_ahead_of_aimd() {
    for (seed, instances) in [(7, 2), (13, 2), (4, 2), (10, 2), (3, 4), (19, 4)] {
        for (story, [aimd, pacer, headers]) in
            rows(seed, instances, &["noisy-neighbour", "quota-cut"])
        {
            let what = format!("seed {seed}, {instances} instances");
            assert_beats_aimd(&story, &aimd, &pacer, &what);
            // The quota cut's echo once gave `headers` more 429s than AIMD here (88 with 4
            // instances); spreading a sliding window's room over a tenth of it ended that.
            assert_beats_aimd(&story, &aimd, &headers, &format!("{what}, headers"));
            assert!(pacer.share >= 0.89, "{what} {story}: {}", pacer.share);
            assert!(headers.share >= 0.97, "{what} {story}: {}", headers.share);
            if story == "noisy-neighbour" {
                assert!(pacer.share >= 0.97, "{what}: {}", pacer.share);
                assert!(
                    headers.share >= 0.99 && headers.throttled <= 10,
                    "{what}: headers {:.4} / {}",
                    headers.share,
                    headers.throttled
                );
            }
        }
    }
}

/// One process pushing a hidden quota (4,000 units a minute of demand against 3,000), seed 42:
/// the issue's figures hold there too. With one instance at the default demand (2,000) every
/// mode is bound by its demand (65–75 % of the quota), so this is where a lone process's
/// controller is measured. The sweep (`--instances 1 --demand 4000`): `pacer` has more of the
/// quota than AIMD in 126 of 126 runs, and fewer or as many 429s in 101; `headers` beats AIMD
/// on both in 126.
#[test]
fn one_process_pushing_the_quota_keeps_the_issue_s_figures() {
    let table = rows_at(42, 1, 4000.0, &pacer_sim::model::STORY_NAMES);
    // (story, pacer share, pacer 429s, headers share, headers 429s)
    let pinned = [
        ("free-run", 0.9764, 8, 0.9915, 0),
        ("noisy-neighbour", 0.9761, 10, 0.9908, 4),
        ("quota-cut", 0.9477, 19, 0.9879, 7),
        ("scale-out", 0.9835, 16, 0.9901, 0),
        ("top-of-hour", 0.9763, 9, 0.9915, 0),
        ("long-retry-after", 0.9751, 12, 0.9901, 4),
    ];
    assert_table("one instance, demand 4,000", &table, &pinned);
}

/// The metrics of each of `modes` in `story`, in order.
fn run_story<const N: usize>(
    options: &SimOptions,
    story: &str,
    modes: [&str; N],
) -> [RunMetrics; N] {
    let modes: Vec<Box<dyn Mode>> = modes
        .iter()
        .map(|m| mode_by_name(m).expect("a mode"))
        .collect();
    let story = Story::by_name(story).expect("a story");
    let c = compare(options, &[story], &modes).expect("runs");
    std::array::from_fn(|i| c.rows[i].metrics.clone())
}

/// The cold start (demand at twice the quota from the first second, 429s without Retry-After),
/// seed 42, 2 instances: `pacer` takes at least 90 % of what the server admits, more than AIMD.
/// Before a throttle in the first window sent at the minimum rate, the window full of the
/// start's units refused every request until they left: 402 429s (`default`, from the
/// unlimited start, 654). Before a throttle without `Retry-After` paused for a second, AIMD met
/// 33 429s, `pacer` 26 and `default` 36; the pause took more off AIMD's, and at this seed
/// `pacer` now meets one more than AIMD (over 21 seeds the medians are equal:
/// `--example sweep -- --story cold-start`).
#[test]
fn a_cold_start_without_retry_after_keeps_the_share() {
    let options = SimOptions {
        seed: 42,
        ..SimOptions::default()
    };
    let [aimd, pacer, default] = run_story(&options, "cold-start", ["aimd", "pacer", "default"]);
    assert!(pacer.share >= 0.90, "{}", pacer.share);
    assert!(pacer.share > aimd.share, "{} {}", pacer.share, aimd.share);
    assert_pinned("aimd cold-start", &aimd, 0.9043, 21);
    assert_pinned("pacer cold-start", &pacer, 0.9661, 22);
    assert_pinned("default cold-start", &default, 0.9762, 26);
}

/// The cold start against a fixed window of a minute that says no `Retry-After`: seed 42, 2
/// instances. Between its quota's end and the boundary the window accepts next to nothing, and
/// a run of bare throttles there measures no pace: taken as a bucket's leak, it set the
/// estimate to about 60 a minute, held until the next probe (`pacer` 79 % with 206 429s,
/// `default` 40 % with 587). The Pacer controller and the library's defaults beat AIMD (87 %,
/// 137) on both counts. Every request sent between the quota's end and the boundary is refused;
/// before a throttle without `Retry-After` paused for a second, `pacer` met 532 429s, `default`
/// 274 and AIMD 885.
#[test]
fn a_cold_start_against_a_fixed_window_takes_no_spent_window_for_a_leak() {
    let options = SimOptions {
        seed: 42,
        server: "fixed".parse().expect("a shape"),
        ..SimOptions::default()
    };
    let [aimd, pacer, default] = run_story(&options, "cold-start", ["aimd", "pacer", "default"]);
    assert_beats_aimd("cold-start, fixed", &aimd, &pacer, "seed 42, pacer");
    assert_beats_aimd("cold-start, fixed", &aimd, &default, "seed 42, default");
    assert_pinned("pacer cold-start, fixed", &pacer, 0.9704, 96);
    assert_pinned("default cold-start, fixed", &default, 0.9746, 106);
}

/// The cold start against windows of 10 s that say no `Retry-After`, with the library's
/// defaults (`QuotaWindow` a minute), seed 3, 2 instances. The unlimited start fills the server's
/// window within seconds, and it refuses everything until those units leave it; the first
/// success after that says the window is at most the limiter's age then, and from then on a
/// throttle counts over that, not over a minute that holds the refusals. Before, the second
/// throttle's count over the minute set a hold of half the quota, and each probe after that moved
/// it up a little: sliding 76 % (30 429s; 93 % with 26 counting over the window learnt for the
/// first minute only, 95 % with 22 now), fixed 77 % (194; 95 % with 29, then 97 % with 26; AIMD
/// 85 % with 42).
#[test]
fn a_cold_start_against_a_window_of_seconds_learns_it_from_the_first_success() {
    let options = SimOptions {
        seed: 3,
        server: "fixed".parse().expect("a shape"),
        ..SimOptions::default()
    }
    .with_window(std::time::Duration::from_secs(10));
    let [aimd, default] = run_story(&options, "cold-start", ["aimd", "default"]);
    assert_beats_aimd("cold-start, fixed 10 s", &aimd, &default, "seed 3, default");
    assert_pinned("default cold-start, fixed 10 s", &default, 0.9670, 26);
    let sliding = SimOptions {
        server: "sliding".parse().expect("a shape"),
        ..options
    };
    let [default] = run_story(&sliding, "cold-start", ["default"]);
    // 94.6 % with 22 before a request sent before a young throttle and accepted after it
    // counted at the throttle; over 20 seeds the median is the same (94.7 %, 22).
    assert_pinned("default cold-start, sliding 10 s", &default, 0.9346, 20);
}

/// The cold start against a bucket of a second with no `Retry-After` (nginx's `limit_req`), with
/// the library's defaults (`QuotaWindow` a minute): the first throttle comes within seconds, and
/// the server accepts again soon after, so the young count is scaled to the window. Seed 42, 2
/// instances: at least 90 % of what the server admits, more than AIMD. Taken as the estimate
/// unscaled, the young count held `default` at 50 % (20 seeds, median). With the window learnt
/// from that success kept for the whole run, and a bare throttle's pause a quarter of it, this
/// seed meets four 429s more than AIMD (23 against 19; 19 against 17 with a pause of a second,
/// 96.0 % with 8 when the window was counted over only in the first minute); over 20 seeds the
/// median is 97.7 % with 16 against AIMD's 94.2 % with 18 (docs/research/limiter-record.md, "A
/// throttle without `Retry-After`").
#[test]
fn a_cold_start_against_a_one_second_bucket_scales_the_young_count() {
    let options = SimOptions {
        seed: 42,
        server: "leaky-bucket".parse().expect("a shape"),
        ..SimOptions::default()
    }
    .with_window(std::time::Duration::from_secs(1));
    let [aimd, default] = run_story(&options, "cold-start", ["aimd", "default"]);
    assert!(
        default.share > aimd.share,
        "{} against {}",
        default.share,
        aimd.share
    );
    assert!(default.share >= 0.90, "{}", default.share);
    // 96.6 % with 23 before a request sent before a young throttle and accepted after it
    // counted at the throttle; over 20 seeds the median went from 97.6 % with 16 to 98.0 %
    // with 19, the lowest seed from 94.7 to 96.2 %.
    assert_pinned("default cold-start, 1 s bucket", &default, 0.9628, 14);
}

/// A deploy (`--story restart`), seed 42, 2 instances: every process is replaced at minute 5 by
/// a fresh one that knows nothing, against a window still full of the old processes' units. The
/// newcomers are throttled young with a short `Retry-After` (the old units leave) and read
/// their first seconds as a short window's pace. Pinned: the Pacer controller 98.1 % with 19
/// 429s and the library's defaults 97.7 % with 28, against AIMD's 87.1 % with 16; `headers`
/// at least 98 % with none. Over 20 seeds (medians) the Pacer controller takes 97.4 % with 23
/// 429s, AIMD 87.8 % with 18.5 (docs/research/controllers-record.md, "A fixed window's boundary").
#[test]
fn a_restart_mid_window_keeps_the_share() {
    let c = crate::run(
        &SimOptions::default(),
        "restart",
        &["aimd", "pacer", "default", "headers"],
    );
    let [aimd, pacer, default, headers] = [0, 1, 2, 3].map(|i| &c.rows[i].metrics);
    assert_pinned("restart, aimd", aimd, 0.8713, 16);
    assert_pinned("restart, pacer", pacer, 0.9806, 19);
    assert_pinned("restart, default", default, 0.9771, 28);
    assert!(
        headers.share >= 0.98 && headers.throttled == 0,
        "restart, headers: {:.4} / {}",
        headers.share,
        headers.throttled
    );
}

/// The same deploy, each fresh process starting from what the one it replaces learnt
/// (`--restore`: `PacerMiddleware::remember`, then `recall`): limiting at once at the rate it
/// held, with its estimate, its first throttle read as any other. Pinned, seed 42: the Pacer
/// controller 98.1 → 98.4 % with 19 → 14 429s, the defaults 97.7 → 97.5 % with 28 → 13 (97.9 %
/// with 16 on the simulator's own copy of the request path, before it ran the engine), AIMD
/// 87.1 → 89.2 % with 16 → 19. Over 20 seeds (medians) the Pacer controller 97.4 → 98.2 %
/// with 23 → 10 429s (lowest seed 88.1 → 97.3 %), the defaults 97.8 → 97.9 % with 26 → 10
/// (docs/limiter.md, "Across a restart").
#[test]
fn a_restart_that_recalls_what_it_learnt_meets_fewer_429s() {
    let options = SimOptions {
        restore: true,
        ..SimOptions::default()
    };
    let c = crate::run(&options, "restart", &["aimd", "pacer", "default"]);
    let [aimd, pacer, default] = [0, 1, 2].map(|i| &c.rows[i].metrics);
    assert_pinned("restart restored, aimd", aimd, 0.8924, 19);
    assert_pinned("restart restored, pacer", pacer, 0.9838, 14);
    assert_pinned("restart restored, default", default, 0.9746, 13);
    assert!(pacer.throttled < 19 && default.throttled < 28);
}

/// A neighbour against a sliding window of a minute that never says `Retry-After`
/// (`--no-retry-after`): seed 1, 4 instances. The neighbour's units fill the window, and a run
/// of bare throttles then accepts next to nothing. Read as a bucket's slack, each run set the
/// estimate to its pace with nothing to probe back toward, and the processes held a third of the
/// quota for minutes after the neighbour left. A pace a fifth or more under a level held a
/// minute is a fall from it, remembered and probed back toward (`pacer` 60.9 % before,
/// `default` 63.9 %); the level outlives a probe's estimate above it and a first run within a
/// fifth of it, so that each process sees the fall (74.8 % and 69.9 % with the rule alone,
/// under AIMD's share; 86.3 % and 87.0 % with the level kept); and a leak must be a quarter of
/// what was sent at the run's first throttle. Pinned: both take more than AIMD, `pacer` with
/// fewer 429s.
#[test]
fn a_neighbour_without_retry_after_is_a_fall_not_a_bucket_s_slack() {
    let options = SimOptions {
        seed: 1,
        instances: 4,
        sends_retry_after: false,
        ..SimOptions::default()
    };
    let [aimd, pacer, default] =
        run_story(&options, "noisy-neighbour", ["aimd", "pacer", "default"]);
    assert_pinned("aimd, a neighbour, no Retry-After", &aimd, 0.8237, 112);
    assert_pinned("pacer, a neighbour, no Retry-After", &pacer, 0.8895, 100);
    assert_pinned(
        "default, a neighbour, no Retry-After",
        &default,
        0.8852,
        130,
    );
    assert!(pacer.share > aimd.share && pacer.throttled < aimd.throttled);
    assert!(default.share > aimd.share);
}

/// A quota cut to half against a sliding minute that never says `Retry-After`, one process,
/// seed 13: the window, full at the old quota, refuses nearly everything until it drains. The
/// run of bare throttles measured that trickle as a bucket's leak, each throttle against a
/// quarter of a send rate the run's own cuts had brought down, and the rate fell to the minimum
/// for two minutes (`pacer` 53.2 %, `default` 57.2 %). Now a leak must be a quarter of what was
/// sent at the run's first throttle too. Pinned: both take more than AIMD.
#[test]
fn a_cut_window_s_trickle_is_no_leak() {
    let options = SimOptions {
        seed: 13,
        instances: 1,
        sends_retry_after: false,
        ..SimOptions::default()
    };
    let [aimd, pacer, default] = run_story(&options, "quota-cut", ["aimd", "pacer", "default"]);
    assert_pinned("aimd, a cut, no Retry-After", &aimd, 0.7102, 30);
    assert_pinned("pacer, a cut, no Retry-After", &pacer, 0.7366, 21);
    assert_pinned("default, a cut, no Retry-After", &default, 0.7420, 31);
    assert!(pacer.share > aimd.share && default.share > aimd.share);
}

/// A neighbour against a sliding window of 10 s that never says `Retry-After`, two processes,
/// seed 14. The first estimate (made at 12 s) was still unconfirmed when the probes' throttles
/// came at 300 s and found about as much, so no level was kept, and the neighbour's runs of
/// bare throttles 10 s later read as a bucket's slack: the estimate fell run after run and
/// never came back (`pacer` 55.9 %). A throttle that finds no fall from a first estimate
/// confirms it as a level. Pinned: the Pacer controller and the library's defaults take more
/// than AIMD.
#[test]
fn a_first_estimate_the_next_throttle_confirms_is_a_level() {
    let options = SimOptions {
        seed: 14,
        instances: 2,
        sends_retry_after: false,
        ..SimOptions::default()
    }
    .with_window(std::time::Duration::from_secs(10));
    let [aimd, pacer, default] =
        run_story(&options, "noisy-neighbour", ["aimd", "pacer", "default"]);
    assert_pinned("aimd, 10 s, no Retry-After", &aimd, 0.8447, 38);
    assert_pinned("pacer, 10 s, no Retry-After", &pacer, 0.9025, 33);
    // 88.2 % before a request sent before a young throttle and accepted after it counted at
    // the throttle; over 20 seeds the median is the same (86.7 → 86.8 %), the lowest seed
    // 74.5 → 82.9 %.
    assert_pinned("default, 10 s, no Retry-After", &default, 0.8729, 51);
    assert!(pacer.share > aimd.share && pacer.throttled < aimd.throttled);
    assert!(default.share > aimd.share);
}

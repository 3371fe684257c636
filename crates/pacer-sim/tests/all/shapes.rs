//! Following the server's draft-11 fields against every server shape and window (issue 20's
//! first target): seed 42, 2 instances, the free run. Where the target is met (at least 97 % of
//! the quota with at most 5 429s) the test asserts the target; where it is not, it pins today's
//! figure, so a change that loses ground fails and one that gains updates the pin on purpose.
//! The last tests pin the Pacer controller against the leaky bucket and HAProxy's counter, the
//! library's defaults against short windows, and the bucket profile's mode against its
//! configuration text and the buckets (docs/controllers.md, "When every 429 costs: a profile
//! for buckets"). docs/controllers.md ("Other server shapes") and
//! docs/research/controllers-record.md have the 20-seed medians.

use super::run;
use pacer_sim::metrics::RunMetrics;
use pacer_sim::{Costs, SimOptions};
use std::time::Duration;

/// A pinned share and count of 429s.
type Pin = Option<(f64, u64)>;

/// (shape, window in seconds, pinned share and 429s where the target is not met), with
/// SharePoint's costs of 1, 2 or 5 units.
const CELLS: [(&str, u64, Pin); 15] = [
    // A window of 1 s is paced at the policy's pace less the room both processes' largest
    // requests (5 units) could take at once: 1 − 2 × 5 / 50 = 80 % of it. No method does much
    // better without 429s: requests of a tenth of the window, sent by two processes that do not
    // talk, overfill it when they coincide (docs/controllers.md). A bucket or GCRA shows that it
    // refills (its `remaining` stays high while the even pace spends a window's worth), and the
    // room above half its size is spent on top: the target is met there (81.7 % before).
    ("sliding", 1, Some((0.8008, 3))),
    ("sliding", 10, None),
    ("sliding", 60, None),
    ("fixed", 1, Some((0.8165, 0))),
    ("fixed", 10, None),
    ("fixed", 60, None),
    ("token-bucket", 1, None),
    ("token-bucket", 10, None),
    ("token-bucket", 60, None),
    ("leaky-bucket", 1, None),
    ("leaky-bucket", 10, None),
    ("leaky-bucket", 60, None),
    ("gcra", 1, None),
    ("gcra", 10, None),
    ("gcra", 60, None),
];

/// The same with every request costing 1 unit, at 1 and 10 s.
const ONE_UNIT_CELLS: [(&str, u64, Pin); 5] = [
    // 1 − 2 × 1 / 50: 96 %, a point short of the target in a window (a bucket refills).
    ("sliding", 1, Some((0.9599, 0))),
    // A start's burst sits in a window of 10 s until the limiter is a window old: what is left
    // is spread until then (5 429s in each before, 6 in the 20 seeds' medians).
    ("sliding", 10, None),
    ("fixed", 10, None),
    ("fixed", 1, Some((0.9599, 0))),
    ("token-bucket", 1, None),
];

/// The free run of `modes` against `shape` with a window of `window` seconds: seed 42, 2
/// instances.
fn free_run(shape: &str, window: u64, costs: Costs, modes: &[&str]) -> Vec<RunMetrics> {
    free_run_on(shape, window, costs, 0.0, modes)
}

/// The same with a share `forward` of each round trip on the way to the server.
fn free_run_on(
    shape: &str,
    window: u64,
    costs: Costs,
    forward: f64,
    modes: &[&str],
) -> Vec<RunMetrics> {
    let options = seed_42(shape, window, costs, forward);
    let c = run(&options, "free-run", modes);
    c.rows.into_iter().map(|r| r.metrics).collect()
}

/// The options of these runs: seed 42, 2 instances, `shape` with a window of `window` seconds,
/// a share `forward` of each round trip on the way to the server.
fn seed_42(shape: &str, window: u64, costs: Costs, forward: f64) -> SimOptions {
    SimOptions {
        seed: 42,
        instances: 2,
        server: shape.parse().expect("a shape"),
        costs,
        forward,
        ..SimOptions::default()
    }
    .with_window(Duration::from_secs(window))
}

/// A share within 0.3 point and 429s within 2 of their pins.
fn assert_pinned(m: &RunMetrics, share: f64, throttled: u64, what: &str) {
    assert!((m.share - share).abs() <= 0.003, "{what}, pinned {share}");
    assert!(
        m.throttled.abs_diff(throttled) <= 2,
        "{what}, pinned {throttled}"
    );
}

fn check(costs: Costs, cells: &[(&str, u64, Pin)]) {
    for &(shape, window, pinned) in cells {
        let m = &free_run(shape, window, costs, &["headers"])[0];
        let what = format!(
            "{shape}, {window} s, costs {costs}: {:.4} / {} 429s",
            m.share, m.throttled
        );
        match pinned {
            None => assert!(
                m.share >= 0.97 && m.throttled <= 5,
                "{what}, target 0.97 / 5"
            ),
            Some((share, throttled)) => assert_pinned(m, share, throttled, &what),
        }
    }
}

#[test]
fn following_headers_in_every_shape_and_window_meets_the_target_or_its_pin() {
    check(Costs::SharePoint, &CELLS);
}

#[test]
fn following_headers_with_requests_of_one_unit_meets_the_target_or_its_pin() {
    check(Costs::One, &ONE_UNIT_CELLS);
}

/// Following headers when the server receives each request 25 to 100 ms after it is sent (half
/// of each round trip on the way there): an even pace reaches it uneven, and the margin of one
/// request a process overfills short windows. Each throttle of a request sent at the short pace
/// widens the margin by a unit a process (at most once a window), and it narrows again after
/// five minutes without one (longer once narrowings are refuted: below). A `remaining: 0` with
/// a reset of a second is paced through, not held for the second (the way in bunched the pace).
/// Pinned, seed 42, requests of one unit; with the margin fixed at one request: the sliding
/// window of 1 s 65.6 % with 79 429s, of 10 s 92.9 % with 27, the fixed window of 1 s 91.8 %
/// with 8; with the margin learnt but every `remaining: 0` held until its reset: 86.9 % / 4,
/// 98.1 % / 7 and 93.3 % / 2.
#[test]
fn following_headers_widens_a_short_window_s_margin_when_the_way_in_varies() {
    for (shape, window, share, throttled) in [
        ("sliding", 1, 0.9201, 4),
        ("sliding", 10, 0.9905, 5),
        ("fixed", 1, 0.9406, 3),
    ] {
        let m = &free_run_on(shape, window, Costs::One, 0.5, &["headers"])[0];
        let what = format!("{shape}, {window} s: {:.4} / {} 429s", m.share, m.throttled);
        assert_pinned(m, share, throttled, &what);
    }
}

/// The same over an hour: each narrowing that a throttle refutes doubles the wait before the
/// next (up to 40 minutes), so a network whose spread stays the same stops paying a throttle and
/// its pause every five minutes. Pinned, seed 42, the sliding window of 1 s, one-unit requests;
/// with a narrowing every five minutes: 91.9 % with 14 429s (87.3 % with 15 while every
/// `remaining: 0` was held until its reset).
#[test]
fn a_short_window_s_margin_narrows_ever_more_rarely_where_each_narrowing_is_refuted() {
    let options = SimOptions {
        minutes: 60,
        ..seed_42("sliding", 1, Costs::One, 0.5)
    };
    let m = &run(&options, "free-run", &["headers"]).rows[0].metrics;
    let what = format!("{:.4} / {} 429s", m.share, m.throttled);
    assert_pinned(m, 0.9201, 8, &what);
}

/// What a window of a second allows when each request takes its own time to reach the server
/// (half of each round trip on the way there): the `fixed` mode is an even pacer at 1,500 units a
/// minute that knows the quota, so a hidden quota of 1,560 or 1,620 makes it pace at 96.2 % or
/// 92.6 % of it. The first overfills the window hundreds of times in ten minutes, the second
/// not at all; following draft-11 fields, with nothing known but the fields, takes within a
/// point of the second with few 429s. Seed 42, 2 instances, one-unit requests, 10 minutes.
#[test]
fn an_even_pace_of_more_than_about_92_percent_overfills_a_one_second_window_when_the_way_in_varies()
{
    let options = |quota: u64| SimOptions {
        minutes: 10,
        quota,
        ..seed_42("sliding", 1, Costs::One, 0.5)
    };
    let over = &run(&options(1560), "free-run", &["fixed"]).rows[0].metrics;
    assert!(over.throttled > 100, "96.2 %: {} 429s", over.throttled);
    assert!(over.share < 0.80, "96.2 %: {:.4}", over.share);
    let under = &run(&options(1620), "free-run", &["fixed"]).rows[0].metrics;
    assert!(under.throttled <= 2, "92.6 %: {} 429s", under.throttled);
    assert!(
        (under.share - 0.926).abs() < 0.002,
        "92.6 %: {:.4}",
        under.share
    );
    let headers = &run(&options(3000), "free-run", &["headers"]).rows[0].metrics;
    assert!(
        headers.share >= under.share - 0.01 && headers.throttled <= 5,
        "headers: {:.4} / {} 429s",
        headers.share,
        headers.throttled
    );
}

/// The Pacer controller against a leaky bucket, which refuses without `Retry-After`: seed 42,
/// 2 instances. A run of bare throttles that takes less than a sliding window would give back
/// measures the bucket's leak, so the estimate sheds the slack the bucket let through as it
/// filled (72 429s at 60 s before the rule), and the rate is cut again at once instead of after
/// `DecreaseCooldown` (77 / 72 / 47 429s at 1 / 10 / 60 s before that). A cut from the rate
/// really sent, not from a rate the demand left unused, ends the first overflow sooner, and the
/// second throttle corrects the first estimate instead of taking it for a limit that fell (at
/// 1 s: 99.2 % with 36 429s before). And a bare throttle pauses for a second, where the rate
/// cut went on sending into the full bucket (20 / 63 / 24 429s before, AIMD 37 / 21 / 19); at
/// 1 s the pause is a quarter of the window (a pause of the whole second took 96.4 % with 22
/// 429s). Pinned, with
/// AIMD's for scale: at 10 s the controller's 429s stay above AIMD's at this seed, at 1 s they
/// are as many (docs/research/controllers-record.md, "A leaky bucket's slack").
#[test]
fn the_pacer_controller_sheds_a_leaky_bucket_s_slack() {
    for (window, share, throttled, aimd) in [
        (60, 1.0639, 9, 18),
        (10, 1.0093, 30, 16),
        (1, 0.9801, 17, 17),
    ] {
        let rows = free_run(
            "leaky-bucket",
            window,
            Costs::SharePoint,
            &["pacer", "aimd"],
        );
        let (m, a) = (&rows[0], &rows[1]);
        let what = format!("{window} s: {:.4} / {} 429s", m.share, m.throttled);
        assert_pinned(m, share, throttled, &what);
        assert_eq!(a.throttled, aimd, "AIMD's, for scale");
    }
}

/// The Pacer controller against a fixed window of a minute: seed 42, 2 instances. Its
/// `Retry-After`s end on the window's boundaries, which tells it fixed, and a throttle's count
/// is then over the part of the window since it began: the last minute's also held the window
/// before, and set the estimate above the quota (35 429s before the rule). Pinned, with AIMD's
/// for scale.
#[test]
fn the_pacer_controller_counts_a_fixed_window_from_its_boundary() {
    let rows = free_run("fixed", 60, Costs::SharePoint, &["pacer", "aimd"]);
    let (m, a) = (&rows[0], &rows[1]);
    let what = format!("{:.4} / {} 429s", m.share, m.throttled);
    assert_pinned(m, 0.9862, 26, &what);
    assert_eq!(a.throttled, 36, "AIMD's, for scale");
}

/// Two processes following the Pacer controller against a sliding window of a second, one-unit
/// requests, seed 42. In the first seconds both climb at once; the one throttled first was cut
/// again a window later, by the other's climb, and held about a third of the other's rate for
/// the whole run (evenness 0.359, 91.3 % of the quota with 17 429s). A refusal in the first
/// windows is now its own only a window later: the two split the quota almost evenly, take more
/// of it, and meet fewer 429s than AIMD (pinned; AIMD's for scale).
#[test]
fn two_processes_share_a_one_second_window_evenly() {
    let rows = free_run("sliding", 1, Costs::One, &["pacer", "aimd"]);
    let (m, a) = (&rows[0], &rows[1]);
    let what = format!(
        "{:.4} / {} 429s, evenness {:?}",
        m.share, m.throttled, m.evenness
    );
    assert_pinned(m, 0.9552, 18, &what);
    assert!(m.evenness.is_some_and(|e| e >= 0.95), "{what}");
    assert!(m.throttled <= a.throttled, "{what}; AIMD {}", a.throttled);
}

/// Two members of one fleet against a window of a second (one-unit requests, seed 42): the
/// units the members report are counted over the time they were accepted in, a cut that fell
/// short cuts again, and the members sync every tenth of the window. Counted as a lump at each
/// commit every 250 ms, the fleet took 87.2 %, 87.0 % and 98.4 % with 105, 200 and 197 429s.
/// Pinned; the members split the window evenly. The 20-seed medians are in docs/fleet.md.
#[test]
fn a_fleet_keeps_a_window_of_a_second() {
    for (shape, share, throttled) in [
        ("sliding", 0.9519, 42),
        ("fixed", 0.9505, 26),
        ("token-bucket", 0.9908, 21),
    ] {
        let m = &free_run(shape, 1, Costs::One, &["fleet"])[0];
        let what = format!(
            "{shape}: {:.4} / {} 429s, evenness {:?}",
            m.share, m.throttled, m.evenness
        );
        assert_pinned(m, share, throttled, &what);
        assert!(m.evenness.is_some_and(|e| e >= 0.99), "{what}");
    }
}

/// A fleet of two with the library's defaults (`QuotaWindow` a minute, an unlimited start)
/// against short windows (one-unit requests, seed 42): its controller learns the server's
/// window from the first throttles, and the window is kept with the fleet's state (it was
/// dropped at every write: 70.2 %, 79.8 % and 90.2 %, with 22, 41 and 13 429s). Pinned.
#[test]
fn a_fleet_with_the_library_s_defaults_learns_a_short_window() {
    for (shape, window, share, throttled) in [
        ("sliding", 10, 0.9652, 14),
        ("fixed", 10, 0.9766, 29),
        ("token-bucket", 1, 0.9951, 21),
    ] {
        let m = &free_run(shape, window, Costs::One, &["fleet-default"])[0];
        let what = format!("{shape}, {window} s: {:.4} / {} 429s", m.share, m.throttled);
        assert_pinned(m, share, throttled, &what);
    }
}

/// The library's defaults (`QuotaWindow` a minute, nothing configured) against windows of 1 and
/// 10 s that send `Retry-After`: seed 42, 2 instances. The first throttle comes within seconds
/// with a `Retry-After` of a second or two, which a window of a minute filled by our own units
/// could not say: the server's window is at most that span, and the controller counts over it
/// from then on, growing from the cut until a throttle measures a whole window (before the
/// rules: 46–68 % of the quota, held for minutes; with the pace over the span as the estimate
/// but `QuotaWindow` still a minute: 69.1 %, 72.9 %, 97.3 %, 93.1 % and 93.6 %, with 12, 10, 9,
/// 23 and 18 429s). Pinned; the 20-seed medians are in docs/research/controllers-record.md.
/// Since the simulator runs the engine's exchange (one `MaxWait` per attempt, the engine's
/// reading of a bare 429), the fixed window of 1 s takes 89.1 % (86.4 % on the simulator's own
/// copy of the path) and the fixed window of 10 s meets 28 429s (35).
#[test]
fn the_library_s_defaults_measure_a_short_window_s_pace() {
    for (shape, window, share, throttled) in [
        ("sliding", 1, 0.8368, 16),
        ("fixed", 1, 0.8912, 24),
        ("token-bucket", 1, 0.9956, 17),
        ("sliding", 10, 0.9618, 22),
        ("fixed", 10, 0.9673, 28),
    ] {
        let m = &free_run(shape, window, Costs::SharePoint, &["default"])[0];
        let what = format!("{shape}, {window} s: {:.4} / {} 429s", m.share, m.throttled);
        assert_pinned(m, share, throttled, &what);
    }
}

/// A fixed window of 10 s whose boundaries do not fall on the start (`--phase`), seed 42, 2
/// instances. The first throttle's `Retry-After` runs to the boundary, so its span (our age
/// plus the `Retry-After`) may reach two windows (seed 1 at phase 5 s: the first boundary 5 s
/// in, the second window's quota used by 12 s, "wait 3 s"). A span past a quarter of the minute
/// was read as a minute's window, the units since the start as a minute's quota: the library's
/// defaults took 66.2 % and 64.5 % of the quota at phases 3 and 5 s (96.7 % at phase 0), and
/// the Pacer controller with `InitialUnitsPerMinute` set but `QuotaWindow` left at a minute
/// 69.2 % even at phase 0, against AIMD's 85 %.
/// Pinned; the 20-seed medians at every phase are in docs/research/controllers-record.md.
#[test]
fn a_fixed_window_s_boundary_anywhere_in_the_first_seconds_reads_as_a_short_window() {
    let phased = |phase: u64| SimOptions {
        phase: Duration::from_secs(phase),
        ..seed_42("fixed", 10, Costs::SharePoint, 0.0)
    };
    for (phase, share, throttled) in [(3, 0.9622, 16), (5, 0.9712, 13)] {
        let m = &run(&phased(phase), "free-run", &["default"]).rows[0].metrics;
        let what = format!("phase {phase} s: {:.4} / {} 429s", m.share, m.throttled);
        assert_pinned(m, share, throttled, &what);
    }
    // The simulator's own limiter options (from 1,500 units a minute), `QuotaWindow` a minute.
    let mut untold = phased(0);
    untold.limiter.quota_window = Duration::from_secs(60);
    let m = &run(&untold, "free-run", &["pacer"]).rows[0].metrics;
    let what = format!("QuotaWindow untold: {:.4} / {} 429s", m.share, m.throttled);
    assert_pinned(m, 0.9414, 20, &what);
}

/// HAProxy's stick-table rate (`--server haproxy`) counts the requests it refuses, answers a bare
/// 429 and sends no rate-limit fields: seed 42, 2 instances, a window of 10 s. Following headers
/// has nothing to follow there and is the Pacer controller to the request; the controller, told
/// the window, keeps at least 95 % of the quota with fewer 429s than AIMD (pinned, AIMD's for
/// scale).
#[test]
fn against_haproxy_s_counter_the_controller_beats_aimd_and_headers_adds_nothing() {
    for (costs, share, throttled, aimd) in [
        (Costs::SharePoint, 0.9680, 17, 31),
        (Costs::One, 0.9817, 17, 40),
    ] {
        let rows = free_run("haproxy", 10, costs, &["pacer", "headers", "aimd"]);
        let (m, h, a) = (&rows[0], &rows[1], &rows[2]);
        let what = format!("costs {costs}: {:.4} / {} 429s", m.share, m.throttled);
        assert_pinned(m, share, throttled, &what);
        assert!(m.share >= 0.95 && m.throttled < a.throttled, "{what}");
        assert_eq!(
            (h.share, h.throttled, h.rejected),
            (m.share, m.throttled, m.rejected),
            "{what}: headers mode, no fields to follow"
        );
        assert_eq!(a.throttled, aimd, "AIMD's, for scale");
    }
}

/// tower_governor's GCRA (`--server governor`: the governor crate behind a tower layer, as it
/// answers by default) refuses with `Retry-After: 0` for every wait under a second, rounded
/// down, and sends no rate-limit fields: seed 42, 2 instances, a window of 10 s, one-unit
/// requests. A `Retry-After: 0` on a throttle pauses as a bare throttle does, so the figures are
/// those of `gcra`, whose `Retry-After` is rounded up to a second (resending at once took 72.5
/// 429s in the 20 seeds' median with SharePoint's costs, against 25.5 now). Following headers has
/// nothing to follow and is the Pacer controller to the request.
#[test]
fn against_tower_governor_a_retry_after_of_0_pauses_as_a_bare_throttle_would() {
    let modes = ["pacer", "default", "headers"];
    let governor = free_run("governor", 10, Costs::One, &modes);
    let gcra = free_run("gcra", 10, Costs::One, &modes[..2]);
    let (m, d) = (&governor[0], &governor[1]);
    assert_pinned(
        m,
        1.0089,
        24,
        &format!("pacer {:.4} / {}", m.share, m.throttled),
    );
    assert_pinned(
        d,
        0.9659,
        31,
        &format!("default {:.4} / {}", d.share, d.throttled),
    );
    for (g, c) in governor.iter().zip(&gcra) {
        assert!(
            (g.share - c.share).abs() <= 0.003 && g.throttled.abs_diff(c.throttled) <= 1,
            "governor {:.4} / {} against gcra {:.4} / {}",
            g.share,
            g.throttled,
            c.share,
            c.throttled
        );
    }
    let h = &governor[2];
    assert_eq!((h.share, h.throttled), (m.share, m.throttled), "no fields");
}

/// Against the buckets of 10 s the Pacer controller meets more 429s than AIMD (above), at a
/// larger share: the two are not at the same point. AIMD made steep enough to take what the
/// Pacer controller takes (its `IncreaseStep` quadrupled, 480 units a minute) meets more 429s
/// than the controller: seed 42, 2 instances (`--example frontier` has the 20 seeds' medians).
#[test]
fn against_buckets_aimd_at_the_pacer_controller_s_share_meets_more_429s() {
    use pacer_core::ControllerKind;
    use pacer_sim::{LimiterMode, Mode, Story, compare, mode_by_name};
    for shape in ["token-bucket", "leaky-bucket"] {
        let options = seed_42(shape, 10, Costs::SharePoint, 0.0);
        let steep = LimiterMode::adjusted("AIMD, step 480".to_owned(), |o| {
            o.controller = ControllerKind::Aimd;
            o.aimd.increase_step = 480.0;
        });
        let modes: Vec<Box<dyn Mode>> =
            vec![mode_by_name("pacer").expect("a mode"), Box::new(steep)];
        let stories = [Story::by_name("free-run").expect("a story")];
        let c = compare(&options, &stories, &modes).expect("runs");
        let (pacer, aimd) = (&c.rows[0].metrics, &c.rows[1].metrics);
        let what = format!(
            "{shape}: the Pacer controller {:.4} / {} 429s, AIMD step 480 {:.4} / {}",
            pacer.share, pacer.throttled, aimd.share, aimd.throttled
        );
        assert!(pacer.share >= aimd.share, "{what}");
        assert!(2 * pacer.throttled <= aimd.throttled, "{what}");
    }
}

/// The profile for servers that count in buckets: the configuration text docs/controllers.md
/// gives under "When every 429 costs: a profile for buckets" (its first TOML block there).
fn bucket_profile_text() -> &'static str {
    const DOCS: &str = include_str!("../../../../docs/controllers.md");
    let section = DOCS
        .split_once("### When every 429 costs: a profile for buckets")
        .expect("the profile's section")
        .1;
    let block = section.split_once("```toml\n").expect("its TOML block").1;
    block.split_once("```").expect("the block's end").0
}

/// The `pacer-buckets` mode is the Pacer controller as the profile's text in the docs
/// configures it.
#[test]
fn the_pacer_buckets_mode_is_the_profile_the_docs_give() {
    use pacer_config::{ConfigLoader, Format};
    use pacer_sim::{LimiterMode, sim_limiter_defaults};
    let profile = ConfigLoader::new()
        .string(bucket_profile_text(), Format::Toml)
        .load_limiter("payments-api")
        .expect("the profile loads")
        .options;
    let mode = LimiterMode::pacer_buckets().options_for(&sim_limiter_defaults());
    assert_eq!(mode.controller, profile.controller);
    assert_eq!(mode.pacer, profile.pacer);
    assert_ne!(mode.pacer, sim_limiter_defaults().pacer);
}

/// With the bucket profile (`pacer-buckets`) the Pacer controller takes at least 95 % of the
/// quota and meets no more 429s than AIMD and fewer than its defaults, in four cells where, over
/// 20 seeds, the defaults meet more than AIMD (docs/controllers.md, "When every 429 costs: a
/// profile for buckets"): seed 42, 2 instances, the profile's share and 429s pinned.
#[test]
fn the_bucket_profile_meets_no_more_429s_than_aimd_against_buckets() {
    for (story, shape, window, share, throttled) in [
        ("free-run", "token-bucket", 10, 1.0009, 16),
        ("free-run", "leaky-bucket", 10, 1.0009, 16),
        ("cold-start", "leaky-bucket", 10, 0.9850, 10),
        ("cold-start", "leaky-bucket", 60, 1.0507, 5),
    ] {
        let options = seed_42(shape, window, Costs::SharePoint, 0.0);
        let c = run(&options, story, &["aimd", "pacer", "pacer-buckets"]);
        let [aimd, defaults, profile] = [0, 1, 2].map(|i| &c.rows[i].metrics);
        let what = format!(
            "{story}, {shape} of {window} s: AIMD {:.4} / {}, the defaults {:.4} / {}, \
             the profile {:.4} / {}",
            aimd.share,
            aimd.throttled,
            defaults.share,
            defaults.throttled,
            profile.share,
            profile.throttled
        );
        assert!(profile.throttled <= aimd.throttled, "{what}");
        assert!(profile.throttled < defaults.throttled, "{what}");
        assert!(profile.share >= 0.95, "{what}");
        assert_pinned(profile, share, throttled, &what);
    }
}

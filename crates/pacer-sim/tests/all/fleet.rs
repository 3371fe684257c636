//! The `fleet` mode: the instances share one learned rate through the simulator's store
//! (`docs/fleet.md` has the figures over 20 seeds; these pin seed 42).

use crate::run;
use pacer_sim::SimOptions;

/// `instances` instances whose demands add up to 4,000 units a minute (the quota is 3,000).
fn fleet_of(instances: u32) -> SimOptions {
    SimOptions {
        instances,
        demand: 4_000.0 / f64::from(instances),
        ..SimOptions::default()
    }
}

#[test]
fn thirty_two_instances_in_a_fleet_meet_the_quota_with_the_429s_of_one_process() {
    // One process with the whole budget, against 32 that learn it each alone and 32 in a fleet.
    let one = run(&fleet_of(1), "noisy-neighbour", &["pacer"]);
    let many = run(&fleet_of(32), "noisy-neighbour", &["pacer", "fleet"]);
    let (alone, apart, fleet) = (
        &one.rows[0].metrics,
        &many.rows[0].metrics,
        &many.rows[1].metrics,
    );
    assert!(fleet.throttled <= 20, "fleet: {} 429s", fleet.throttled);
    assert!(
        fleet.throttled * 5 < apart.throttled,
        "fleet {} against apart {}",
        fleet.throttled,
        apart.throttled
    );
    assert!(
        fleet.share >= alone.share - 0.01,
        "fleet {:.4} against one process {:.4}",
        fleet.share,
        alone.share
    );
}

#[test]
fn a_fleet_follows_autoscaling_where_a_static_instance_count_cannot() {
    let c = run(&fleet_of(8), "autoscale", &["pacer", "fleet"]);
    let (apart, fleet) = (&c.rows[0].metrics, &c.rows[1].metrics);
    assert!(
        fleet.share > apart.share && fleet.throttled < apart.throttled,
        "fleet {:.4} / {} against pacer {:.4} / {}",
        fleet.share,
        fleet.throttled,
        apart.share,
        apart.throttled
    );
    assert!(fleet.share >= 0.95, "{:.4}", fleet.share);
}

#[test]
fn a_store_that_goes_down_leaves_each_member_on_its_share_without_a_burst() {
    let c = run(&fleet_of(8), "store-outage", &["fleet"]);
    let fleet = &c.rows[0].metrics;
    // The outage is minutes 5 to 7: members hold their share of the fleet's estimate.
    assert!(fleet.share >= 0.96, "{:.4}", fleet.share);
    assert!(fleet.throttled <= 20, "{}", fleet.throttled);
}

#[test]
fn processes_alone_take_back_the_room_an_autoscaled_crowd_leaves() {
    // Seed 42, 8 processes that double twice and halve twice, none told. Each original process
    // cut a few percent at a time as the newcomers came, never a fifth at once; the level it
    // held before is remembered all the same (a fall in steps), and it probes back toward it
    // when the crowd leaves. In the last two minutes, against 6,000 units of quota: 3,479
    // accepted before the rule (the processes waited 16 minutes to probe), about 5,200 with it.
    let c = run(&fleet_of(8), "autoscale", &["pacer"]);
    let row = &c.rows[0];
    let last: u64 = row.series.accepted[780..900].iter().sum();
    assert!(last >= 4_500, "{last} units in minutes 13 and 14");
    assert!(row.metrics.share >= 0.92, "{:.4}", row.metrics.share);
}

#[test]
fn the_summed_rate_counts_the_instances_still_running() {
    // Seed 42: 16 processes until minute 12, 8 after. A stopped process's limiter keeps its last
    // rate; the series (the plot's blue line, the trace's `rate`) must not count it.
    let c = run(&fleet_of(8), "autoscale", &["pacer"]);
    let rate = &c.rows[0].series.rate;
    // Counting the 8 stopped processes at their last rate would keep the sum at least where it
    // was (the 8 running ones only grow into the room): below nine tenths of it, it counts the
    // running ones alone.
    let (before, after) = (rate[715].expect("a rate"), rate[725].expect("a rate"));
    assert!(
        after < before * 0.9,
        "{before:.0} at 11:55, {after:.0} at 12:05"
    );
}

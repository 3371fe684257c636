//! The stories' schedules: what changes, and when.

use super::*;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn every_name_has_a_story_and_back() {
    for name in STORY_NAMES {
        assert_eq!(Story::by_name(name).unwrap().name, name);
    }
    assert_eq!(Story::all().len(), 6);
    for name in MORE_STORY_NAMES {
        assert_eq!(Story::by_name(name).unwrap().name, name);
        assert!(!STORY_NAMES.contains(&name), "{name} is not in all");
    }
    assert!(Story::by_name("nope").is_none());
}

#[test]
fn the_noisy_neighbour_takes_half_for_the_sixth_minute() {
    let s = Story::by_name("noisy-neighbour").unwrap();
    assert_eq!(s.available_quota(3000.0, secs(299)), 3000.0);
    assert_eq!(s.available_quota(3000.0, secs(300)), 1500.0);
    assert_eq!(s.available_quota(3000.0, secs(359)), 1500.0);
    assert_eq!(s.available_quota(3000.0, secs(360)), 3000.0);
    assert_eq!(
        s.quota_drop(),
        Some(QuotaDrop {
            from: secs(300),
            until: secs(360)
        })
    );
}

#[test]
fn the_quota_cut_lasts_five_minutes() {
    let s = Story::by_name("quota-cut").unwrap();
    assert_eq!(s.quota_factor(secs(299)), 1.0);
    assert_eq!(s.quota_factor(secs(300)), 0.5);
    assert_eq!(s.quota_factor(secs(600)), 1.0);
    assert_eq!(
        s.quota_drop(),
        Some(QuotaDrop {
            from: secs(300),
            until: secs(600)
        })
    );
}

#[test]
fn a_stop_leaves_nothing_available() {
    let s = Story::by_name("long-retry-after").unwrap();
    assert_eq!(s.available_quota(3000.0, secs(300)), 0.0);
    assert_eq!(s.available_quota(3000.0, secs(420)), 3000.0);
    assert_eq!(s.quota_drop().unwrap().until, secs(420));
}

#[test]
fn scale_out_and_top_of_hour_change_the_clients_not_the_quota() {
    let s = Story::by_name("scale-out").unwrap();
    assert_eq!(s.instances_at(2, secs(299)), 2);
    assert_eq!(s.instances_at(2, secs(300)), 3);
    assert_eq!(s.start_of(2, 1), Duration::ZERO);
    assert_eq!(s.start_of(2, 2), secs(300));
    assert_eq!(s.quota_drop(), None);
    let t = Story::by_name("top-of-hour").unwrap();
    assert_eq!(t.demand_factor(secs(599)), 1.0);
    assert_eq!(t.demand_factor(secs(600)), 3.0);
    assert_eq!(t.demand_factor(secs(660)), 1.0);
    assert_eq!(t.demand_changes(), vec![secs(600), secs(660)]);
    assert_eq!(t.quota_drop(), None);
}

#[test]
fn the_cold_start_asks_twice_the_default_quota_without_retry_after() {
    let s = Story::by_name("cold-start").unwrap();
    assert!(!s.retry_after);
    assert!(Story::by_name("free-run").unwrap().retry_after);
    assert_eq!(s.demand_factor(secs(0)), 1.5);
    assert_eq!(s.demand_factor(secs(3600)), 1.5);
    assert_eq!(s.quota_drop(), None);
}

#[test]
fn a_restart_replaces_every_instance_at_minute_5() {
    let s = Story::by_name("restart").unwrap();
    let restarted = secs(300) + Duration::from_millis(100);
    for i in 0..2 {
        assert_eq!(s.stop_of(2, i), Some(secs(300)), "instance {i} stops");
        assert_eq!(s.start_of(2, i + 2), restarted, "its successor starts");
        assert_eq!(s.stop_of(2, i + 2), None);
    }
    assert_eq!(s.running_at(2, secs(299)), 2);
    assert_eq!(s.running_at(2, secs(300)), 0);
    assert_eq!(s.running_at(2, restarted), 2);
    assert_eq!(s.instances_at(2, restarted), 4, "two started, two stopped");
    assert_eq!(s.instance_count_at(2, restarted), 2, "the two running");
    let scale_out = Story::by_name("scale-out").unwrap();
    assert_eq!(scale_out.instance_count_at(2, secs(300)), 3);
    let autoscale = Story::by_name("autoscale").unwrap();
    assert_eq!(
        autoscale.instance_count_at(2, secs(400)),
        2,
        "not announced"
    );
    assert_eq!(s.quota_drop(), None);
}

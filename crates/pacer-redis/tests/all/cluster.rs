//! The stores against a local Redis Cluster of three primaries (started by the harness): both
//! conformance suites, and a fleet's keys in one slot.

use crate::conformance::cluster_fixture;

mod windows {
    use super::cluster_fixture;
    pacer_core::window_conformance_tests!(cluster_fixture());
}

mod fleets {
    use super::cluster_fixture;
    pacer_core::fleet_conformance_tests!(cluster_fixture());
}

#[tokio::test]
async fn a_fleet_s_keys_share_one_slot_and_the_cluster_has_three_primaries() {
    let f = cluster_fixture().await;
    let mut conn = f.conn.clone();
    let mut slots = Vec::new();
    for key in f
        .fleets
        .redis_keys("orders-api:https://api.example.com:443")
    {
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("keyslot");
        slots.push(slot);
    }
    assert!(slots.windows(2).all(|w| w[0] == w[1]), "{slots:?}");
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await
        .expect("nodes");
    assert_eq!(nodes.lines().filter(|l| l.contains("master")).count(), 3);
}

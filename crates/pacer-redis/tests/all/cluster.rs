//! The stores against a local Redis Cluster of three primaries (started by the harness): both
//! conformance suites, and a fleet's keys in one slot.

use crate::harness;
use pacer_core::conformance::{BoxFuture, Fixture};
use pacer_core::fleet_conformance::FleetFixture;
use pacer_core::{FleetStore, ManualClock, WindowStore};
use pacer_redis::testing::cluster;
use pacer_redis::{RedisConnection, RedisFleetStore, RedisWindowStore};
use std::sync::Arc;

pub(crate) struct ClusterFixture {
    clock: ManualClock,
    windows: RedisWindowStore,
    fleets: RedisFleetStore,
    prefix: String,
    conn: RedisConnection,
}

async fn on_cluster() -> ClusterFixture {
    let clock = ManualClock::new();
    let prefix = harness::unique_prefix();
    let windows = RedisWindowStore::builder()
        .key_prefix(&prefix)
        .test_clock(Arc::new(clock.clone()))
        .connect_cluster(cluster())
        .await
        .expect("connect to the test cluster");
    let fleets = RedisFleetStore::with_prefix(&windows, &format!("{prefix}f:")).expect("a prefix");
    ClusterFixture {
        conn: windows.connection(),
        clock,
        windows,
        fleets,
        prefix,
    }
}

impl Fixture for ClusterFixture {
    fn store(&self) -> &dyn WindowStore {
        &self.windows
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            redis::cmd("EXISTS")
                .arg(self.windows.redis_key(key))
                .query_async::<i64>(&mut conn)
                .await
                .expect("exists")
                == 1
        })
    }
}

impl FleetFixture for ClusterFixture {
    fn store(&self) -> &dyn FleetStore {
        &self.fleets
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }
}

mod windows {
    use super::on_cluster;
    pacer_core::window_conformance_tests!(on_cluster());
}

mod fleets {
    use super::on_cluster;
    pacer_core::fleet_conformance_tests!(on_cluster());
}

#[tokio::test]
async fn a_fleet_s_keys_share_one_slot_and_the_cluster_has_three_primaries() {
    let f = on_cluster().await;
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
    let _ = &f.prefix;
}

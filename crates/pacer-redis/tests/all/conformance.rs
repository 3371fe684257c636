//! The conformance suites (windows and fleets) against Redis, on a manual clock through the test
//! builds of the Lua libraries: the same scenarios, with the same exact expectations, as the
//! memory stores. `cluster.rs` runs them again against a Redis Cluster.

use crate::harness;
use pacer_core::conformance::{BoxFuture, Fixture};
use pacer_core::fleet_conformance::FleetFixture;
use pacer_core::{FleetStore, ManualClock, WindowStore};
use pacer_redis::testing::cluster;
use pacer_redis::{RedisConnection, RedisFleetStore, RedisWindowStore};
use std::sync::Arc;

pub(crate) struct RedisFixture {
    pub(crate) clock: ManualClock,
    pub(crate) store: RedisWindowStore,
    pub(crate) fleets: RedisFleetStore,
    pub(crate) prefix: String,
    pub(crate) conn: RedisConnection,
    /// On the test cluster, whose keys go with it (a scan of one node would miss the others').
    on_cluster: bool,
}

/// A window store and a fleet store on the shared Redis under a fresh prefix, on a new manual
/// clock.
pub(crate) async fn redis_fixture() -> RedisFixture {
    fixture(false).await
}

/// The same on the tests' Redis Cluster of three primaries.
pub(crate) async fn cluster_fixture() -> RedisFixture {
    fixture(true).await
}

async fn fixture(on_cluster: bool) -> RedisFixture {
    let clock = ManualClock::new();
    let prefix = harness::unique_prefix();
    let builder = RedisWindowStore::builder()
        .key_prefix(&prefix)
        .test_clock(Arc::new(clock.clone()));
    let store = if on_cluster {
        builder.connect_cluster(cluster()).await
    } else {
        builder.connect(harness::url()).await
    }
    .expect("connect to the test Redis");
    let fleets = RedisFleetStore::with_prefix(&store, &format!("{prefix}f:")).expect("a prefix");
    RedisFixture {
        conn: store.connection(),
        clock,
        store,
        fleets,
        prefix,
        on_cluster,
    }
}

impl RedisFixture {
    fn delete_keys(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if !self.on_cluster {
                let mut conn = self.conn.clone();
                harness::delete_prefix(&mut conn, &self.prefix).await;
            }
        })
    }
}

impl Fixture for RedisFixture {
    fn store(&self) -> &dyn WindowStore {
        &self.store
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            redis::cmd("EXISTS")
                .arg(self.store.redis_key(key))
                .query_async::<i64>(&mut conn)
                .await
                .expect("exists")
                == 1
        })
    }

    fn cleanup(&self) -> BoxFuture<'_, ()> {
        self.delete_keys()
    }
}

impl FleetFixture for RedisFixture {
    fn store(&self) -> &dyn FleetStore {
        &self.fleets
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn cleanup(&self) -> BoxFuture<'_, ()> {
        self.delete_keys()
    }
}

mod windows {
    use super::redis_fixture;
    pacer_core::window_conformance_tests!(redis_fixture());
}

mod fleets {
    use super::redis_fixture;
    pacer_core::fleet_conformance_tests!(redis_fixture());
}

//! The fleet conformance suite against Redis, on a manual clock through the test build of the
//! fleet library: the same scenarios, with the same exact expectations, as the memory store.

use crate::harness;
use pacer_core::conformance::BoxFuture;
use pacer_core::fleet_conformance::FleetFixture;
use pacer_core::{FleetStore, ManualClock};
use pacer_redis::{RedisConnection, RedisFleetStore, RedisWindowStore};
use std::sync::Arc;

pub(crate) struct RedisFleet {
    clock: ManualClock,
    store: RedisFleetStore,
    prefix: String,
    conn: RedisConnection,
}

/// A fleet store on the shared Redis under a fresh prefix, on a new manual clock.
pub(crate) async fn redis_fleet() -> RedisFleet {
    let clock = ManualClock::new();
    let prefix = harness::unique_prefix();
    let windows = RedisWindowStore::builder()
        .test_clock(Arc::new(clock.clone()))
        .connect(harness::url())
        .await
        .expect("connect to the test Redis");
    let store = RedisFleetStore::with_prefix(&windows, &prefix).expect("a valid prefix");
    RedisFleet {
        conn: windows.connection(),
        clock,
        store,
        prefix,
    }
}

impl FleetFixture for RedisFleet {
    fn store(&self) -> &dyn FleetStore {
        &self.store
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn cleanup(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            harness::delete_prefix(&mut conn, &self.prefix).await;
        })
    }
}

mod conformance {
    use super::redis_fleet;
    pacer_core::fleet_conformance_tests!(redis_fleet());
}

//! The window conformance suite against Redis, on a manual clock through the test build of the
//! Lua library: the same scenarios, with the same exact expectations, as the memory store.

use crate::harness;
use pacer_core::conformance::{BoxFuture, Fixture};
use pacer_core::{ManualClock, WindowStore};
use pacer_redis::RedisConnection;
use pacer_redis::RedisWindowStore;
use std::sync::Arc;

pub(crate) struct RedisFixture {
    pub(crate) clock: ManualClock,
    pub(crate) store: RedisWindowStore,
    pub(crate) prefix: String,
    pub(crate) conn: RedisConnection,
}

/// A store on the shared Redis under a fresh prefix, on a new manual clock.
pub(crate) async fn redis_fixture() -> RedisFixture {
    let clock = ManualClock::new();
    let prefix = harness::unique_prefix();
    let store = RedisWindowStore::builder()
        .key_prefix(&prefix)
        .test_clock(Arc::new(clock.clone()))
        .connect(harness::url())
        .await
        .expect("connect to the test Redis");
    RedisFixture {
        conn: store.connection(),
        clock,
        store,
        prefix,
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
        Box::pin(async move {
            let mut conn = self.conn.clone();
            harness::delete_prefix(&mut conn, &self.prefix).await;
        })
    }
}

pacer_core::window_conformance_tests!(redis_fixture());

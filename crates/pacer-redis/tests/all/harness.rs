//! Finds a Redis for the tests, or starts one (`pacer_redis::testing`); gives each test its own
//! key prefix, a connection for test-side commands, and clocks for the Lua's test build.

use pacer_core::{Clock, Sleep, Timestamp, WindowTime};
use pacer_redis::RedisWindowStore;
pub(crate) use pacer_redis::testing::{Server, unique_prefix, url};
use redis::aio::ConnectionManager;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// A connection to `url` for test-side commands.
pub(crate) async fn connection(url: &str) -> ConnectionManager {
    let client = redis::Client::open(url).expect("url");
    ConnectionManager::new(client).await.expect("connect")
}

/// Deletes every key under `prefix`.
pub(crate) async fn delete_prefix(conn: &mut impl redis::aio::ConnectionLike, prefix: &str) {
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await
            .expect("scan");
        if !keys.is_empty() {
            let _: i64 = redis::cmd("DEL")
                .arg(&keys)
                .query_async(conn)
                .await
                .expect("del");
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}

/// A store on the shared Redis under a fresh prefix, on the real Redis clock.
pub(crate) async fn real_store() -> (RedisWindowStore, String) {
    let prefix = unique_prefix();
    let store = RedisWindowStore::builder()
        .key_prefix(&prefix)
        .connect(url())
        .await
        .expect("connect to the test Redis");
    (store, prefix)
}

/// A wall clock that the test sets, backwards too (for the test build of the library).
#[derive(Debug, Default)]
pub(crate) struct SteppingClock {
    micros: AtomicU64,
}

impl SteppingClock {
    pub(crate) fn set(&self, t: WindowTime) {
        self.micros.store(t.as_micros(), Ordering::SeqCst);
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> Timestamp {
        Timestamp::ZERO
    }
    fn system_now(&self) -> SystemTime {
        WindowTime::from_micros(self.micros.load(Ordering::SeqCst)).to_system_time()
    }
    fn sleep_until(&self, _deadline: Timestamp) -> Sleep {
        Box::pin(std::future::pending())
    }
}

//! Faults: a flushed function library, a flushed database, a restarted server, an unreachable
//! one, one that never answers. Each test runs its own `redis-server` (or none), never the
//! shared one.

use crate::harness::Server;
use pacer_core::{WindowError, WindowGeometry, WindowStore};
use pacer_redis::{LIBRARY_NAME, RedisWindowStore};
use std::time::Duration;
use tokio::time::timeout;

fn geometry() -> WindowGeometry {
    WindowGeometry::new(10, Duration::from_secs(1), 8).unwrap()
}

/// The calls of these tests must end (in a result or an error) well within this; it bounds a
/// hang, it does not time anything.
const BOUND: Duration = Duration::from_secs(15);

async fn library_loaded(store: &RedisWindowStore) -> bool {
    let mut conn = store.connection();
    let libs: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg(LIBRARY_NAME)
        .query_async(&mut conn)
        .await
        .unwrap();
    matches!(libs, redis::Value::Array(ref v) if !v.is_empty())
}

#[tokio::test]
async fn a_flushed_library_is_loaded_again() {
    let server = Server::start();
    let store = RedisWindowStore::connect(&server.url()).await.unwrap();
    let g = geometry();
    assert_eq!(store.try_take("k", g, 5, 2).await.unwrap().taken, 2);
    let mut conn = store.connection();
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!library_loaded(&store).await);
    let r = store.try_take("k", g, 5, 2).await.unwrap();
    assert_eq!(r.taken, 2, "reloaded, retried, and the window kept");
    assert!(library_loaded(&store).await);
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        store.eta("k", g, 5, 1).await.unwrap().eta.is_some(),
        "read-only calls reload too"
    );
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(store.now().await.is_ok());
}

#[tokio::test]
async fn a_flushed_database_starts_the_windows_afresh() {
    let server = Server::start();
    let store = RedisWindowStore::connect(&server.url()).await.unwrap();
    let g = geometry();
    assert_eq!(store.events("k", g, 5).await.unwrap().total, 5);
    let mut conn = store.connection();
    let _: () = redis::cmd("FLUSHDB").query_async(&mut conn).await.unwrap();
    let r = store.events("k", g, 0).await.unwrap();
    assert_eq!((r.total, r.expired), (0, 0));
    assert_eq!(store.try_take("k", g, 5, 5).await.unwrap().taken, 5);
}

#[tokio::test]
async fn a_restarted_server_is_reconnected_and_reloaded() {
    let mut server = Server::start();
    let store = RedisWindowStore::builder()
        .connection_timeout(Duration::from_millis(300))
        .response_timeout(Duration::from_millis(300))
        .connect(&server.url())
        .await
        .unwrap();
    let g = geometry();
    assert_eq!(store.try_take("k", g, 5, 1).await.unwrap().taken, 1);
    server.stop();
    let down = timeout(BOUND, store.try_take("k", g, 5, 1))
        .await
        .expect("no hang");
    let e = down.unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    server.restart();
    // The manager reconnects in the background; calls succeed again within a few tries.
    let mut last = None;
    for _ in 0..50 {
        match timeout(BOUND, store.try_take("k", g, 5, 1))
            .await
            .expect("no hang")
        {
            Ok(r) => {
                last = Some(r);
                break;
            }
            Err(e) => {
                assert!(
                    e.is_unavailable(),
                    "only unavailability while reconnecting: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let r = last.expect("the store recovered after the restart");
    assert_eq!(r.taken, 1, "an empty server: a fresh window");
    assert!(
        library_loaded(&store).await,
        "the library was loaded on the new server"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_typed_error() {
    // A port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("redis://127.0.0.1:{port}");
    let e = timeout(BOUND, RedisWindowStore::connect(&url))
        .await
        .expect("no hang")
        .unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    let lazy = RedisWindowStore::builder().connect_lazy(&url).unwrap();
    let e = timeout(BOUND, lazy.try_take("k", geometry(), 1, 1))
        .await
        .expect("no hang")
        .unwrap_err();
    assert!(matches!(e, WindowError::Unavailable { .. }), "{e}");
    let source = std::error::Error::source(&e).expect("the Redis error is kept");
    assert!(
        source
            .downcast_ref::<pacer_redis::RedisWindowError>()
            .is_some()
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("redis://{}", listener.local_addr().unwrap());
    // Accept connections and hold them, answering nothing.
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let store = RedisWindowStore::builder()
        .connection_timeout(Duration::from_millis(200))
        .response_timeout(Duration::from_millis(200))
        .reconnect_retries(0)
        .connect_lazy(&url)
        .unwrap();
    let e = timeout(BOUND, store.eta("k", geometry(), 1, 1))
        .await
        .expect("no hang")
        .unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    holder.abort();
}

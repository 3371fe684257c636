//! A Redis that is down, or is not Redis: calls fail at once while it is down, one call per
//! backoff asks again, the store recovers by itself; a server that answers something else is
//! named in the error. The backoff runs on a manual clock, so nothing here waits on it.

use crate::harness::Server;
use pacer_core::{ManualClock, WindowError, WindowGeometry, WindowStore};
use pacer_redis::testing::free_port;
use pacer_redis::{RedisWindowError, RedisWindowStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::time::timeout;

fn geometry() -> WindowGeometry {
    WindowGeometry::new(10, Duration::from_secs(1), 8).unwrap()
}

/// Bounds a hang; times nothing.
const BOUND: Duration = Duration::from_secs(15);

fn store_at(url: &str, clock: &ManualClock) -> RedisWindowStore {
    RedisWindowStore::builder()
        .test_clock(Arc::new(clock.clone()))
        .connect_lazy(url)
        .unwrap()
}

fn redis_error(e: &WindowError) -> &RedisWindowError {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<RedisWindowError>())
        .expect("a Redis store error")
}

/// Calls `try_take` `n` times; returns how many of them went to the network (failed otherwise
/// than with `Down`).
async fn asked(store: &RedisWindowStore, n: usize) -> usize {
    let mut asked = 0;
    for _ in 0..n {
        let e = timeout(BOUND, store.try_take("k", geometry(), 5, 1))
            .await
            .expect("no hang")
            .unwrap_err();
        assert!(e.is_unavailable(), "{e}");
        if !redis_error(&e).is_down() {
            asked += 1;
        }
    }
    asked
}

#[tokio::test]
async fn redis_refusing_connections_is_asked_once_per_backoff_not_once_per_call() {
    let clock = ManualClock::new();
    let port = free_port();
    let store = store_at(&format!("redis://127.0.0.1:{port}"), &clock);
    assert!(!store.is_down());
    assert_eq!(asked(&store, 100).await, 1, "the first call, then none");
    assert!(store.is_down());
    let e = store.eta("k", geometry(), 5, 1).await.unwrap_err();
    let down = redis_error(&e);
    assert!(
        matches!(down, RedisWindowError::Down { address, retry_in }
            if *address == format!("127.0.0.1:{port}") && *retry_in == Duration::from_millis(100)),
        "{down}"
    );
    // After each backoff (100, 200, 400 ms…) one call asks again.
    for backoff_ms in [100, 200, 400, 800, 1600, 2000, 2000] {
        clock.advance(Duration::from_millis(backoff_ms - 1));
        assert_eq!(asked(&store, 10).await, 0, "still within {backoff_ms} ms");
        clock.advance(Duration::from_millis(1));
        assert_eq!(
            asked(&store, 10).await,
            1,
            "one probe after {backoff_ms} ms"
        );
    }
}

#[tokio::test]
async fn a_store_whose_redis_comes_back_recovers_by_itself() {
    let clock = ManualClock::new();
    let port = free_port();
    let store = store_at(&format!("redis://127.0.0.1:{port}"), &clock);
    assert_eq!(asked(&store, 5).await, 1);
    let _server = Server::start_on(port);
    assert_eq!(
        asked(&store, 5).await,
        0,
        "not asked before the backoff ends"
    );
    clock.advance(Duration::from_millis(100));
    let r = timeout(BOUND, store.try_take("k", geometry(), 5, 1))
        .await
        .expect("no hang")
        .expect("the probe reached the new server");
    assert_eq!(r.taken, 1);
    assert!(!store.is_down());
    assert_eq!(
        store.try_take("k", geometry(), 5, 1).await.unwrap().taken,
        1
    );
}

/// A listener that answers every connection with `reply` and closes it; counts connections.
async fn impostor(reply: &'static [u8]) -> (u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let _ = socket.write_all(reply).await;
            let _ = socket.shutdown().await;
        }
    });
    (port, accepted, task)
}

const HTTP: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

#[tokio::test]
async fn a_url_that_is_not_redis_says_so_and_names_the_address_without_the_password() {
    for reply in [HTTP, b"\x00\x01\x02 garbage\r\n".as_slice()] {
        let (port, _, task) = impostor(reply).await;
        let url = format!("redis://:hunter2@127.0.0.1:{port}");
        let e = timeout(BOUND, RedisWindowStore::connect(&url))
            .await
            .expect("no hang")
            .unwrap_err();
        let text = e.to_string();
        assert!(e.is_not_redis(), "{e:?}");
        assert!(
            text.starts_with(&format!(
                "the server at 127.0.0.1:{port} did not answer as Redis"
            )),
            "{text}"
        );
        assert!(!text.contains("hunter2") && !format!("{e:?}").contains("hunter2"));

        // Lazily: the first call says so, a backend error that no store policy hides.
        let clock = ManualClock::new();
        let store = store_at(&url, &clock);
        for _ in 0..3 {
            let e = timeout(BOUND, store.try_take("k", geometry(), 5, 1))
                .await
                .expect("no hang")
                .unwrap_err();
            assert!(matches!(e, WindowError::Backend { .. }), "{e}");
            assert!(redis_error(&e).is_not_redis(), "{e}");
            assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
        }
        task.abort();
    }
}

#[tokio::test]
async fn a_server_that_hangs_up_at_once_is_not_connected_to_on_every_call() {
    let (port, accepted, task) = impostor(b"").await;
    let clock = ManualClock::new();
    let store = store_at(&format!("redis://127.0.0.1:{port}"), &clock);
    for _ in 0..100 {
        let e = timeout(BOUND, store.try_take("k", geometry(), 5, 1))
            .await
            .expect("no hang")
            .unwrap_err();
        assert!(e.is_unavailable(), "{e}");
    }
    let n = accepted.load(Ordering::SeqCst);
    assert!(n <= 3, "{n} connections for 100 calls");
    task.abort();
}

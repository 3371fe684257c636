//! Finds a Redis for the tests, or starts one; gives each test its own key prefix.
//!
//! The shared Redis is the one at `REDIS_URL` (default `redis://127.0.0.1:6379`). If none
//! answers, one `redis-server` is started on a free loopback port for the whole test binary; it
//! stops when the binary exits (a shell wrapper kills it when its stdin closes). Tests that flush,
//! restart or kill a server start a private one with [`Server::start`] so they never disturb a
//! Redis others use.

use pacer_core::{Clock, RealClock, Sleep, Timestamp, WindowTime};
use pacer_redis::RedisWindowStore;
use redis::aio::ConnectionManager;
use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The URL of the Redis shared by the tests.
pub(crate) fn url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    static SERVER: Mutex<Option<Server>> = Mutex::new(None);
    URL.get_or_init(|| {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        if answers(&url) {
            return url;
        }
        let server = Server::start();
        let url = server.url();
        *SERVER.lock().unwrap() = Some(server);
        url
    })
}

/// True when a Redis answers `PING` at `url` within a second.
pub(crate) fn answers(url: &str) -> bool {
    let Ok(client) = redis::Client::open(url) else {
        return false;
    };
    let Ok(mut con) = client.get_connection_with_timeout(Duration::from_secs(1)) else {
        return false;
    };
    let _ = con.set_read_timeout(Some(Duration::from_secs(1)));
    redis::cmd("PING").query::<String>(&mut con).is_ok()
}

/// A `redis-server` of the test's own on a free loopback port; stopped when dropped.
pub(crate) struct Server {
    port: u16,
    wrapper: Option<(Child, ChildStdin)>,
}

impl Server {
    /// Starts a server on a free port.
    pub(crate) fn start() -> Server {
        let port = free_port();
        let mut server = Server {
            port,
            wrapper: None,
        };
        server.restart();
        server
    }

    /// `redis://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (if running) and waits until it is gone.
    pub(crate) fn stop(&mut self) {
        if let Some((mut child, stdin)) = self.wrapper.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, empty (it keeps nothing on disk).
    pub(crate) fn restart(&mut self) {
        self.stop();
        let dir = std::env::temp_dir();
        let script = format!(
            "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no \
             --dir '{dir}' --logfile '' --loglevel warning >/dev/null 2>&1 & pid=$!; \
             read _ignored; kill $pid; wait $pid",
            port = self.port,
            dir = dir.display(),
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh to start redis-server");
        let stdin = child.stdin.take().expect("piped");
        self.wrapper = Some((child, stdin));
        for _ in 0..100 {
            if answers(&self.url()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "redis-server did not answer on port {} within 5 s (is redis-server installed?)",
            self.port
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((_, stdin)) = &mut self.wrapper {
            let _ = stdin.write_all(b"\n");
        }
        self.stop();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("bound").port()
}

/// A key prefix no other test (in this or another process) uses.
pub(crate) fn unique_prefix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let t = WindowTime::from_system_time(RealClock::new().system_now()).as_micros();
    format!("pt:{:x}:{t:x}:{n}:", std::process::id())
}

/// A connection to `url` for test-side commands.
pub(crate) async fn connection(url: &str) -> ConnectionManager {
    let client = redis::Client::open(url).expect("url");
    ConnectionManager::new(client).await.expect("connect")
}

/// Deletes every key under `prefix`.
pub(crate) async fn delete_prefix(conn: &mut ConnectionManager, prefix: &str) {
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

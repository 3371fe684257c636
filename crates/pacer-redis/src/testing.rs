//! Finding or starting a Redis for tests (feature `test-util`), for this crate's tests and for
//! any crate that tests against Pacer's Redis store.
//!
//! The shared Redis is the one at `REDIS_URL` (default `redis://127.0.0.1:6379`). If none
//! answers, one `redis-server` is started on a free loopback port for the whole test binary; it
//! stops when the binary exits (a shell wrapper kills it when its stdin closes). Tests that flush,
//! restart or kill a server start a private one with [`Server::start`] so they never disturb a
//! Redis others use.

use pacer_core::{Clock, RealClock, WindowTime};
use std::io::Write;
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The URL of the Redis shared by the tests.
pub fn url() -> &'static str {
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
pub fn answers(url: &str) -> bool {
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
#[derive(Debug)]
pub struct Server {
    port: u16,
    options: ServerOptions,
    tls_port: Option<u16>,
    wrapper: Option<(Child, ChildStdin)>,
}

/// How to start a test server: with a password, with TLS.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// `requirepass`.
    pub password: Option<String>,
    /// A certificate and its key (PEM files) to serve TLS with, on a port of its own.
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// Runs as a cluster node, its cluster config file in this directory.
    pub cluster_dir: Option<std::path::PathBuf>,
}

impl Server {
    /// Starts a server on a free port.
    pub fn start() -> Server {
        Server::start_with(ServerOptions::default())
    }

    /// Starts a server on `port` (one a test found free, where a store already points).
    pub fn start_on(port: u16) -> Server {
        let mut server = Server {
            port,
            options: ServerOptions::default(),
            tls_port: None,
            wrapper: None,
        };
        server.restart();
        server
    }

    /// Starts a cluster node on `port`, its cluster config in `dir`.
    fn start_node(port: u16, dir: &std::path::Path) -> Server {
        let mut server = Server {
            port,
            options: ServerOptions {
                cluster_dir: Some(dir.to_owned()),
                ..ServerOptions::default()
            },
            tls_port: None,
            wrapper: None,
        };
        server.restart();
        server
    }

    /// Starts a server on a free port with a password and/or TLS.
    pub fn start_with(options: ServerOptions) -> Server {
        let port = free_port();
        let tls_port = options.tls.as_ref().map(|_| free_port());
        let mut server = Server {
            port,
            options,
            tls_port,
            wrapper: None,
        };
        server.restart();
        server
    }

    /// `redis://[:PASSWORD@]127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        match &self.options.password {
            Some(pw) => format!("redis://:{pw}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// `rediss://[:PASSWORD@]127.0.0.1:TLS_PORT/#insecure` when the server serves TLS (the test
    /// certificate is self-signed, hence `#insecure`).
    pub fn tls_url(&self) -> Option<String> {
        let port = self.tls_port?;
        Some(match &self.options.password {
            Some(pw) => format!("rediss://:{pw}@127.0.0.1:{port}/#insecure"),
            None => format!("rediss://127.0.0.1:{port}/#insecure"),
        })
    }

    /// Stops the server (if running) and waits until it is gone.
    pub fn stop(&mut self) {
        if let Some((mut child, stdin)) = self.wrapper.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, empty (it keeps nothing on disk).
    pub fn restart(&mut self) {
        self.stop();
        let dir = self
            .options
            .cluster_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        let mut extra = String::new();
        if self.options.cluster_dir.is_some() {
            extra.push_str(&format!(
                " --cluster-enabled yes --cluster-config-file nodes-{}.conf",
                self.port
            ));
        }
        if let Some(pw) = &self.options.password {
            extra.push_str(&format!(" --requirepass '{pw}'"));
        }
        if let (Some((cert, key)), Some(tls_port)) = (&self.options.tls, self.tls_port) {
            extra.push_str(&format!(
                " --tls-port {tls_port} --tls-cert-file '{c}' --tls-key-file '{k}' \
                 --tls-ca-cert-file '{c}' --tls-auth-clients no",
                c = cert.display(),
                k = key.display()
            ));
        }
        let script = format!(
            "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no \
             --dir '{dir}' --logfile '' --loglevel warning{extra} >/dev/null 2>&1 & pid=$!; \
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

/// A Redis Cluster of three primaries on free loopback ports, started for a test binary (by
/// [`cluster`]) and stopped when it exits. Each node keeps nothing on disk but its cluster
/// config, in a directory of its own.
#[derive(Debug)]
pub struct Cluster {
    ports: [u16; 3],
    nodes: Vec<Server>,
    _dir: Option<std::path::PathBuf>,
}

impl Cluster {
    /// Starts three nodes, joins them into a cluster with `redis-cli --cluster create`, and
    /// waits until it answers `cluster_state:ok`.
    pub fn start() -> Cluster {
        let ports = [free_port(), free_port(), free_port()];
        let dir =
            std::env::temp_dir().join(format!("pacer-cluster-{}-{}", std::process::id(), ports[0]));
        std::fs::create_dir_all(&dir).expect("a directory for the cluster");
        let nodes = ports
            .iter()
            .map(|&port| Server::start_node(port, &dir))
            .collect();
        let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli to create the cluster (is redis-tools installed?)");
        assert!(created.success(), "redis-cli --cluster create failed");
        let cluster = Cluster {
            ports,
            nodes,
            _dir: Some(dir),
        };
        for _ in 0..200 {
            if cluster.is_ok() {
                return cluster;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the cluster on {addresses:?} did not become ok within 10 s");
    }

    /// Every node's URL, `redis://127.0.0.1:PORT`.
    pub fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    fn is_ok(&self) -> bool {
        self.ports.iter().all(|p| {
            let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{p}")) else {
                return false;
            };
            let Ok(mut con) = client.get_connection_with_timeout(Duration::from_secs(1)) else {
                return false;
            };
            redis::cmd("CLUSTER")
                .arg("INFO")
                .query::<String>(&mut con)
                .is_ok_and(|info| info.contains("cluster_state:ok"))
        })
    }

    /// How many nodes run.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if no node runs.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.nodes.clear();
        if let Some(dir) = self._dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The URLs of the Redis Cluster shared by a test binary's tests: one started on first use
/// (three primaries on free loopback ports), stopped when the binary exits.
pub fn cluster() -> &'static [String] {
    static URLS: OnceLock<Vec<String>> = OnceLock::new();
    static CLUSTER: Mutex<Option<Cluster>> = Mutex::new(None);
    URLS.get_or_init(|| {
        let cluster = Cluster::start();
        let urls = cluster.urls();
        *CLUSTER.lock().unwrap() = Some(cluster);
        urls
    })
}

/// A loopback port nothing listens on (bound, then let go), so that connecting to it is refused.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("bound").port()
}

/// A key prefix no other test (in this or another process) uses.
pub fn unique_prefix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let t = WindowTime::from_system_time(RealClock::new().system_now()).as_micros();
    format!("pt:{:x}:{t:x}:{n}:", std::process::id())
}

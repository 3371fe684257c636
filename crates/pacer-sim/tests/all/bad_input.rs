//! Bad input to `pacer-sim`, second round, through the binary as a user runs it: each case
//! either does what it says or exits 2 with a message that names the flag, key or value and the
//! rule (docs/RELIABILITY.md, "Bad input").

use axum::Router;
use axum::http::StatusCode;
use axum::routing::any;
use pacer_sim::serve::{HeaderDialect, Quirks, ServeOptions, Server};
use pacer_sim::{ServerShape, Speed, Story};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Runs `pacer-sim` with `args` and `env` (nothing else of the caller's `PACER__` variables).
fn sim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pacer-sim"));
    c.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("PACER_") {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().copied());
    c.output().expect("pacer-sim runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exits 2 and says `needle` on standard error.
fn refused(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(stderr(o).contains(needle), "{needle:?} in {}", stderr(o));
}

/// A runtime for the servers the tests start, for the whole test binary.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// A `pacer-sim serve` at 60× (a story minute is a real second).
fn served() -> String {
    runtime().block_on(async {
        let options = ServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            quota: 3000,
            story: Story::by_name("free-run").unwrap(),
            speed: Speed::new(60.0).unwrap(),
            headers: HeaderDialect::None,
            quirks: Quirks::none(),
            server: ServerShape::Sliding,
        };
        let server = Server::start(&options).await.unwrap();
        let url = server.url();
        std::mem::forget(server);
        url
    })
}

/// A target that answers every request with `status`.
fn answering(status: u16) -> String {
    runtime().block_on(async move {
        let app =
            Router::new().fallback(any(
                move || async move { StatusCode::from_u16(status).unwrap() },
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        runtime().spawn(async move { axum::serve(listener, app).await });
        url
    })
}

/// Writes `text` to a file of this test binary's own.
fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pacer-sim-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn redis_without_the_fleet_mode_is_refused() {
    let o = sim(
        &[
            "live",
            "--target",
            "http://127.0.0.1:9/",
            "--redis",
            "redis://127.0.0.1:6379",
        ],
        &[],
    );
    refused(&o, "--redis: only the fleet mode uses it");
}

#[test]
fn a_fleet_whose_redis_cannot_be_used_stops_the_run_and_says_why() {
    let target = served();
    for (url, shown) in [
        (
            "redis://127.0.0.1:1",
            "--redis redis://127.0.0.1:1: the fleet cannot form:",
        ),
        (
            "redis://:not-the-password@127.0.0.1:1",
            "--redis redis://***@127.0.0.1:1: the fleet cannot form:",
        ),
    ] {
        let o = sim(
            &[
                "live",
                "--target",
                &target,
                "--mode",
                "fleet",
                "--redis",
                url,
                "--duration",
                "1m",
                "-q",
            ],
            &[],
        );
        refused(&o, shown);
        assert!(!stderr(&o).contains("not-the-password"), "{}", stderr(&o));
    }
}

#[test]
fn a_mode_whose_every_request_failed_exits_2_after_its_row() {
    let target = answering(500);
    let o = sim(
        &[
            "live",
            "--target",
            &target,
            "--duration",
            "1m",
            "--speed",
            "60",
            "--quota",
            "3000",
            "-q",
        ],
        &[],
    );
    refused(
        &o,
        "aimd: every request failed (HTTP 500 Internal Server Error)",
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("| aimd |"));
}

#[test]
fn durations_say_the_rule_they_break() {
    let o = sim(
        &["live", "--target", "http://127.0.0.1:9/", "--duration", "0"],
        &[],
    );
    refused(&o, "--duration 0: must be from 1 to 1440 minutes");
    let o = sim(
        &[
            "live",
            "--target",
            "http://127.0.0.1:9/",
            "--duration",
            "1h1m",
        ],
        &[],
    );
    refused(&o, "one unit only, not a sum of several");
    let o = sim(
        &[
            "live",
            "--target",
            "http://127.0.0.1:9/",
            "--duration",
            "90s",
        ],
        &[],
    );
    refused(&o, "--duration 90s: must be a whole number of minutes");
}

#[test]
fn an_unreachable_target_says_why() {
    let o = sim(
        &[
            "live",
            "--target",
            "http://127.0.0.1:1/",
            "--duration",
            "1m",
        ],
        &[],
    );
    refused(&o, "cannot reach --target http://127.0.0.1:1/:");
    assert!(stderr(&o).contains("Connection refused"), "{}", stderr(&o));
}

const LIMITER_A: &str = "[adaptive_rate_limiting.limiters.a]\ninitial_units_per_minute = 600\n";

#[test]
fn a_limiter_found_without_regard_to_case_is_named_as_the_file_names_it() {
    let f = file("a.toml", LIMITER_A);
    let o = sim(
        &[
            "compare",
            "--config",
            f.to_str().unwrap(),
            "--limiter",
            "_A_",
            "--minutes",
            "1",
            "--mode",
            "aimd",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("| a "),
        "the row is `a`"
    );
}

#[test]
fn compare_refuses_a_fleet_by_name_and_runs_dialects() {
    let f = file(
        "fleet.toml",
        "[adaptive_rate_limiting.limiters.a]\n\
         [adaptive_rate_limiting.limiters.a.fleet]\nstore = \"redis://:secret@127.0.0.1:6379\"\n\
         [[adaptive_rate_limiting.limiters.a.dialects]]\nname = \"freshdesk\"\nlimit = \"x-ratelimit-total\"\nremaining = \"x-ratelimit-remaining\"\nwindow = \"1m\"\n",
    );
    let o = sim(
        &[
            "compare",
            "--config",
            f.to_str().unwrap(),
            "--limiter",
            "a",
            "--minutes",
            "1",
        ],
        &[],
    );
    refused(
        &o,
        "compare cannot run its Fleet (Store redis://***@127.0.0.1:6379",
    );
    assert!(!stderr(&o).contains("Dialects"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("secret"));
}

#[test]
fn environment_overrides_apply_as_the_library_reads_them() {
    let f = file("env.toml", LIMITER_A);
    let config = f.to_str().unwrap();
    let args = [
        "compare",
        "--config",
        config,
        "--limiter",
        "a",
        "--minutes",
        "1",
        "--format",
        "json",
    ];
    let bad = sim(
        &args,
        &[(
            "PACER__ADAPTIVERATELIMITING__LIMITERS__A__CONTROLLER",
            "bogus",
        )],
    );
    refused(
        &bad,
        "adaptive_rate_limiting.limiters.a.controller = \"bogus\": unknown controller",
    );
    let misspelt = sim(
        &args,
        &[(
            "PACER__ADAPTIVERATELIMITNG__LIMITERS__A__CONTROLLER",
            "Aimd",
        )],
    );
    refused(&misspelt, "PACER__ADAPTIVERATELIMITNG");
    // A good one changes the run: the fixed rate of 60 a minute holds the throughput to it.
    let plain = sim(&args, &[]);
    let capped = sim(
        &args,
        &[
            (
                "PACER__ADAPTIVERATELIMITING__LIMITERS__A__INITIALUNITSPERMINUTE",
                "60",
            ),
            (
                "PACER__ADAPTIVERATELIMITING__LIMITERS__A__MAXUNITSPERMINUTE",
                "60",
            ),
            (
                "PACER__ADAPTIVERATELIMITING__LIMITERS__A__MINUNITSPERMINUTE",
                "60",
            ),
        ],
    );
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert_eq!(capped.status.code(), Some(0), "{}", stderr(&capped));
    let throughput = |o: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let rows = v["rows"].as_array().unwrap();
        let a = rows.iter().find(|r| r["mode"] == "a").unwrap();
        a["throughput"].as_f64().unwrap()
    };
    assert!(throughput(&capped) <= 62.0, "{}", throughput(&capped));
    assert!(throughput(&plain) > 200.0, "{}", throughput(&plain));
}

#[test]
fn a_controller_table_the_limiter_does_not_run_is_a_warning() {
    let f = file(
        "warn.toml",
        "[adaptive_rate_limiting.limiters.a]\ncontroller = \"Cubic\"\n[adaptive_rate_limiting.limiters.a.aimd]\nincrease_step = 60\n",
    );
    let o = sim(
        &[
            "compare",
            "--config",
            f.to_str().unwrap(),
            "--limiter",
            "a",
            "--minutes",
            "1",
            "--mode",
            "aimd",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: adaptive_rate_limiting.limiters.a.aimd: ignored: the limiter runs the Cubic controller"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn live_runs_a_configured_fleet_and_stops_when_its_redis_cannot_be_used() {
    let target = served();
    let f = file(
        "live-fleet.toml",
        "[adaptive_rate_limiting.limiters.a]\n[adaptive_rate_limiting.limiters.a.fleet]\nstore = \"redis://127.0.0.1:1\"\n",
    );
    let o = sim(
        &[
            "live",
            "--target",
            &target,
            "--config",
            f.to_str().unwrap(),
            "--limiter",
            "a",
            "--duration",
            "1m",
            "-q",
        ],
        &[],
    );
    refused(
        &o,
        "--limiter a: Fleet.Store redis://127.0.0.1:1: the fleet cannot form",
    );
}

//! Reload on a temporary file: the running limiters keep their rate, clamped into the new bounds;
//! an invalid file changes nothing. No assertion on timing: the watcher's effect is polled for
//! with a generous safety timeout.

use pacer_config::{ConfigLoader, ConfigWatcher, Reload};
use reqwest_middleware::ClientBuilder;
use reqwest_pacer::PacerMiddleware;
use std::path::Path;
use std::time::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn write(path: &Path, limiters: &str) {
    std::fs::write(path, limiters).unwrap();
}

const START: &str = r#"
[adaptive_rate_limiting.limiters.api]
initial_units_per_minute = 3000
min_units_per_minute = 60
max_units_per_minute = 6000
endpoint_key = "Global"

[adaptive_rate_limiting.limiters.other]
max_units_per_minute = 900
"#;

/// One request, so the limiter has an endpoint (`*`: the key mode is Global) with a rate.
async fn touch(pacer: &PacerMiddleware, server: &MockServer) {
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();
    client.get(server.uri()).send().await.unwrap();
}

fn rate(pacer: &PacerMiddleware) -> f64 {
    pacer.state("api", "*").unwrap().limiter.unwrap().rate
}

/// Waits until `done` holds, up to a safety timeout (not a claim about how fast it is).
async fn eventually(mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the change was not applied within the safety timeout");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_file_is_applied_to_running_limiters() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pacer.toml");
    write(&path, START);
    let loader = ConfigLoader::new().file(&path);
    let pacer = loader.build().unwrap();
    touch(&pacer, &server).await;
    assert_eq!(rate(&pacer), 3000.0);

    let handle = ConfigWatcher::new(loader, pacer.clone())
        .interval(Duration::from_millis(10))
        .start()
        .unwrap();

    // A lower maximum: the rate is clamped into the new bounds; the new initial rate has no
    // effect on a running limiter.
    write(
        &path,
        &START
            .replace("max_units_per_minute = 6000", "max_units_per_minute = 1200")
            .replace(
                "initial_units_per_minute = 3000",
                "initial_units_per_minute = 100",
            ),
    );
    eventually(|| pacer.options("api").unwrap().max_units_per_minute == 1200.0).await;
    assert_eq!(rate(&pacer), 1200.0);
    assert_eq!(
        pacer.options("api").unwrap().initial_units_per_minute,
        Some(100.0)
    );

    // Wider bounds: the rate stays where it is.
    write(
        &path,
        &START.replace(
            "max_units_per_minute = 6000",
            "max_units_per_minute = 9000\nqueue_limit = 7",
        ),
    );
    eventually(|| pacer.options("api").unwrap().queue_limit == 7).await;
    assert_eq!(pacer.options("api").unwrap().max_units_per_minute, 9000.0);
    assert_eq!(rate(&pacer), 1200.0);

    // Stopping the handle stops the watcher: a later change is not applied.
    handle.stop();
    write(
        &path,
        &START.replace("max_units_per_minute = 900", "max_units_per_minute = 800"),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(pacer.options("other").unwrap().max_units_per_minute, 900.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_file_changes_nothing() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pacer.toml");
    write(&path, START);
    let loader = ConfigLoader::new().file(&path);
    let pacer = loader.build().unwrap();
    touch(&pacer, &server).await;
    let mut watcher = ConfigWatcher::new(loader, pacer.clone());
    let before = pacer.options("api").unwrap();

    // Invalid values in one limiter: nothing changes, in any limiter.
    write(
        &path,
        &START
            .replace("min_units_per_minute = 60", "min_units_per_minute = 0")
            .replace("max_units_per_minute = 900", "max_units_per_minute = 800"),
    );
    let e = watcher.reload().unwrap_err();
    assert_eq!(
        e.to_string(),
        "adaptive_rate_limiting.limiters.api.min_units_per_minute = 0: must be greater than 0"
    );
    assert_eq!(pacer.options("api").unwrap(), before);
    assert_eq!(pacer.options("other").unwrap().max_units_per_minute, 900.0);
    assert_eq!(rate(&pacer), 3000.0);

    // A file that does not parse: the same.
    write(&path, "[adaptive_rate_limiting");
    assert!(watcher.reload().is_err());
    assert_eq!(pacer.options("api").unwrap(), before);

    // Fixed: applied.
    write(
        &path,
        &START.replace("max_units_per_minute = 900", "max_units_per_minute = 800"),
    );
    let report = watcher.reload().unwrap();
    assert_eq!(report.updated, ["other"]);
    assert_eq!(report.unchanged, ["api"]);
    assert_eq!(pacer.options("other").unwrap().max_units_per_minute, 800.0);
}

#[test]
fn added_and_removed_limiters_need_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pacer.toml");
    write(&path, START);
    let loader = ConfigLoader::new().file(&path);
    let pacer = loader.build().unwrap();
    let mut watcher = ConfigWatcher::new(loader, pacer.clone());
    write(
        &path,
        "[adaptive_rate_limiting.limiters.api]\nmax_units_per_minute = 5000\n\
         [adaptive_rate_limiting.limiters.billing]\n",
    );
    let report = watcher.reload().unwrap();
    let expected = Reload::default();
    assert_ne!(report, expected);
    assert_eq!(report.updated, ["api"]);
    assert_eq!(report.added, ["billing"]);
    assert_eq!(report.removed, ["other"]);
    assert!(report.needs_restart.is_empty());
    assert_eq!(pacer.limiter_names(), ["api", "other"]);
    // The whole new section of `api` applies, its unwritten keys back at their defaults.
    let o = pacer.options("api").unwrap();
    assert_eq!(o.max_units_per_minute, 5000.0);
    assert_eq!(
        o.initial_units_per_minute, None,
        "unwritten: unlimited until throttled"
    );
}

#[test]
fn changes_that_need_a_restart_are_reported_not_only_logged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pacer.toml");
    write(&path, START);
    let loader = ConfigLoader::new().file(&path);
    let pacer = loader.build().unwrap();
    let mut watcher = ConfigWatcher::new(loader, pacer);
    let changed = START.replace(
        "endpoint_key = \"Global\"",
        "endpoint_key = \"Global\"\nmax_endpoints = 5\nendpoint_idle_ttl = \"1m\"",
    );
    write(
        &path,
        &format!("[adaptive_rate_limiting]\ndefault_limiter = \"other\"\n{changed}"),
    );
    let report = watcher.reload().unwrap();
    assert_eq!(
        report.needs_restart,
        ["api.MaxEndpoints", "api.EndpointIdleTtl", "DefaultLimiter"]
    );
}

#[test]
fn watching_one_file_in_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("appsettings.json");
    std::fs::write(
        &path,
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "api": { "QueueLimit": 3 } } } }"#,
    )
    .unwrap();
    let pacer = pacer_config::from_config_file(&path).unwrap();
    let handle = pacer_config::watch(&path, &pacer).unwrap();
    drop(handle); // stops and joins the thread
    assert_eq!(pacer.options("api").unwrap().queue_limit, 3);
}

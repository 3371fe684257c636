//! Bad input never passes silently: each case is a clear error naming the key or the variable,
//! or it does what it says (docs/RELIABILITY.md, "Bad input").

use crate::support::*;
use pacer_config::{ConfigLoader, ConfigWatcher, Format, ProblemKind};
use reqwest_middleware::ClientBuilder;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const P: &str = "AdaptiveRateLimiting.Limiters.x.";

fn one_limiter(body: &str) -> String {
    format!(r#"{{ "AdaptiveRateLimiting": {{ "Limiters": {{ "x": {body} }} }} }}"#)
}

// 1. Strict windows never disappear.

#[cfg(feature = "redis")]
#[test]
fn a_key_prefix_the_redis_store_would_refuse_is_refused_when_loading() {
    let long = "p".repeat(pacer_redis::MAX_PREFIX_BYTES + 1);
    for (prefix, message) in [
        ("a{b}:", r#"must not hold '{' or '}', got "a{b}:""#),
        (long.as_str(), "must be at most 64 bytes, got 65"),
    ] {
        let e = json(&one_limiter(&format!(
            r#"{{ "Windows": [ {{ "Limit": 5, "Per": "1s", "Store": "redis://127.0.0.1:6379", "KeyPrefix": "{prefix}" }} ] }}"#
        )))
        .unwrap_err();
        assert_eq!(
            lines(&e),
            [format!("{P}Windows[0].KeyPrefix = \"{prefix}\": {message}")]
        );
        // The rule is the store's own: it refuses the same prefix.
        assert!(pacer_redis::KeyFormat::new(prefix).is_err());
    }
    let exactly = "p".repeat(pacer_redis::MAX_PREFIX_BYTES);
    json(&one_limiter(&format!(
        r#"{{ "Windows": [ {{ "Limit": 5, "Per": "1s", "Store": "redis://127.0.0.1:6379", "KeyPrefix": "{exactly}" }} ] }}"#
    )))
    .unwrap();
}

#[test]
fn a_key_prefix_on_a_window_kept_in_memory_is_an_error_not_ignored() {
    let e = json(&one_limiter(
        r#"{ "Windows": [ { "Limit": 5, "Per": "1s", "KeyPrefix": "app:" } ] }"#,
    ))
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [format!(
            "{P}Windows[0].KeyPrefix = \"app:\": applies only to a window kept in Redis (Store = \"redis://…\")"
        )]
    );
}

#[test]
fn a_window_that_cannot_be_built_is_an_error_not_left_out() {
    let s = json(&one_limiter(
        r#"{ "Windows": [ { "Name": "cap", "Limit": 5, "Per": "1s" } ] }"#,
    ))
    .unwrap();
    // A window changed in code into one the store cannot build (frames 0).
    let mut limiter = s.limiter("x").unwrap().clone();
    limiter.windows[0].frames = 0;
    let e = limiter.to_limiter_config().unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Windows[0]: the window \"cap\" cannot be built: "),
        "{e}"
    );
    assert_eq!(e.problems()[0].kind, ProblemKind::OutOfRange);
    // Nor is a zero MaxExhaustedDelay set in code replaced by the default.
    let mut limiter = s.limiter("x").unwrap().clone();
    limiter.max_exhausted_delay = std::time::Duration::ZERO;
    let e = limiter.to_limiter_config().unwrap_err();
    assert!(
        e.to_string().starts_with("MaxExhaustedDelay = 0ns: "),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_with_a_window_that_would_be_dropped_is_refused_whole_and_the_window_stays() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pacer.json");
    std::fs::write(
        &path,
        one_limiter(r#"{ "MaxWait": "00:00:01", "Windows": [ { "Limit": 2, "Per": "1d" } ] }"#),
    )
    .unwrap();
    let loader = ConfigLoader::new().file(&path);
    let pacer = loader.build().unwrap();
    let mut watcher = ConfigWatcher::new(loader, pacer.clone());
    // The same window with a prefix the Redis store refuses (without the `redis` feature, a
    // Redis store is refused anyway): the reload is refused, nothing changes.
    std::fs::write(
        &path,
        one_limiter(
            r#"{ "MaxWait": "00:00:02", "Windows": [ { "Limit": 2, "Per": "1d", "Store": "redis://127.0.0.1:6379", "KeyPrefix": "a{b}:" } ] }"#,
        ),
    )
    .unwrap();
    let e = watcher.reload().unwrap_err();
    assert!(
        e.problems()[0].path.starts_with(&format!("{P}Windows[0].")),
        "{e}"
    );
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer.clone())
        .build();
    let mut sent = 0;
    for _ in 0..4 {
        if client.get(server.uri()).send().await.is_ok() {
            sent += 1;
        }
    }
    assert_eq!(sent, 2, "the running window still holds");
    assert_eq!(
        pacer.config("x").unwrap().options().max_wait,
        std::time::Duration::from_secs(1),
        "nothing of the refused file was applied"
    );
}

// 8. Watching a file that does not exist.

#[test]
fn watching_a_file_that_does_not_exist_is_an_error_naming_it() {
    let pacer = json(&one_limiter("{}")).unwrap().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.json");
    let e = pacer_config::watch(&path, &pacer).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot be watched: ", path.display())),
        "{e}"
    );
    let text_only = ConfigLoader::new().string(one_limiter("{}"), Format::Json);
    let e = ConfigWatcher::new(text_only, pacer).start().unwrap_err();
    assert_eq!(
        e.to_string(),
        "nothing to watch: the configuration loader reads no file"
    );
}

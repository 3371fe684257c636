//! Bad input never passes silently: each case is a clear error naming the key or the variable,
//! or it does what it says (docs/RELIABILITY.md, "Bad input").

use crate::support::*;
use pacer_config::{ConfigLoader, ConfigWatcher, Format, ProblemKind};
use reqwest_middleware::ClientBuilder;
use std::time::Instant;
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

// 3. An override past the end of a list.

fn with_env(
    file: &str,
    vars: &[(&str, &str)],
) -> Result<pacer_config::PacerSettings, pacer_config::ConfigError> {
    ConfigLoader::new()
        .string(file, Format::Json)
        .env_vars("PACER", vars.iter().copied())
        .load()
}

#[test]
fn an_override_past_the_end_of_a_list_is_an_error_naming_the_variable() {
    let file = one_limiter(
        r#"{ "Classifier": { "Throttled": [429] },
             "Windows": [ { "Limit": 5, "Per": "1s" } ],
             "Throttling": { "Algorithm": "Composite", "Algorithms": ["Pacing", "FixedThreshold"] } }"#,
    );
    let cases = [
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__X__CLASSIFIER__THROTTLED__2",
            "420",
            "index 2 is past the end of the list: the list has 1 item, so the next index is 1",
        ),
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__X__WINDOWS__3__LIMIT",
            "9",
            "index 3 is past the end of the list: the list has 1 item, so the next index is 1",
        ),
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__X__THROTTLING__ALGORITHMS__5",
            "None",
            "index 5 is past the end of the list: the list has 2 items, so the next index is 2",
        ),
        (
            "PACER__ADAPTIVERATELIMITING__LIMITERS__X__CLASSIFIER__THROTTLEDWHENEXHAUSTED__1",
            "409",
            "index 1 is past the end of the list: a list set here starts at index 0",
        ),
    ];
    for (var, value, message) in cases {
        let e = with_env(&file, &[(var, value)]).unwrap_err();
        assert_eq!(
            lines(&e),
            [format!(
                "{var}: {message} (an index within the list replaces that item, the next one appends)"
            )]
        );
    }
}

#[test]
fn an_override_at_the_next_index_appends_as_dotnet_binds_it() {
    let file = one_limiter(r#"{ "Classifier": { "Throttled": [429] } }"#);
    let s = with_env(
        &file,
        &[
            (
                "PACER__ADAPTIVERATELIMITING__LIMITERS__X__CLASSIFIER__THROTTLED__2",
                "421",
            ),
            (
                "PACER__ADAPTIVERATELIMITING__LIMITERS__X__CLASSIFIER__THROTTLED__1",
                "420",
            ),
            (
                "PACER__ADAPTIVERATELIMITING__LIMITERS__X__WINDOWS__0__LIMIT",
                "3",
            ),
            (
                "PACER__ADAPTIVERATELIMITING__LIMITERS__X__WINDOWS__0__PER",
                "1s",
            ),
        ],
    )
    .unwrap();
    let x = s.limiter("x").unwrap();
    let codes: Vec<u16> = x
        .classifier
        .statuses()
        .throttled
        .iter()
        .map(|c| c.as_u16())
        .collect();
    assert_eq!(codes, [429, 420, 421]);
    assert_eq!(x.windows.len(), 1);
    assert_eq!(x.windows[0].limit, 3);
}

// 7. A key written twice.

#[test]
fn a_key_written_twice_in_json_is_an_error_naming_it() {
    let e = json(&one_limiter(r#"{ "MaxWait": "5s", "MaxWait": "6s" }"#)).unwrap_err();
    assert_eq!(
        lines(&e),
        [format!("{P}MaxWait: appears twice in the same table")]
    );
    let e = json(&one_limiter(r#"{ "MaxWait": "5s", "maxwait": "6s" }"#)).unwrap_err();
    assert_eq!(
        lines(&e),
        [format!(
            "{P}maxwait: given twice, as MaxWait and as maxwait"
        )]
    );
    let e = json(
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "x": { "MaxWait": "5s" }, "x": { "MaxWait": "6s" } } } }"#,
    )
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "AdaptiveRateLimiting.Limiters.x: appears twice: a limiter of this name is already configured"
        ]
    );
    let e = json(
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "x": {} } }, "AdaptiveRateLimiting": { "Limiters": { "y": {} } } }"#,
    )
    .unwrap_err();
    assert_eq!(
        lines(&e),
        ["AdaptiveRateLimiting: appears twice in the same table"]
    );
    let e = json(&one_limiter(
        r#"{ "Windows": [ { "Limit": 5, "Limit": 6, "Per": "1s" } ] }"#,
    ))
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [format!(
            "{P}Windows[0].Limit: appears twice in the same table"
        )]
    );
    // Outside Pacer's section, the file is not Pacer's business.
    json(
        r#"{ "Logging": { "A": 1, "A": 2 }, "AdaptiveRateLimiting": { "Limiters": { "x": {} } } }"#,
    )
    .unwrap();
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

// 9. A TOML integer too large; an empty level in a variable.

#[test]
fn a_toml_integer_too_large_names_the_key_and_the_line() {
    let e = toml(
        "[adaptive_rate_limiting.limiters.x]\nmax_wait = \"5s\"\nqueue_limit = 99999999999999999999999\n",
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "configuration text: adaptive_rate_limiting.limiters.x.queue_limit at line 3, column 15: "
        ),
        "{e}"
    );
}

#[test]
fn an_empty_level_in_an_environment_variable_says_so() {
    let e = with_env(
        &one_limiter("{}"),
        &[("PACER__ADAPTIVERATELIMITING__LIMITERS____MAXWAIT", "5s")],
    )
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [
            "PACER__ADAPTIVERATELIMITING__LIMITERS____MAXWAIT: an empty level after PACER__ADAPTIVERATELIMITING__LIMITERS (two `__` in a row): levels are separated by exactly two underscores"
        ]
    );
}

// 10. Many limiters load in linear time.

#[test]
#[allow(clippy::disallowed_methods)] // the load time is printed for a release run, never asserted
fn twenty_thousand_limiters_load_in_linear_time() {
    const N: usize = 20_000;
    let mut text = String::from(r#"{ "AdaptiveRateLimiting": { "Limiters": {"#);
    for i in 0..N {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#" "api-{i}": {{ "MaxUnitsPerMinute": {} }}"#,
            1000 + i
        ));
    }
    text.push_str(" } } }");
    let started = Instant::now();
    let s = json(&text).unwrap();
    // Printed, not asserted: `cargo test --release -p pacer-config --test all twenty_thousand -- --nocapture`.
    eprintln!("loaded {N} limiters in {:?}", started.elapsed());
    assert_eq!(s.names().count(), N);
    assert_eq!(s.default_limiter(), "api-0");
    let last = s.limiter(&format!("api-{}", N - 1)).unwrap();
    assert_eq!(last.options.max_units_per_minute, (1000 + N - 1) as f64);
}

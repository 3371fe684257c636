//! The samples under `config/`: both styles load to the same limiters, and every value is read.

use crate::support::*;
use pacer_config::{
    ConfigLoader, LimiterSettings, ThrottlingSettings, from_config_file, from_config_section,
    limiter_options_from_file,
};
use pacer_core::{ControllerKind, FixedThreshold, Pacing, Percentage};
use reqwest_pacer::KeyMode;
use std::time::Duration;

#[test]
fn both_samples_load_to_identical_limiters() {
    let json = ConfigLoader::new()
        .file(sample("appsettings.json"))
        .load()
        .unwrap();
    let toml = ConfigLoader::new()
        .file(sample("pacer.toml"))
        .load()
        .unwrap();
    assert_eq!(json, toml);
    assert_eq!(
        json.names().collect::<Vec<_>>(),
        ["orders-api", "search-api"]
    );
    assert_eq!(json.default_limiter(), "orders-api");
    // What the middleware gets is the same too.
    for ((a, x), (b, y)) in json.limiters().zip(toml.limiters()) {
        assert_eq!(a, b);
        assert_eq!(
            format!("{:?}", x.to_limiter_config()),
            format!("{:?}", y.to_limiter_config())
        );
    }
}

#[test]
fn every_value_of_the_samples_is_read() {
    let s = ConfigLoader::new()
        .file(sample("appsettings.json"))
        .load()
        .unwrap();

    let orders = s.limiter("orders-api").unwrap();
    let o = &orders.options;
    assert_eq!(o.controller, ControllerKind::Aimd);
    assert_eq!(
        (
            o.initial_units_per_minute,
            o.min_units_per_minute,
            o.max_units_per_minute
        ),
        (Some(600.0), 60.0, 1200.0)
    );
    assert_eq!(o.decrease_cooldown, Duration::from_secs(5));
    assert_eq!(o.aimd.increase_step, 60.0);
    assert_eq!(o.aimd.increase_interval, Duration::from_secs(10));
    assert_eq!(o.aimd.decrease_factor, 0.7); // not given: the default
    assert_eq!(o.queue_limit, 50);
    assert_eq!(o.max_wait, Duration::from_secs(30));
    assert_eq!(o.max_concurrent.map(|n| n.get()), Some(8));
    assert_eq!(orders.max_attempts.get(), 4);
    assert_eq!(o.max_retry_after, Duration::from_secs(300));
    assert_eq!(o.pause_without_retry_after, Duration::from_secs(1)); // the default
    assert_eq!(
        orders.throttling,
        ThrottlingSettings::Percentage(
            Percentage::builder()
                .threshold(0.1)
                .factor(1.0)
                .max_delay(Duration::from_secs(5))
                .build()
                .unwrap()
        )
    );
    assert_eq!(orders.endpoint_key, KeyMode::SchemeHostPort);

    let search = s.limiter("search-api").unwrap();
    let o = &search.options;
    assert_eq!(o.controller, ControllerKind::Cubic);
    assert_eq!(o.instance_count, 2);
    assert_eq!(o.max_units_per_minute, 5625.0);
    assert_eq!(o.burst, Duration::from_secs(2));
    assert_eq!(o.quota_window, Duration::from_secs(10));
    assert_eq!(o.pause_without_retry_after, Duration::from_secs(2));
    assert_eq!(o.max_concurrent, None, "no cap: the default");
    assert_eq!((o.cubic.beta, o.cubic.scale_constant), (0.7, 0.4));
    assert_eq!(
        search.throttling,
        ThrottlingSettings::Composite(vec![
            ThrottlingSettings::Pacing(Pacing::new(2).with_min_spacing(Duration::from_millis(50))),
            ThrottlingSettings::FixedThreshold(
                FixedThreshold::new(5, Duration::from_secs(1)).unwrap()
            ),
        ])
    );
    assert_eq!(search.max_exhausted_delay, Duration::from_secs(120));
    assert_eq!(search.endpoint_key, KeyMode::HostAndFirstSegment);
    let statuses = search.classifier.statuses();
    let codes = |s: &[http::StatusCode]| s.iter().map(|c| c.as_u16()).collect::<Vec<_>>();
    assert_eq!(codes(statuses.throttled), [429]);
    assert_eq!(codes(statuses.overloaded), [503]);
    assert_eq!(codes(statuses.throttled_with_retry_after), [503, 403]);
    assert_eq!(codes(statuses.throttled_when_exhausted), [403]);
    assert_eq!(statuses.grpc_throttled, [8]);
    assert_eq!(search.max_endpoints, 1000);
    assert_eq!(search.endpoint_idle_ttl, Duration::from_secs(1800));
}

#[test]
fn one_call_from_a_file_to_a_ready_middleware() {
    for file in ["appsettings.json", "pacer.toml"] {
        let pacer = from_config_file(sample(file)).unwrap();
        assert_eq!(pacer.limiter_names(), ["orders-api", "search-api"]);
        assert_eq!(pacer.default_limiter(), "orders-api");
        assert_eq!(
            pacer.options("search-api").unwrap().controller,
            ControllerKind::Cubic
        );
        assert_eq!(
            pacer.config("search-api").unwrap().options().instance_count,
            2
        );
    }
}

#[test]
fn the_dotnet_limiter_s_example_loads_unchanged() {
    // The configuration page's example, verbatim.
    let example = r#"{ "AdaptiveRateLimiting": { "Limiters": { "orders-api": {
    "InitialUnitsPerMinute": 600, "MinUnitsPerMinute": 60, "MaxUnitsPerMinute": 1200,
    "DecreaseCooldown": "00:00:05", "Controller": "Aimd",
    "Aimd": { "IncreaseStep": 60, "IncreaseInterval": "00:00:10" } } } } }"#;
    let s = json(example).unwrap();
    let o = &s.limiter("orders-api").unwrap().options;
    assert_eq!(o.max_units_per_minute, 1200.0);
    assert_eq!(o.aimd.increase_interval, Duration::from_secs(10));
    // And the controllers page's.
    let cubic = r#"{ "AdaptiveRateLimiting": { "Limiters": { "orders-api": { "Controller": "Cubic" } } } }"#;
    let s = json(cubic).unwrap();
    assert_eq!(
        s.limiter("orders-api").unwrap().options.controller,
        ControllerKind::Cubic
    );
    let mut expected = LimiterSettings::default();
    expected.options.controller = ControllerKind::Cubic;
    assert_eq!(s.limiter("orders-api").unwrap(), &expected);
}

#[test]
fn the_simulator_gets_one_limiters_options_from_a_file() {
    let o = limiter_options_from_file(sample("pacer.toml"), None, "search-api").unwrap();
    assert_eq!(o.controller, ControllerKind::Cubic);
    assert_eq!(o.max_units_per_minute, 5625.0);
    // Names match without regard to case or separators when there is no exact match.
    let same = limiter_options_from_file(sample("appsettings.json"), None, "Search_API").unwrap();
    assert_eq!(same, o);
    let e = limiter_options_from_file(sample("appsettings.json"), None, "serch-api").unwrap_err();
    assert_eq!(
        e.to_string(),
        "AdaptiveRateLimiting.Limiters.serch-api: no such limiter; did you mean search-api?"
    );
}

#[test]
fn a_custom_section_and_the_root() {
    let nested = r#"{ "SearchApi": { "RateLimit": { "Limiters": { "search": { "MaxUnitsPerMinute": 900 } } } } }"#;
    for section in [
        "SearchApi:RateLimit",
        "SearchApi.RateLimit",
        "searchapi__ratelimit",
    ] {
        let s = ConfigLoader::new()
            .string(nested, pacer_config::Format::Json)
            .section(section)
            .load()
            .unwrap();
        assert_eq!(
            s.limiter("search").unwrap().options.max_units_per_minute,
            900.0
        );
    }
    let root = r#"{ "Limiters": { "search": {} }, "DefaultLimiter": "search" }"#;
    let s = ConfigLoader::new()
        .string(root, pacer_config::Format::Json)
        .section("")
        .load()
        .unwrap();
    assert_eq!(s.default_limiter(), "search");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.json");
    std::fs::write(&path, nested).unwrap();
    let pacer = from_config_section(&path, "SearchApi:RateLimit").unwrap();
    assert_eq!(pacer.limiter_names(), ["search"]);
}

#[test]
fn the_default_limiter_is_the_first_in_the_file_unless_named() {
    let s =
        json(r#"{ "AdaptiveRateLimiting": { "Limiters": { "zeta": {}, "alpha": {} } } }"#).unwrap();
    assert_eq!(s.names().collect::<Vec<_>>(), ["zeta", "alpha"]);
    assert_eq!(s.default_limiter(), "zeta");
    let s = json(
        r#"{ "AdaptiveRateLimiting": { "DefaultLimiter": "ALPHA", "Limiters": { "zeta": {}, "alpha": {} } } }"#,
    )
    .unwrap();
    assert_eq!(s.default_limiter(), "alpha");
    assert_eq!(s.build().unwrap().default_limiter(), "alpha");
}

#[test]
fn limiter_names_keep_their_case_and_keys_ignore_it() {
    let s = toml(
        r#"
[ADAPTIVE-RATE-LIMITING.LIMITERS.Orders-API]
MAX_UNITS_PER_MINUTE = 1200
max-wait = 10
Aimd.Increase_Step = 30
"#,
    )
    .unwrap();
    let o = &s.limiter("Orders-API").unwrap().options;
    assert_eq!(o.max_units_per_minute, 1200.0);
    assert_eq!(o.max_wait, Duration::from_secs(10));
    assert_eq!(o.aimd.increase_step, 30.0);
    assert!(s.limiter("orders-api").is_none());
}

#[test]
fn nulls_and_empty_limiters_are_the_defaults() {
    let s = json(
        r#"{ "AdaptiveRateLimiting": { "Limiters": { "a": null, "b": { "MaxWait": null } } } }"#,
    )
    .unwrap();
    assert_eq!(s.limiter("a").unwrap(), &LimiterSettings::default());
    assert_eq!(s.limiter("b").unwrap(), &LimiterSettings::default());
}

#[test]
fn throttling_shapes() {
    let read = |t: &str| {
        let text = format!(
            r#"{{ "AdaptiveRateLimiting": {{ "Limiters": {{ "a": {{ "Throttling": {t} }} }} }} }}"#
        );
        json(&text)
            .unwrap()
            .limiter("a")
            .unwrap()
            .throttling
            .clone()
    };
    assert_eq!(
        read(r#""Pacing""#),
        ThrottlingSettings::Pacing(Pacing::default())
    );
    assert_eq!(read(r#""none""#), ThrottlingSettings::None);
    assert_eq!(
        read(r#"{ "Threshold": 0.2 }"#),
        ThrottlingSettings::Percentage(Percentage::builder().threshold(0.2).build().unwrap())
    );
    assert_eq!(
        read(
            r#"{ "Algorithm": "Composite", "Algorithms": [ "Global", { "Algorithm": "Composite", "Algorithms": ["AdaptiveDelay"] } ] }"#
        ),
        ThrottlingSettings::Composite(vec![
            ThrottlingSettings::Global(Default::default()),
            ThrottlingSettings::Composite(vec![ThrottlingSettings::AdaptiveDelay(
                Default::default()
            )]),
        ])
    );
    let none =
        json(r#"{ "AdaptiveRateLimiting": { "Limiters": { "a": { "Throttling": "None" } } } }"#)
            .unwrap()
            .build()
            .unwrap();
    assert!(none.config("a").unwrap().throttling_algorithm().is_none());
}

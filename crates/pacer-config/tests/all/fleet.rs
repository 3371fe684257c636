//! A limiter's `Fleet` from configuration: read, refused when wrong, written back, and (with the
//! `redis` feature) processes built from one file forming one fleet.

use crate::support::*;
#[cfg(feature = "redis")]
use pacer_config::FleetSettings;
#[cfg(feature = "redis")]
use std::time::Duration;

const P: &str = "AdaptiveRateLimiting.Limiters.x.";

fn one_limiter(body: &str) -> String {
    format!(r#"{{ "AdaptiveRateLimiting": {{ "Limiters": {{ "x": {body} }} }} }}"#)
}

#[cfg(feature = "redis")]
#[test]
fn a_fleet_is_read_with_its_options_and_written_back() {
    let settings = json(&one_limiter(
        r#"{ "Fleet": { "Store": "redis://:pw@127.0.0.1:6379", "KeyPrefix": "orders:", "Period": "00:00:00.1", "Lease": "00:00:01" } }"#,
    ))
    .unwrap();
    let fleet = settings.limiter("x").unwrap().fleet.clone().unwrap();
    let mut want = FleetSettings::new("redis://:pw@127.0.0.1:6379");
    want.key_prefix = Some("orders:".to_owned());
    want.options.period = Duration::from_millis(100);
    want.options.lease = Duration::from_secs(1);
    assert_eq!(fleet, want);
    // Written back (serde), it reads as the same settings.
    let text = serde_json::to_string(&settings).unwrap();
    let back: pacer_config::PacerSettings = serde_json::from_str(&text).unwrap();
    assert_eq!(back, settings, "{text}");
    // No fleet unless one is configured.
    let none = json(&one_limiter("{}")).unwrap();
    assert_eq!(none.limiter("x").unwrap().fleet, None);
}

#[test]
fn a_fleet_without_a_redis_store_or_with_options_out_of_range_is_refused() {
    for (body, want) in [
        (
            r#"{ "Fleet": { "Period": "00:00:01" } }"#,
            format!("{P}Fleet.Store: a fleet needs its store, a Redis URL"),
        ),
        (
            r#"{ "Fleet": { "Store": "Memory" } }"#,
            format!(
                "{P}Fleet.Store: expected a Redis URL (redis://… or rediss://…): a fleet is shared through Redis"
            ),
        ),
    ] {
        let e = json(&one_limiter(body)).unwrap_err();
        assert_eq!(lines(&e), [want], "{body}");
    }
    #[cfg(feature = "redis")]
    {
        let e = json(&one_limiter(
            r#"{ "Fleet": { "Store": "redis://127.0.0.1:6379", "Period": "00:00:01", "Lease": "00:00:01" } }"#,
        ))
        .unwrap_err();
        assert_eq!(
            lines(&e),
            [format!(
                "{P}Fleet.Lease = \"00:00:01\": must be at least twice Period (1s)"
            )]
        );
    }
    // A misspelt key is named, with what was meant.
    let e = json(&one_limiter(
        r#"{ "Fleet": { "Store": "redis://127.0.0.1:6379", "Perod": "00:00:01" } }"#,
    ))
    .unwrap_err();
    let text = lines(&e).join("\n");
    assert!(
        text.contains("Fleet.Perod") && text.contains("Period"),
        "{text}"
    );
}

#[test]
fn a_store_that_is_not_a_url_is_refused_without_repeating_it() {
    let e = json(&one_limiter(
        r#"{ "Fleet": { "Store": "s3cret-password" } }"#,
    ))
    .unwrap_err();
    assert!(!e.to_string().contains("s3cret"), "{e}");
}

#[cfg(not(feature = "redis"))]
#[test]
fn a_fleet_without_the_redis_feature_is_refused_naming_it() {
    let e = json(&one_limiter(
        r#"{ "Fleet": { "Store": "redis://127.0.0.1:6379" } }"#,
    ))
    .unwrap_err();
    assert_eq!(
        lines(&e),
        [format!(
            "{P}Fleet.Store: a fleet is kept in Redis, which needs Pacer's `redis` feature"
        )]
    );
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_built_from_one_file_are_one_fleet() {
    use pacer_core::{Clock, RealClock};
    use reqwest_middleware::ClientBuilder;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let api = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&api)
        .await;
    let prefix = pacer_redis::testing::unique_prefix();
    let config = one_limiter(&format!(
        r#"{{ "Fleet": {{ "Store": "{}", "KeyPrefix": "{prefix}", "Period": "00:00:00.05", "Lease": "00:00:00.5" }} }}"#,
        pacer_redis::testing::url()
    ));
    let processes: Vec<_> = (0..2)
        .map(|_| json(&config).unwrap().build().unwrap())
        .collect();
    for pacer in &processes {
        let client = ClientBuilder::new(reqwest::Client::new())
            .with(pacer.clone())
            .build();
        client.get(api.uri()).send().await.unwrap();
    }
    let url: reqwest::Url = api.uri().parse().unwrap();
    let key = format!("http://{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let count = |i: usize| {
        processes[i]
            .state("x", &key)
            .unwrap()
            .limiter
            .map_or(0, |s| s.instance_count)
    };
    let clock = RealClock::new();
    let start = clock.now();
    while !(count(0) == 2 && count(1) == 2) && clock.now() - start < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!((count(0), count(1)), (2, 2), "one fleet of two");
}

#[cfg(feature = "redis")]
#[test]
fn a_fleet_reads_from_toml_as_the_guide_writes_it() {
    let settings = toml(
        r#"
        [adaptive_rate_limiting.limiters.orders-api.fleet]
        store = "redis://redis.internal:6379"
        period = "250ms"
        "#,
    )
    .unwrap();
    let fleet = settings
        .limiter("orders-api")
        .unwrap()
        .fleet
        .clone()
        .unwrap();
    assert_eq!(fleet, FleetSettings::new("redis://redis.internal:6379"));
}

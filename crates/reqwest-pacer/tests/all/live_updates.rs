use crate::support::*;
use pacer_core::LimiterOptions;
use reqwest_pacer::{KeyMode, LimiterConfig, UpdateError};

#[tokio::test]
async fn new_options_clamp_every_endpoints_rate_and_invalid_ones_change_nothing() {
    let server = answering_ok().await;
    let pacer = pacer(generous());
    client(&pacer).get(server.uri()).send().await.unwrap();
    let endpoint = crate::retry_after::endpoint(&server);
    let rate = |p: &reqwest_pacer::PacerMiddleware| {
        p.state("api", &endpoint).unwrap().limiter.unwrap().rate
    };
    assert_eq!(rate(&pacer), 60_000.0);

    let mut lower = generous();
    lower.max_units_per_minute = 1200.0;
    lower.initial_units_per_minute = Some(1200.0);
    pacer.update_options("api", lower.clone()).unwrap();
    assert_eq!(rate(&pacer), 1200.0);
    assert_eq!(pacer.options("api").unwrap(), lower);

    let mut bad = LimiterOptions::default();
    bad.min_units_per_minute = 0.0;
    let err = pacer.update_options("api", bad).unwrap_err();
    assert!(matches!(err, UpdateError::Invalid(_)));
    assert_eq!(
        err.to_string(),
        "MinUnitsPerMinute = 0: must be greater than 0"
    );
    assert_eq!(pacer.options("api").unwrap(), lower);
    assert!(matches!(
        pacer.update_options("nope", generous()),
        Err(UpdateError::Limiter(_))
    ));
}

#[tokio::test]
async fn a_new_config_applies_to_the_next_request() {
    let server = answering_ok().await;
    let pacer = pacer(generous());
    client(&pacer)
        .get(format!("{}/a/1", server.uri()))
        .send()
        .await
        .unwrap();
    pacer
        .update_config(
            "api",
            LimiterConfig::new(generous()).endpoint_key(KeyMode::Global),
        )
        .unwrap();
    client(&pacer)
        .get(format!("{}/a/2", server.uri()))
        .send()
        .await
        .unwrap();
    let endpoints = pacer.endpoints("api").unwrap();
    assert_eq!(endpoints.len(), 2);
    assert!(endpoints.contains(&"*".to_owned()));
    assert!(
        pacer
            .config("api")
            .unwrap()
            .throttling_algorithm()
            .is_some()
    );
}

//! Layers in a fleet: layers (and a middleware) of one name share one learned rate through a
//! fleet store, on the real clock (the members' sync tasks run on tokio's timer).

use crate::support::{hyper_client, serve};
use bytes::Bytes;
use http_body_util::Full;
use pacer_core::{Clock, FleetOptions, FleetStore, LimiterOptions, MemoryFleetStore, RealClock};
use std::sync::Arc;
use std::time::Duration;
use tower_layer::Layer;
use tower_pacer::PacerLayer;
use tower_service::Service;

fn fleet_options() -> FleetOptions {
    let mut fleet = FleetOptions::default();
    fleet.period = Duration::from_millis(50);
    fleet.lease = Duration::from_millis(500);
    fleet
}

fn options() -> LimiterOptions {
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(60_000.0);
    options.max_units_per_minute = 600_000.0;
    options
}

/// Waits (in real time, at most 10 s) until `done` holds.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let clock = RealClock::new();
    let start = clock.now();
    while clock.now() - start < Duration::from_secs(10) {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// One GET of `base` through a service of `layer`, answered 200.
async fn get_through(layer: &PacerLayer, base: &str) {
    let mut service = layer.layer(hyper_client());
    let request = http::Request::get(format!("{base}/items"))
        .body(Full::<Bytes>::default())
        .unwrap();
    assert_eq!(service.call(request).await.unwrap().status(), 200);
}

/// The members `layer`'s endpoint `base` counts (0 before its first request).
fn members(layer: &PacerLayer, base: &str) -> u32 {
    layer.limiter(base).map_or(0, |s| s.instance_count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_layers_and_a_middleware_of_one_name_are_one_fleet() {
    let base = serve(vec![(200, vec![])]).await;
    let store: Arc<dyn FleetStore> = Arc::new(MemoryFleetStore::new(RealClock::new()));
    let layer = || {
        PacerLayer::builder(options())
            .name("api")
            .fleet(Arc::clone(&store), fleet_options())
            .build()
            .unwrap()
    };
    let (a, b) = (layer(), layer());
    let middleware = reqwest_pacer::PacerMiddleware::builder()
        .limiter(
            "api",
            reqwest_pacer::LimiterConfig::new(options()).fleet(Arc::clone(&store), fleet_options()),
        )
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware.clone())
        .build();
    for layer in [&a, &b] {
        get_through(layer, &base).await;
    }
    client.get(format!("{base}/items")).send().await.unwrap();

    let count = |layer: &PacerLayer| members(layer, &base);
    let middleware_count = || {
        middleware
            .state("api", &base)
            .unwrap()
            .limiter
            .map_or(0, |s| s.instance_count)
    };
    assert!(
        eventually(|| count(&a) == 3 && count(&b) == 3 && middleware_count() == 3).await,
        "one fleet of three: {} {} {}",
        count(&a),
        count(&b),
        middleware_count()
    );
    // All three ask little: each takes a third of the fleet's 60,000 (to within 1 %, what
    // their demands moved since the split).
    let rate = |layer: &PacerLayer| layer.limiter(&base).map_or(0.0, |s| s.rate);
    let near = |x: f64| (x - 20_000.0).abs() < 200.0;
    assert!(
        eventually(|| near(rate(&a)) && near(rate(&b))).await,
        "{} {}",
        rate(&a),
        rate(&b)
    );

    // A layer dropped leaves when its lease ends: the others count two.
    drop(a);
    assert!(
        eventually(|| count(&b) == 2 && middleware_count() == 2).await,
        "{} {}",
        count(&b),
        middleware_count()
    );
}

/// A limiter's `Fleet` from a configuration comes with the layer: two layers built from one
/// file (against the test Redis) are one fleet; a fleet the build cannot make (a key prefix set
/// in code that the store refuses) is refused, never left out.
#[cfg(feature = "config")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layers_from_one_configuration_with_a_fleet_are_one_fleet() {
    use pacer_config::{ConfigLoader, Format};
    let base = serve(vec![(200, vec![])]).await;
    let toml = format!(
        r#"
        [adaptive_rate_limiting.limiters.api.fleet]
        store = "{}"
        key_prefix = "{}"
        period = "50ms"
        lease = "500ms"
        "#,
        pacer_redis::testing::url(),
        pacer_redis::testing::unique_prefix()
    );
    let settings = ConfigLoader::new()
        .string(&toml, Format::Toml)
        .load()
        .unwrap();
    let limiter = settings.limiter("api").unwrap();
    let layer = || {
        PacerLayer::from_settings(limiter)
            .unwrap()
            .name("api")
            .build()
            .unwrap()
    };
    let (a, b) = (layer(), layer());
    for layer in [&a, &b] {
        get_through(layer, &base).await;
    }
    let count = |layer: &PacerLayer| members(layer, &base);
    assert!(
        eventually(|| count(&a) == 2 && count(&b) == 2).await,
        "one fleet of two: {} {}",
        count(&a),
        count(&b)
    );

    let mut bad = limiter.clone();
    bad.fleet.as_mut().unwrap().key_prefix = Some("a{b}:".to_owned());
    let err = PacerLayer::from_settings(&bad).unwrap_err();
    assert!(matches!(err, tower_pacer::SettingsError::Fleet(_)), "{err}");
}

/// A fleet's options are held to the rules a configuration file's are: an absurd one is refused
/// by `build`, named.
#[test]
fn fleet_options_out_of_range_are_refused_by_build() {
    let mut options = pacer_core::FleetOptions::default();
    options.lease = std::time::Duration::from_secs(10_000_000 * 86_400);
    let store = std::sync::Arc::new(pacer_core::MemoryFleetStore::new(
        pacer_core::RealClock::new(),
    ));
    let e = tower_pacer::PacerLayer::builder(pacer_core::LimiterOptions::default())
        .fleet(store, options)
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("Fleet.Lease"), "{e}");
    assert!(e.contains("must be at most 3600s"), "{e}");
}

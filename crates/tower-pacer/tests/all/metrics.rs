//! The layer records the middleware's metrics, labelled with its name only.

use crate::support::{hyper_client, serve};
use bytes::Bytes;
use http_body_util::Full;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use pacer_core::LimiterOptions;
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use tower_layer::Layer;
use tower_pacer::PacerLayer;
use tower_service::Service;

// The test records into its own `DebuggingRecorder`, set as the test thread's recorder (a
// current-thread runtime, so every task of the test records there).

#[tokio::test]
async fn the_layer_records_the_middleware_s_series_labelled_with_its_name() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let base = serve(vec![(429, vec![("retry-after", "0")]), (200, vec![])]).await;
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(6_000.0);
    options.queue_limit = 0;
    // The throttle's `Retry-After: 0` is then taken at its word: retried at once, not paused.
    options.pause_without_retry_after = std::time::Duration::ZERO;
    let layer = PacerLayer::builder(options)
        .name("observed")
        .max_attempts(NonZeroU32::new(2).unwrap())
        .build()
        .unwrap();
    let mut service = layer.layer(hyper_client());
    let request = || {
        http::Request::get(format!("{base}/items?token=secret"))
            .body(Full::<Bytes>::default())
            .unwrap()
    };
    let response = service.call(request()).await.unwrap();
    assert_eq!(response.status(), 200, "the throttle was retried");

    let mut seen = BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let labels: Vec<(String, String)> = key
            .key()
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .collect();
        if !labels
            .iter()
            .any(|(k, v)| k == "limiter" && v == "observed")
        {
            continue;
        }
        // The limiter's name, and a model's kind (one of three): nothing from the request.
        assert!(
            labels.iter().all(|(k, v)| k == "limiter"
                || (k == "kind" && ["sliding", "fixed", "bucket"].contains(&v.as_str()))),
            "only the limiter's name: {labels:?}"
        );
        let value = match value {
            DebugValue::Counter(c) => c as f64,
            DebugValue::Gauge(g) => g.into_inner(),
            DebugValue::Histogram(h) => h.len() as f64,
        };
        seen.insert(key.key().name().to_owned(), value);
    }
    assert_eq!(seen.get("pacer_units_total"), Some(&2.0), "{seen:?}");
    assert_eq!(seen.get("pacer_throttled_total"), Some(&1.0), "{seen:?}");
    assert_eq!(
        seen.get("pacer_wait_seconds"),
        Some(&2.0),
        "one per attempt: {seen:?}"
    );
    assert!(seen.get("pacer_rate").is_some_and(|v| *v > 0.0), "{seen:?}");
    assert_eq!(seen.get("pacer_waiting_requests"), Some(&0.0), "{seen:?}");
    assert_eq!(
        seen.get("pacer_server_model_changes_total"),
        Some(&1.0),
        "the throttle gave the endpoint its first model of the server: {seen:?}"
    );
}

#[tokio::test]
async fn a_refusal_is_counted_with_its_reason() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let base = serve(vec![(429, vec![("retry-after", "600")])]).await;
    let mut options = LimiterOptions::default();
    options.max_retry_after = std::time::Duration::from_secs(3600);
    let layer = PacerLayer::builder(options)
        .name("refusing")
        .max_attempts(NonZeroU32::MIN)
        .build()
        .unwrap();
    let mut service = layer.layer(hyper_client());
    let request = || {
        http::Request::get(format!("{base}/items"))
            .body(Full::<Bytes>::default())
            .unwrap()
    };
    assert_eq!(service.call(request()).await.unwrap().status(), 429);
    assert!(
        service.call(request()).await.is_err(),
        "refused: the stop is past MaxWait"
    );
    let reasons: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, _, _, _)| key.key().name() == "pacer_rejected_total")
        .filter_map(|(key, _, _, value)| {
            let reason = key
                .key()
                .labels()
                .find(|l| l.key() == "reason")?
                .value()
                .to_owned();
            match value {
                DebugValue::Counter(c) => Some((reason, c)),
                _ => None,
            }
        })
        .collect();
    assert_eq!(reasons, [("wait_too_long:server_stop".to_owned(), 1)]);
}

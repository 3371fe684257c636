use crate::retry_after::endpoint;
use crate::support::*;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::io::Write;
use std::sync::{Arc, Mutex};

// Each test records into its own `DebuggingRecorder`, set as the test thread's recorder (the
// tests run on a current-thread runtime, so every task of theirs records there). A snapshot
// drains what it reads, counters and gauges alike, so one recorder shared by the tests of this
// binary let a test's snapshot take another's values.

#[tokio::test]
async fn metrics_are_labelled_with_the_limiter_name_only() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let (server, _script) = scripted(vec![throttled("0"), ok()]).await;
    let mut options = fixed_rate(60.0);
    options.queue_limit = 0;
    let pacer = PacerMiddleware::builder()
        .limiter("observed", LimiterConfig::new(options))
        .build()
        .unwrap();
    let client = client(&pacer);
    // The first attempt is throttled and retried once the bucket allows; the next request finds
    // the queue closed.
    let _ = client
        .get(format!("{}/a?token=x", server.uri()))
        .send()
        .await;
    let _ = client
        .get(format!("{}/b?token=y", server.uri()))
        .send()
        .await;

    let mut seen = std::collections::BTreeMap::new();
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
        for (k, v) in &labels {
            assert!(
                k == "limiter"
                    || (k == "reason" && !v.contains('/'))
                    || (k == "kind" && ["sliding", "fixed", "bucket"].contains(&v.as_str())),
                "label {k}={v}"
            );
        }
        let value = match value {
            DebugValue::Counter(c) => c as f64,
            DebugValue::Gauge(g) => g.into_inner(),
            DebugValue::Histogram(h) => h.len() as f64,
        };
        seen.insert(key.key().name().to_owned(), value);
    }
    assert!(
        seen.get("pacer_units_total").is_some_and(|v| *v >= 1.0),
        "{seen:?}"
    );
    assert_eq!(seen.get("pacer_throttled_total"), Some(&1.0), "{seen:?}");
    assert!(
        seen.get("pacer_rejected_total").is_some_and(|v| *v >= 1.0),
        "{seen:?}"
    );
    assert!(seen.contains_key("pacer_wait_seconds"));
    assert!(seen.get("pacer_rate").is_some_and(|v| *v > 0.0));
    assert_eq!(seen.get("pacer_waiting_requests"), Some(&0.0));
    // The throttle gave the endpoint its first model of the server.
    assert_eq!(
        seen.get("pacer_server_model_changes_total"),
        Some(&1.0),
        "{seen:?}"
    );
}

/// The value of `name` labelled with `limiter`, if it has one.
fn gauge(snapshotter: &Snapshotter, name: &str, limiter: &str) -> Option<f64> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .find(|(key, _, _, _)| {
            key.key().name() == name
                && key
                    .key()
                    .labels()
                    .any(|l| l.key() == "limiter" && l.value() == limiter)
        })
        .and_then(|(_, _, _, value)| match value {
            DebugValue::Gauge(g) => Some(g.into_inner()),
            _ => None,
        })
}

#[tokio::test]
async fn a_request_counts_as_waiting_only_while_it_waits() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = &recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let server = answering_ok().await;
    // One unit a second and a bucket of one: the first request goes at once, the second waits.
    let pacer = PacerMiddleware::builder()
        .limiter("waiting-gauge", LimiterConfig::new(fixed_rate(60.0)))
        .build()
        .unwrap();
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap();
    assert_eq!(
        gauge(snapshotter, "pacer_waiting_requests", "waiting-gauge").unwrap_or(0.0),
        0.0,
        "a request that went at once never waited"
    );
    let second = tokio::spawn({
        let (client, uri) = (client.clone(), server.uri());
        async move { client.get(uri).send().await.unwrap().status() }
    });
    // The second request is waiting for its unit: the gauge says so until it goes.
    let mut seen = 0.0;
    for _ in 0..200 {
        seen = gauge(snapshotter, "pacer_waiting_requests", "waiting-gauge").unwrap_or(0.0);
        if seen > 0.0 || second.is_finished() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(seen, 1.0, "the waiting request was counted");
    assert_eq!(second.await.unwrap(), 200);
    assert_eq!(
        gauge(snapshotter, "pacer_waiting_requests", "waiting-gauge"),
        Some(0.0)
    );
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn no_secret_reaches_the_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (server, _script) = scripted(vec![throttled("0"), ok()]).await;
    let pacer = pacer(generous());
    let response = client(&pacer)
        .get(format!(
            "{}/orders/7?api_key=SECRET-QUERY&x=1",
            server.uri()
        ))
        .header("authorization", "Bearer SECRET-TOKEN")
        .basic_auth("user", Some("SECRET-PASSWORD"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("pacer"), "the run logged: {logs}");
    assert!(logs.contains("rate changed"), "{logs}");
    for secret in ["SECRET", "api_key", "/orders/7", "authorization", "Bearer"] {
        assert!(
            !logs.contains(secret),
            "{secret} leaked into the logs:\n{logs}"
        );
    }
}

#[tokio::test]
async fn metrics_reach_a_recorder_installed_after_the_first_request() {
    let server = answering_ok().await;
    let pacer = PacerMiddleware::builder()
        .limiter("late", LimiterConfig::new(generous()))
        .build()
        .unwrap();
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap();

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    client.get(server.uri()).send().await.unwrap();
    client.get(server.uri()).send().await.unwrap();

    let units: u64 = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "pacer_units_total")
        .filter(|(key, ..)| key.key().labels().any(|l| l.value() == "late"))
        .map(|(.., value)| match value {
            DebugValue::Counter(c) => c,
            _ => 0,
        })
        .sum();
    assert_eq!(
        units, 2,
        "the two requests sent after the recorder was installed"
    );
}

/// With the library's defaults an endpoint holds nothing back until its first throttle: the
/// rate gauge has no series until then (it read `MaxUnitsPerMinute`, 1e9, before, and kept it
/// after the first throttle too), then the rate the endpoint is held to.
#[tokio::test]
async fn the_rate_gauge_shows_only_what_an_endpoint_is_held_to() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = &recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let (server, _script) = scripted(vec![ok(), ok(), throttled("0"), ok()]).await;
    let pacer = PacerMiddleware::builder()
        .limiter("held", LimiterConfig::default())
        .build()
        .unwrap();
    let client = client(&pacer);
    for _ in 0..2 {
        client.get(server.uri()).send().await.unwrap();
    }
    assert_eq!(
        gauge(snapshotter, "pacer_rate", "held"),
        None,
        "nothing is held yet"
    );
    // A throttle (retried): the endpoint is held to a rate from now on.
    client.get(server.uri()).send().await.unwrap();
    let state = pacer.state("held", &endpoint(&server)).unwrap();
    let rate = state.limiter.unwrap().rate;
    assert!(rate < 1e6, "{rate}");
    assert_eq!(gauge(snapshotter, "pacer_rate", "held"), Some(rate));
}

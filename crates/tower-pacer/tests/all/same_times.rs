//! A hyper client through `PacerLayer` and a reqwest client through `PacerMiddleware`, with the
//! same options and rules, against servers that answer the same script: they send the same
//! requests at the same times, each on its own manual clock.

use crate::support::{Answer, BodyAnswer, drive, recorded, serve, serve_bodies, since_origin};
use bytes::Bytes;
use http::Extensions;
use http_body_util::Full;
use pacer_core::{LimiterOptions, ManualClock};
use reqwest_middleware::{ClientBuilder, Middleware, Next};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_pacer::PacerLayer;
use tower_service::Service;

/// The script: rate-limit fields running low (the proactive delay), a throttle with a
/// `Retry-After` (the stop, the cut, the retry), a bare throttle, then plenty.
fn script() -> Vec<Answer> {
    let fields = |remaining| {
        vec![
            ("x-ratelimit-limit", "20"),
            ("x-ratelimit-remaining", remaining),
            ("x-ratelimit-reset", "20"),
        ]
    };
    vec![
        (200, vec![]),
        (200, fields("12")),
        (200, fields("3")),
        (200, fields("1")),
        (429, vec![("retry-after", "3")]),
        (200, fields("15")),
        (429, vec![]),
        (200, fields("18")),
        (200, fields("19")),
        (200, vec![]),
    ]
}

fn options() -> LimiterOptions {
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(120.0);
    options.max_wait = Duration::from_secs(60);
    options
}

/// A throttled request is sent 3 times in all, on both sides.
fn three() -> NonZeroU32 {
    NonZeroU32::new(3).unwrap()
}

/// Notes the clock's time as the middleware chain sends a request.
struct RecordSend {
    clock: ManualClock,
    sent: Arc<Mutex<Vec<Duration>>>,
}

#[async_trait::async_trait]
impl Middleware for RecordSend {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        self.sent.lock().unwrap().push(since_origin(&self.clock));
        next.run(req, extensions).await
    }
}

const REQUESTS: usize = 8;

/// The user request `i` is sent for (an `x-user` header): two users in turn.
fn user(i: usize) -> &'static str {
    ["ada", "bob"][i % 2]
}

/// What the caller got: the status, and what Pacer said it did (`Paced`: the attempts, the
/// time waited, the rate at the last send).
type Answered = (u16, Option<(u32, Duration, f64)>);

fn answered(status: http::StatusCode, extensions: &http::Extensions) -> Answered {
    let paced = extensions
        .get::<tower_pacer::Paced>()
        .map(|p| (p.attempts(), p.waited(), p.rate()));
    (status.as_u16(), paced)
}

/// What the caller got ([`Answered`]) and the times the requests were sent, through the middleware
/// `make` builds on a clock.
async fn through_the_middleware(
    make: impl FnOnce(&ManualClock) -> PacerMiddleware,
) -> (Vec<Answered>, Vec<Duration>) {
    middleware_against(serve(script()).await, make).await
}

/// [`through_the_middleware`] against the server at `base`.
async fn middleware_against(
    base: String,
    make: impl FnOnce(&ManualClock) -> PacerMiddleware,
) -> (Vec<Answered>, Vec<Duration>) {
    let clock = ManualClock::new();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let pacer = make(&clock);
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .with(RecordSend {
            clock: clock.clone(),
            sent: Arc::clone(&sent),
        })
        .build();
    let mut statuses = Vec::new();
    for i in 0..REQUESTS {
        let request = client
            .get(format!("{base}/items"))
            .header("x-user", user(i));
        let response = drive(&clock, request.send()).await.unwrap();
        statuses.push(answered(response.status(), response.extensions()));
    }
    let sent = sent.lock().unwrap().clone();
    (statuses, sent)
}

/// The same through the layer `make` builds on a clock.
async fn through_the_layer(
    make: impl FnOnce(&ManualClock) -> PacerLayer,
) -> (Vec<Answered>, Vec<Duration>) {
    layer_against(serve(script()).await, make).await
}

/// [`through_the_layer`] against the server at `base`.
async fn layer_against(
    base: String,
    make: impl FnOnce(&ManualClock) -> PacerLayer,
) -> (Vec<Answered>, Vec<Duration>) {
    let clock = ManualClock::new();
    let layer = make(&clock);
    let (mut service, sent) = recorded(&layer, &clock);
    let mut statuses = Vec::new();
    for i in 0..REQUESTS {
        let request = http::Request::get(format!("{base}/items"))
            .header("x-user", user(i))
            .body(Full::<Bytes>::default())
            .unwrap();
        let response = drive(&clock, service.call(request)).await.unwrap();
        statuses.push(answered(response.status(), response.extensions()));
    }
    let sent = sent.lock().unwrap().clone();
    (statuses, sent)
}

#[tokio::test]
async fn the_layer_and_the_middleware_send_the_same_requests_at_the_same_times() {
    let (middleware_statuses, middleware_sent) = through_the_middleware(|clock| {
        PacerMiddleware::builder()
            .limiter(
                "default",
                LimiterConfig::new(options()).max_attempts(three()),
            )
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    let (layer_statuses, layer_sent) = through_the_layer(|clock| {
        PacerLayer::builder(options())
            .max_attempts(three())
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    assert_eq!(layer_statuses, middleware_statuses);
    assert_eq!(layer_sent, middleware_sent);
    // The script was played through: two throttles retried (10 sends for 8 requests), and the
    // waits it asks for happened.
    assert_eq!(layer_sent.len(), REQUESTS + 2, "{layer_sent:?}");
    assert!(
        layer_statuses.iter().all(|s| s.0 == 200 && s.1.is_some()),
        "{layer_statuses:?}"
    );
    let retry_after = layer_sent[5] - layer_sent[4];
    assert!(
        retry_after >= Duration::from_secs(3),
        "the retry waited for the Retry-After: {layer_sent:?}"
    );
}

/// The same from one configuration: the middleware from `PacerSettings::builder`, the layer from
/// `PacerLayer::from_settings`, with settings that differ from the defaults (the `Pacing`
/// algorithm, keys by host, an initial rate).
#[cfg(feature = "config")]
#[tokio::test]
async fn one_configuration_gives_the_layer_and_the_middleware_the_same_times() {
    use pacer_config::{ConfigLoader, Format};
    let toml = r#"
    [adaptive_rate_limiting.limiters.api]
    initial_units_per_minute = 90
    max_attempts = 3
    max_wait = "60s"
    endpoint_key = "Host"
    throttling = { algorithm = "Pacing", reserve = 4 }
    "#;
    let settings = ConfigLoader::new()
        .string(toml, Format::Toml)
        .load()
        .unwrap();
    let (middleware_statuses, middleware_sent) = through_the_middleware(|clock| {
        settings
            .builder()
            .unwrap()
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    let (layer_statuses, layer_sent) = through_the_layer(|clock| {
        PacerLayer::from_settings(settings.limiter("api").unwrap())
            .unwrap()
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    assert_eq!(layer_statuses, middleware_statuses);
    assert_eq!(layer_sent, middleware_sent);
    assert_eq!(layer_sent.len(), REQUESTS + 2, "{layer_sent:?}");
}

/// A strict window from a configuration comes with the layer; one the build cannot make (set in
/// code with no possible geometry) is refused, never left out.
#[cfg(feature = "config")]
#[test]
fn a_configured_window_comes_with_the_layer_and_one_that_cannot_be_built_is_refused() {
    use pacer_config::{ConfigLoader, Format};
    let toml = r#"
    [[adaptive_rate_limiting.limiters.api.windows]]
    name = "per-minute"
    limit = 30
    per = "1m"
    "#;
    let settings = ConfigLoader::new()
        .string(toml, Format::Toml)
        .load()
        .unwrap();
    let layer = PacerLayer::from_settings(settings.limiter("api").unwrap())
        .unwrap()
        .build()
        .unwrap();
    let windows: Vec<(&str, u64)> = layer
        .windows()
        .iter()
        .map(|w| (w.name(), w.limit()))
        .collect();
    assert_eq!(windows, [("per-minute", 30)]);
    // A window set in code that loading would have refused: no geometry holds it.
    let mut settings = settings.limiter("api").unwrap().clone();
    settings.windows[0].per = Duration::ZERO;
    let err = PacerLayer::from_settings(&settings).unwrap_err();
    assert!(
        matches!(&err, tower_pacer::SettingsError::Window { name, .. } if name == "per-minute"),
        "{err}"
    );
}

/// A strict window of `limit` units per 2 s, in memory on `clock`.
fn per_two_seconds(name: &str, limit: u64, clock: &ManualClock) -> pacer_core::WindowLimit {
    let store = pacer_core::MemoryWindowStore::new(clock.clone());
    pacer_core::WindowLimit::new(name.to_owned(), limit, Duration::from_secs(2), store).unwrap()
}

/// With a strict window on both sides (each in memory on its own clock), the layer and the
/// middleware still send the same requests at the same times.
#[tokio::test]
async fn with_a_strict_window_the_layer_and_the_middleware_send_at_the_same_times() {
    let window = |clock: &ManualClock| per_two_seconds("four-per-two-seconds", 4, clock);
    let (middleware_statuses, middleware_sent) = through_the_middleware(|clock| {
        PacerMiddleware::builder()
            .limiter(
                "default",
                LimiterConfig::new(options())
                    .max_attempts(three())
                    .window(window(clock).into()),
            )
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    let (layer_statuses, layer_sent) = through_the_layer(|clock| {
        PacerLayer::builder(options())
            .max_attempts(three())
            .window(window(clock))
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    assert_eq!(layer_statuses, middleware_statuses);
    assert_eq!(layer_sent, middleware_sent);
    // The window spaced them: no five sends within two seconds.
    for i in 4..layer_sent.len() {
        assert!(
            layer_sent[i] - layer_sent[i - 4] >= Duration::from_secs(2),
            "{layer_sent:?}"
        );
    }
}

/// Shopify's GraphQL answers: a bucket of 1,000 points, 50 back a second, queries of 200
/// points, draining, one refused (`THROTTLED`, with a 200), then room again.
fn graphql_script() -> Vec<BodyAnswer> {
    let answer = |available: u64, throttled: bool| {
        let head = if throttled {
            r#""errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]"#
        } else {
            r#""data":{"shop":{"name":"a"}}"#
        };
        let body = format!(
            r#"{{{head},"extensions":{{"cost":{{"requestedQueryCost":200,"actualQueryCost":null,"throttleStatus":{{"maximumAvailable":1000.0,"currentlyAvailable":{available},"restoreRate":50.0}}}}}}}}"#
        );
        (200, "application/json", body)
    };
    vec![
        answer(800, false),
        answer(600, false),
        answer(350, false),
        answer(150, true),
        answer(200, false),
        answer(300, false),
        answer(500, false),
        answer(700, false),
        answer(900, false),
    ]
}

#[tokio::test]
async fn the_layer_and_the_middleware_read_a_graphql_cost_the_same_way() {
    let (middleware_statuses, middleware_sent) =
        middleware_against(serve_bodies(graphql_script()).await, |clock| {
            PacerMiddleware::builder()
                .limiter(
                    "default",
                    LimiterConfig::new(options())
                        .max_attempts(three())
                        .query_cost(true),
                )
                .clock(Arc::new(clock.clone()))
                .build()
                .unwrap()
        })
        .await;
    let (layer_statuses, layer_sent) =
        layer_against(serve_bodies(graphql_script()).await, |clock| {
            PacerLayer::builder(options())
                .rules(
                    pacer_core::Rules::default()
                        .with_max_attempts(three())
                        .with_query_cost(true),
                )
                .clock(Arc::new(clock.clone()))
                .build()
                .unwrap()
        })
        .await;
    assert_eq!(layer_statuses, middleware_statuses);
    assert_eq!(layer_sent, middleware_sent);
    // The refusal was retried once its 50 missing points were back (1 s).
    assert_eq!(layer_sent.len(), REQUESTS + 1, "{layer_sent:?}");
    assert!(
        layer_sent[4] - layer_sent[3] >= Duration::from_secs(1),
        "{layer_sent:?}"
    );
}

#[tokio::test]
async fn a_window_keyed_by_user_counts_each_user_apart_in_both_drivers() {
    let window = |clock: &ManualClock| per_two_seconds("two-per-two-seconds", 2, clock);
    let (middleware_statuses, middleware_sent) = through_the_middleware(|clock| {
        let by_user = reqwest_pacer::StrictWindow::from(window(clock)).keyed_by(|r| {
            let user = r.headers().get("x-user")?.to_str().ok()?;
            Some(user.to_owned())
        });
        PacerMiddleware::builder()
            .limiter(
                "default",
                LimiterConfig::new(options())
                    .max_attempts(three())
                    .window(by_user),
            )
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    let (layer_statuses, layer_sent) = through_the_layer(|clock| {
        PacerLayer::builder(options())
            .max_attempts(three())
            .window_keyed_by(window(clock), |_, _, headers| {
                let user = headers.get("x-user")?.to_str().ok()?;
                Some(user.to_owned())
            })
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    assert_eq!(layer_statuses, middleware_statuses);
    assert_eq!(layer_sent, middleware_sent);
    // One window for both users is slower: the keyed one counts each user apart.
    let (_, shared_sent) = through_the_layer(|clock| {
        PacerLayer::builder(options())
            .max_attempts(three())
            .window(window(clock))
            .clock(Arc::new(clock.clone()))
            .build()
            .unwrap()
    })
    .await;
    assert!(
        layer_sent.last() < shared_sent.last(),
        "keyed {layer_sent:?}, shared {shared_sent:?}"
    );
}

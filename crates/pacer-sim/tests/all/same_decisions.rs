//! `compare`'s driver (`ExchangeClient`, on virtual time) and the reqwest middleware (on a
//! manual clock), with the same options and rules, answered by the same script: they send the
//! same attempts at the same times, retry the same ones, and refuse the same ones. (The tower
//! layer makes the same decisions as the middleware: tower-pacer's `tests/all/same_times.rs`.)

use http::{Extensions, HeaderMap, StatusCode};
use pacer_core::{Clock, LimiterOptions, ManualClock, Rules, Timestamp};
use pacer_sim::{Answered, ExchangeClient, Settled};
use reqwest_middleware::{ClientBuilder, Middleware, Next};
use reqwest_pacer::{LimiterConfig, PacerMiddleware};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Answer = (u16, Vec<(&'static str, &'static str)>);

/// Rate-limit fields running low (the proactive delay), a throttle with a `Retry-After` (the
/// stop, the cut, the retry), a bare throttle, a long stop past `MaxWait` (a refusal), then
/// plenty.
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
        (429, vec![("retry-after", "90")]),
        (200, fields("19")),
        (200, vec![]),
        (200, vec![]),
    ]
}

const REQUESTS: u32 = 10;

fn options() -> LimiterOptions {
    let mut options = LimiterOptions::default();
    options.initial_units_per_minute = Some(120.0);
    options.max_wait = Duration::from_secs(60);
    options
}

fn three() -> NonZeroU32 {
    NonZeroU32::new(3).unwrap()
}

fn headers(fields: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in fields {
        map.insert(*name, value.parse().unwrap());
    }
    map
}

/// What happened to each request: its sends (times from the start) and the status the caller
/// got (`None`: refused before any send; a refused retry hands back the last answer).
type Trace = Vec<(Vec<Duration>, Option<u16>)>;

/// The end of the middleware chain: notes the time of each send and answers from the script.
struct Scripted {
    clock: ManualClock,
    script: Mutex<std::vec::IntoIter<Answer>>,
    sent: Arc<Mutex<Vec<Duration>>>,
}

#[async_trait::async_trait]
impl Middleware for Scripted {
    async fn handle(
        &self,
        _req: reqwest::Request,
        _extensions: &mut Extensions,
        _next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        self.sent
            .lock()
            .unwrap()
            .push(self.clock.now().as_duration());
        let (status, fields) = self.script.lock().unwrap().next().expect("scripted");
        let mut answer = http::Response::builder().status(status);
        for (name, value) in fields {
            answer = answer.header(name, value);
        }
        Ok(reqwest::Response::from(answer.body("").unwrap()))
    }
}

async fn through_the_middleware() -> Trace {
    let clock = ManualClock::new();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let pacer = PacerMiddleware::builder()
        .limiter(
            "default",
            LimiterConfig::new(options()).max_attempts(three()),
        )
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(pacer)
        .with(Scripted {
            clock: clock.clone(),
            script: Mutex::new(script().into_iter()),
            sent: Arc::clone(&sent),
        })
        .build();
    let mut trace = Vec::new();
    for _ in 0..REQUESTS {
        let before = sent.lock().unwrap().len();
        let result = clock
            .drive(client.get("http://api.test/items").send())
            .await;
        let sends = sent.lock().unwrap()[before..].to_vec();
        let status = result.ok().map(|response| response.status().as_u16());
        trace.push((sends, status));
    }
    trace
}

fn through_compare_s_driver() -> Trace {
    let rules = Rules::default().with_max_attempts(three());
    let mut client = ExchangeClient::new(options(), rules, None, None, Timestamp::ZERO).unwrap();
    let mut script = script().into_iter();
    let mut now = Timestamp::ZERO;
    let mut trace = Vec::new();
    for request in 0..REQUESTS {
        let mut sends = Vec::new();
        let mut last = None;
        client.begin(request, 1, now);
        let status = loop {
            let mut settled = client.settle(now);
            while settled.is_empty() {
                now = client.next_at().expect("a wait due");
                settled = client.settle(now);
            }
            match settled[..] {
                [(r, Settled::Go { .. })] if r == request => {}
                [(r, Settled::Refused)] if r == request => break last,
                _ => panic!("{settled:?}"),
            }
            sends.push(now.as_duration());
            let (code, fields) = script.next().expect("scripted");
            last = Some(code);
            let status = StatusCode::from_u16(code).unwrap();
            match client.answered_with(request, status, &headers(&fields), None, now) {
                Answered::Retry => client.begin(request, 1, now),
                Answered::Done => break last,
            }
        };
        trace.push((sends, status));
    }
    trace
}

#[tokio::test]
async fn compare_s_driver_and_the_middleware_make_the_same_decisions() {
    let middleware = through_the_middleware().await;
    let compare = through_compare_s_driver();
    assert_eq!(compare, middleware);
    // The script was played through: two throttles retried and answered, a stop past MaxWait
    // whose retry was refused (its 429 handed back), the requests after it refused unsent.
    let has = |sends: usize, status: Option<u16>| {
        compare
            .iter()
            .any(|(s, st)| s.len() == sends && *st == status)
    };
    assert!(has(2, Some(200)), "{compare:?}");
    assert!(has(1, Some(429)), "{compare:?}");
    assert!(has(0, None), "{compare:?}");
}

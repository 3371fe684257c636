use crate::support::*;
use pacer_core::{ControllerKind, LimiterOptions};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A server with a hidden quota: at most `limit` accepted requests in any sliding `window`;
/// over it, 429 with `Retry-After: 1`.
#[derive(Clone)]
pub(crate) struct Quota {
    limit: usize,
    window: Duration,
    accepted: Arc<parking_lot::Mutex<VecDeque<Instant>>>,
    pub(crate) throttled: Arc<AtomicUsize>,
    pub(crate) ok: Arc<AtomicUsize>,
}

impl Quota {
    pub(crate) fn new(limit: usize, window: Duration) -> Self {
        Quota {
            limit,
            window,
            accepted: Arc::default(),
            throttled: Arc::default(),
            ok: Arc::default(),
        }
    }
}

impl Respond for Quota {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let now = Instant::now();
        let mut accepted = self.accepted.lock();
        while accepted.front().is_some_and(|t| now - *t >= self.window) {
            accepted.pop_front();
        }
        if accepted.len() >= self.limit {
            self.throttled.fetch_add(1, Ordering::SeqCst);
            return ResponseTemplate::new(429).insert_header("retry-after", "1");
        }
        accepted.push_back(now);
        self.ok.fetch_add(1, Ordering::SeqCst);
        ResponseTemplate::new(200)
    }
}

#[tokio::test]
async fn a_hundred_concurrent_tasks_against_one_quota_all_end_in_a_response() {
    let server = MockServer::start().await;
    let quota = Quota::new(30, Duration::from_secs(1));
    Mock::given(method("GET"))
        .respond_with(quota.clone())
        .mount(&server)
        .await;
    // AIMD: a quota of one second is not the Pacer controller's minute (`QuotaWindow`).
    let mut o = LimiterOptions::default();
    o.controller = ControllerKind::Aimd;
    o.initial_units_per_minute = Some(1200.0);
    o.min_units_per_minute = 60.0;
    o.max_units_per_minute = 6000.0;
    o.max_wait = Duration::from_secs(60);
    let pacer = pacer(o);
    let client = client(&pacer);
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let client = client.clone();
            let url = server.uri();
            tokio::spawn(async move { client.get(url).send().await.map(|r| r.status().as_u16()) })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap().expect("no task fails"));
    }
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert_eq!(quota.ok.load(Ordering::SeqCst), 100);
    let endpoint = crate::retry_after::endpoint(&server);
    let s = pacer.state("api", &endpoint).unwrap().limiter.unwrap();
    assert_eq!(
        s.stats.throttled as usize,
        quota.throttled.load(Ordering::SeqCst)
    );
    assert!(
        quota.throttled.load(Ordering::SeqCst) < 100,
        "the limiter slowed down: {} throttles",
        quota.throttled.load(Ordering::SeqCst)
    );
    assert_eq!(s.queue_len, 0);
}

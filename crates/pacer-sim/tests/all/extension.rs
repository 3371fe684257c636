//! The extension points: a mode of one's own plugs in without touching the engine, including the
//! `headers` hook and a controller of one's own.

use crate::short;
use pacer_core::{
    Acquired, Changes, PureController, RateController, RateControllerState, RejectReason, Ticket,
    Timestamp,
};
use pacer_sim::model::{Arrivals, Verdict};
use pacer_sim::{
    Client, ClientSetup, LimiterMode, Mode, ModeError, Response, Story, compare, mode_by_name,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A mode that refuses every request, recording what it was asked, and checks what it is told.
#[derive(Debug, Default)]
struct Recording {
    name: &'static str,
    headers: bool,
    asked: Arc<Mutex<Vec<(u32, Timestamp, u64)>>>,
}

#[derive(Debug)]
struct RecordingClient {
    instance: u32,
    asked: Arc<Mutex<Vec<(u32, Timestamp, u64)>>>,
}

impl Mode for Recording {
    fn name(&self) -> &str {
        self.name
    }

    fn client(&self, setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError> {
        Ok(Box::new(RecordingClient {
            instance: setup.instance,
            asked: Arc::clone(&self.asked),
        }))
    }

    fn wants_headers(&self) -> bool {
        self.headers
    }
}

impl Client for RecordingClient {
    fn acquire(&mut self, units: u64, now: Timestamp) -> Result<Acquired, RejectReason> {
        self.asked.lock().unwrap().push((self.instance, now, units));
        Err(RejectReason::QueueFull { limit: 0 })
    }
    fn pop_ready(&mut self, _now: Timestamp) -> Option<(Ticket, Duration)> {
        None
    }
    fn next_grant_at(&mut self, _now: Timestamp) -> Option<Timestamp> {
        None
    }
    fn on_response(&mut self, _response: &Response, _now: Timestamp) -> Changes {
        Changes::default()
    }
    fn retry_delay(&self, retry_after: Duration) -> Duration {
        retry_after
    }
    fn set_instance_count(&mut self, _count: u32, _now: Timestamp) -> Changes {
        Changes::default()
    }
    fn rate(&self) -> Option<f64> {
        None
    }
}

#[test]
fn every_mode_is_asked_for_the_same_requests_at_the_same_times() {
    let options = short(6);
    let story = Story::by_name("scale-out").unwrap();
    let a = Recording {
        name: "a",
        ..Recording::default()
    };
    let b = Recording {
        name: "b",
        ..Recording::default()
    };
    let (asked_a, asked_b) = (Arc::clone(&a.asked), Arc::clone(&b.asked));
    let modes: Vec<Box<dyn Mode>> = vec![Box::new(a), Box::new(b)];
    let c = compare(&options, std::slice::from_ref(&story), &modes).unwrap();
    assert_eq!(c.rows[0].metrics.rejected, c.rows[0].metrics.requests);
    let expected: Vec<_> = Arrivals::generate(&options, &story)
        .requests
        .iter()
        .map(|r| (r.instance, r.at, r.units))
        .collect();
    assert_eq!(*asked_a.lock().unwrap(), expected);
    assert_eq!(*asked_b.lock().unwrap(), expected);
}

/// The header fields each response carried.
type Seen = Arc<Mutex<Vec<[(&'static str, String); 2]>>>;

/// A limiter client that checks the API's headers arrive with every response.
#[derive(Debug)]
struct HeaderChecking {
    inner: Box<dyn Client>,
    seen: Seen,
}

impl Client for HeaderChecking {
    fn acquire(&mut self, units: u64, now: Timestamp) -> Result<Acquired, RejectReason> {
        self.inner.acquire(units, now)
    }
    fn pop_ready(&mut self, now: Timestamp) -> Option<(Ticket, Duration)> {
        self.inner.pop_ready(now)
    }
    fn next_grant_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        self.inner.next_grant_at(now)
    }
    fn hold(&mut self, now: Timestamp) -> Result<Duration, RejectReason> {
        self.inner.hold(now)
    }
    fn sent(&mut self, now: Timestamp) {
        self.inner.sent(now);
    }
    fn on_response(&mut self, response: &Response, now: Timestamp) -> Changes {
        let h = response.headers.expect("headers when the mode wants them");
        if let Verdict::Throttled { .. } = response.verdict {
            assert!(h.remaining < response.units, "a 429 means it did not fit");
        }
        self.seen.lock().unwrap().push(h.draft11_fields());
        self.inner.on_response(response, now)
    }
    fn retry_delay(&self, retry_after: Duration) -> Duration {
        self.inner.retry_delay(retry_after)
    }
    fn set_instance_count(&mut self, count: u32, now: Timestamp) -> Changes {
        self.inner.set_instance_count(count, now)
    }
    fn rate(&self) -> Option<f64> {
        self.inner.rate()
    }
}

#[derive(Debug, Default)]
struct HeadersHook {
    seen: Seen,
}

impl Mode for HeadersHook {
    fn name(&self) -> &str {
        "headers-hook"
    }
    fn client(&self, setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError> {
        // No limiter: it spends the window to 0, which a limiter would not (every limiter mode
        // follows the fields it is sent).
        Ok(Box::new(HeaderChecking {
            inner: mode_by_name("none")?.client(setup)?,
            seen: Arc::clone(&self.seen),
        }))
    }
    fn wants_headers(&self) -> bool {
        true
    }
}

#[test]
fn a_mode_that_wants_headers_gets_draft_11_fields_with_every_response() {
    let hook = HeadersHook::default();
    let seen = Arc::clone(&hook.seen);
    let modes: Vec<Box<dyn Mode>> = vec![Box::new(hook)];
    let c = compare(&short(4), &[Story::by_name("free-run").unwrap()], &modes).unwrap();
    let seen = seen.lock().unwrap();
    assert!(seen.len() as u64 >= c.rows[0].metrics.succeeded);
    assert!(
        seen.iter()
            .all(|[(p, pv), (r, rv)]| *p == "RateLimit-Policy"
                && pv == "\"default\";q=3000;w=60"
                && *r == "RateLimit"
                && rv.starts_with("\"default\";r="))
    );
    assert!(
        seen.iter()
            .any(|[_, (_, rv)]| rv.starts_with("\"default\";r=0;"))
    );
}

/// The .NET adaptive limiter's `StepController`: halve on a throttle, +30 per 30 s while requests wait.
#[derive(Debug)]
struct Step;

impl RateController for Step {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        (state.rate / 2.0).max(state.min_rate)
    }
    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        (state.waited && state.since_last_increase >= Duration::from_secs(30))
            .then(|| state.rate + 300.0 / f64::from(state.instance_count))
    }
}

#[test]
fn a_controller_of_one_s_own_runs_as_a_mode() {
    let modes: Vec<Box<dyn Mode>> = vec![
        Box::new(LimiterMode::with_controller("step", || {
            Box::new(PureController::new(Step))
        })),
        mode_by_name("aimd").unwrap(),
    ];
    let c = compare(&short(10), &[Story::by_name("free-run").unwrap()], &modes).unwrap();
    assert_eq!(c.rows[0].mode, "step");
    let step = &c.rows[0];
    assert!(step.metrics.throughput > 1500.0);
    assert_ne!(
        step.metrics, c.rows[1].metrics,
        "not AIMD under another name"
    );
}

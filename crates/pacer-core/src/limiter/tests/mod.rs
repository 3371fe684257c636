//! The limiter's rules, each on manual time: the bucket and the queue (`queue`), the cap on
//! requests in flight (`concurrency`), the cost bound (`cost`), and how responses, pauses and
//! new options move the rate (`feedback`). The helpers are here.

mod concurrency;
mod controllers;
mod cost;
mod feedback;
mod memory;
mod priority;
mod queue;
mod unthrottled;

use super::*;
use crate::controller::{PureController, RateController, RateControllerState};
use crate::{ControllerKind, RejectReason, Timestamp, WaitCause};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn ms(ms: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_millis(ms)
}

fn secs(s: u64) -> Timestamp {
    Timestamp::ZERO + Duration::from_secs(s)
}

/// 600 units/min = 10 units/s; a 1 s burst holds 10 units, with AIMD. (The shell's tests use
/// it too.)
pub(super) fn options() -> LimiterOptions {
    LimiterOptions {
        controller: ControllerKind::Aimd,
        initial_units_per_minute: Some(600.0),
        min_units_per_minute: 60.0,
        max_units_per_minute: 1200.0,
        ..LimiterOptions::default()
    }
}

fn core(o: LimiterOptions) -> LimiterCore {
    LimiterCore::new(o, Timestamp::ZERO).unwrap()
}

fn success(sent_at: Timestamp) -> Feedback {
    Feedback {
        units: 1,
        sent_at,
        signal: Signal::Success,
    }
}

fn throttled(sent_at: Timestamp, retry_after: Option<Duration>) -> Feedback {
    Feedback {
        units: 1,
        sent_at,
        signal: Signal::Throttled { retry_after },
    }
}

fn queued(a: Result<Acquired, RejectReason>) -> (Ticket, Timestamp) {
    match a {
        Ok(Acquired::Queued {
            ticket,
            estimated_at,
        }) => (ticket, estimated_at),
        other => panic!("expected a queued request, got {other:?}"),
    }
}

/// Records every state the limiter hands its controller, and answers as told.
#[derive(Debug, Clone, Default)]
struct Recorder {
    seen: Seen,
    on_success: Option<f64>,
    on_throttled: f64,
}

/// What a [`Recorder`] saw: each call's name and the state it was given.
type Seen = Arc<Mutex<Vec<(&'static str, RateControllerState)>>>;

impl Recorder {
    /// A limiter with [`options`] and this recorder as its controller, and what it will see.
    fn limiter(self) -> (LimiterCore, Seen) {
        let seen = Arc::clone(&self.seen);
        let core = LimiterCore::with_controller(
            options(),
            Box::new(PureController::new(self)),
            Timestamp::ZERO,
        )
        .unwrap();
        (core, seen)
    }
}

impl RateController for Recorder {
    fn on_throttled(&mut self, state: &RateControllerState) -> f64 {
        self.seen.lock().unwrap().push(("throttled", *state));
        self.on_throttled
    }

    fn on_success(&mut self, state: &RateControllerState) -> Option<f64> {
        self.seen.lock().unwrap().push(("success", *state));
        self.on_success
    }
}

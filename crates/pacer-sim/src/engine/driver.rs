//! The discrete-event loop: one run of one mode through one story on virtual time.
//!
//! Time jumps from event to event; nothing sleeps and no clock is read. The events are the
//! requests' arrivals (a sorted list, the same for every mode), and on the agenda: a limiter's
//! grant coming due ([`Client::next_grant_at`]), a response coming back after its latency, a
//! Retry-After sleep ending, and instances joining. Each instance's attempts go through its own
//! client (a real `LimiterCore` in the limiter modes): every attempt asks for its units again.

use super::events::{Agenda, EventKind};
use super::recorder::Recorder;
use crate::SimOptions;
use crate::metrics::{RunMetrics, Series};
use crate::model::{Arrivals, ModelApi, Request, Story, Verdict, latency};
use crate::modes::{Client, ClientSetup, Mode, ModeError, NO_RETRY_AFTER_DELAY, Response};
use pacer_core::{Acquired, Changes, Ticket, Timestamp};
use std::collections::HashMap;
use std::time::Duration;

/// The shortest step the engine takes when a limiter says a grant is due now but has none ready
/// (it never should; this only keeps a float rounding from spinning the loop).
const NUDGE: Duration = Duration::from_micros(1);

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// The row of the comparison.
    pub metrics: RunMetrics,
    /// The second-by-second record, for the plot.
    pub series: Series,
}

#[derive(Debug, Clone, Copy)]
struct Attempt {
    request: u32,
    attempt: u32,
}

struct Engine<'a> {
    options: &'a SimOptions,
    story: &'a Story,
    requests: &'a [Request],
    mode: &'a dyn Mode,
    wants_headers: bool,
    max_attempts: u32,
    api: ModelApi,
    clients: Vec<Box<dyn Client>>,
    /// Attempts waiting in each instance's queue, by ticket.
    waiting: Vec<HashMap<Ticket, Attempt>>,
    /// The time of each instance's latest scheduled grant; older grant events are stale.
    armed: Vec<Option<Timestamp>>,
    agenda: Agenda,
    recorder: Recorder,
}

/// Runs `mode` through `story` on the demand `arrivals`.
pub fn run(
    options: &SimOptions,
    story: &Story,
    arrivals: &Arrivals,
    mode: &dyn Mode,
) -> Result<RunResult, ModeError> {
    let seconds = options.duration().as_secs() as usize;
    let mut engine = Engine {
        options,
        story,
        requests: &arrivals.requests,
        mode,
        wants_headers: mode.wants_headers(),
        max_attempts: options.max_attempts.get(),
        api: ModelApi::with_shape(options.quota, story.clone(), options.window, options.server),
        clients: Vec::new(),
        waiting: Vec::new(),
        armed: Vec::new(),
        agenda: Agenda::default(),
        recorder: Recorder::new(seconds),
    };
    engine.add_instances(options.instances, Timestamp::ZERO)?;
    for join in &story.joins {
        engine.agenda.push(
            Timestamp::from_duration(join.at),
            EventKind::Join {
                instances: join.instances,
            },
        );
    }
    engine.run_until(Timestamp::from_duration(options.duration()), seconds)?;
    let (metrics, series) = engine.recorder.finish(
        arrivals.requests.len() as u64,
        options.minutes,
        story.quota_drop(),
    );
    Ok(RunResult { metrics, series })
}

impl Engine<'_> {
    fn run_until(&mut self, end: Timestamp, seconds: usize) -> Result<(), ModeError> {
        let mut next_request = 0;
        let mut next_second = 0;
        loop {
            let event_at = self.agenda.next_at();
            let arrival_at = self.requests.get(next_request).map(|r| r.at);
            let at = match (event_at, arrival_at) {
                (Some(e), Some(a)) => e.min(a),
                (Some(t), None) | (None, Some(t)) => t,
                (None, None) => break,
            };
            if at >= end {
                break;
            }
            while next_second < seconds && Timestamp::from_secs_f64(next_second as f64) <= at {
                self.sample(next_second);
                next_second += 1;
            }
            // On a tie the agenda goes first: a response or a join at `t` before an arrival at `t`.
            if event_at.is_some_and(|e| arrival_at.is_none_or(|a| e <= a)) {
                let (now, kind) = self.agenda.pop().expect("peeked");
                self.handle(now, kind)?;
            } else {
                let r = self.requests[next_request];
                next_request += 1;
                self.ask(r.instance, r.id, 1, r.at);
            }
        }
        while next_second < seconds {
            self.sample(next_second);
            next_second += 1;
        }
        Ok(())
    }

    fn sample(&mut self, second: usize) {
        let rate = self
            .clients
            .iter()
            .filter_map(|c| c.rate())
            .fold(None, |sum: Option<f64>, r| Some(sum.unwrap_or(0.0) + r));
        let quota = self.story.available_quota(
            self.options.quota as f64,
            Duration::from_secs(second as u64),
        );
        self.recorder.sample(second, rate, quota);
    }

    fn handle(&mut self, now: Timestamp, kind: EventKind) -> Result<(), ModeError> {
        match kind {
            EventKind::Grant { instance } => self.grant(instance, now),
            EventKind::Response {
                instance,
                request,
                attempt,
                sent_at,
                verdict,
                headers,
            } => {
                let units = self.requests[request as usize].units;
                let response = Response {
                    units,
                    sent_at,
                    verdict,
                    headers,
                };
                let changes = self.clients[instance as usize].on_response(&response, now);
                self.apply(instance, changes);
                match verdict {
                    Verdict::Accepted => self.recorder.succeeded(),
                    Verdict::Throttled { .. } if attempt >= self.max_attempts => {
                        self.recorder.gave_up();
                    }
                    Verdict::Throttled { retry_after } => {
                        let delay = self.clients[instance as usize]
                            .retry_delay(retry_after.unwrap_or(NO_RETRY_AFTER_DELAY));
                        if delay.is_zero() {
                            self.ask(instance, request, attempt + 1, now);
                        } else {
                            let next = EventKind::Retry {
                                instance,
                                request,
                                attempt: attempt + 1,
                            };
                            self.agenda.push(now + delay, next);
                        }
                    }
                }
                self.arm(instance, now, now);
            }
            EventKind::Retry {
                instance,
                request,
                attempt,
            } => self.ask(instance, request, attempt, now),
            EventKind::Held {
                instance,
                request,
                attempt,
            } => self.queue(instance, request, attempt, now),
            EventKind::Join { instances } => self.add_instances(instances, now)?,
        }
        Ok(())
    }

    /// An attempt asks its instance's client what holds it back, then for units.
    fn ask(&mut self, instance: u32, request: u32, attempt: u32, now: Timestamp) {
        match self.clients[instance as usize].hold(now) {
            Ok(wait) if wait.is_zero() => self.queue(instance, request, attempt, now),
            Ok(wait) => {
                let held = EventKind::Held {
                    instance,
                    request,
                    attempt,
                };
                self.agenda.push(now + wait, held);
            }
            Err(_) => self.recorder.rejected(),
        }
    }

    /// An attempt asks its instance's client for units.
    fn queue(&mut self, instance: u32, request: u32, attempt: u32, now: Timestamp) {
        let units = self.requests[request as usize].units;
        match self.clients[instance as usize].acquire(units, now) {
            Ok(Acquired::Now) => self.send(instance, request, attempt, now, Duration::ZERO),
            Ok(Acquired::Queued { ticket, .. }) => {
                self.waiting[instance as usize].insert(ticket, Attempt { request, attempt });
                self.arm(instance, now, now);
            }
            Err(_) => self.recorder.rejected(),
        }
    }

    /// Sends an attempt: the API decides at once; the response comes back after the latency.
    fn send(
        &mut self,
        instance: u32,
        request: u32,
        attempt: u32,
        now: Timestamp,
        waited: Duration,
    ) {
        let units = self.requests[request as usize].units;
        self.clients[instance as usize].sent(now);
        self.recorder.sent(waited);
        let verdict = self.api.offer(units, now);
        match verdict {
            Verdict::Accepted => self.recorder.accepted(units, now),
            Verdict::Throttled { .. } => self.recorder.throttled(now),
        }
        let headers = self.wants_headers.then(|| self.api.headers(now));
        let back = now + latency(self.options.seed, request, attempt);
        self.agenda.push(
            back,
            EventKind::Response {
                instance,
                request,
                attempt,
                sent_at: now,
                verdict,
                headers,
            },
        );
    }

    /// A scheduled grant: send every waiting attempt whose units are there.
    fn grant(&mut self, instance: u32, now: Timestamp) {
        let i = instance as usize;
        if self.armed[i] != Some(now) {
            return; // A later arm superseded this event.
        }
        self.armed[i] = None;
        let mut granted = false;
        while let Some((ticket, waited)) = self.clients[i].pop_ready(now) {
            granted = true;
            if let Some(a) = self.waiting[i].remove(&ticket) {
                self.send(instance, a.request, a.attempt, now, waited);
            }
        }
        let earliest = if granted { now } else { now + NUDGE };
        self.arm(instance, now, earliest);
    }

    /// Schedules the instance's next grant, no earlier than `earliest`.
    fn arm(&mut self, instance: u32, now: Timestamp, earliest: Timestamp) {
        let i = instance as usize;
        let Some(at) = self.clients[i].next_grant_at(now) else {
            self.armed[i] = None;
            return;
        };
        let at = at.max(earliest);
        if self.armed[i] != Some(at) {
            self.armed[i] = Some(at);
            self.agenda.push(at, EventKind::Grant { instance });
        }
    }

    /// Counts the attempts a change refused from the queue.
    fn apply(&mut self, instance: u32, changes: Changes) {
        for (ticket, _) in changes.rejected {
            if self.waiting[instance as usize].remove(&ticket).is_some() {
                self.recorder.rejected();
            }
        }
    }

    /// Starts `count` more instances and tells every existing client the new total.
    fn add_instances(&mut self, count: u32, now: Timestamp) -> Result<(), ModeError> {
        let before = self.clients.len() as u32;
        let total = before + count;
        for instance in 0..before {
            let changes = self.clients[instance as usize].set_instance_count(total, now);
            self.apply(instance, changes);
            self.arm(instance, now, now);
        }
        let mut limiter = self.options.limiter.clone();
        limiter.instance_count = total;
        for instance in before..total {
            let setup = ClientSetup {
                instance,
                limiter: limiter.clone(),
                now,
            };
            self.clients.push(self.mode.client(&setup)?);
            self.waiting.push(HashMap::new());
            self.armed.push(None);
        }
        Ok(())
    }
}

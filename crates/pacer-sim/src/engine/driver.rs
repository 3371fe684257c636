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
use crate::metrics::{Identified, RunMetrics, Series};
use crate::model::{Arrivals, ModelApi, Request, Story, Verdict, latency};
use crate::modes::{
    Answered, Client, ClientSetup, Mode, ModeError, NO_RETRY_AFTER_DELAY, Response, Settled,
};
use pacer_core::{Acquired, Changes, MemoryFleetStore, RealClock, Ticket, Timestamp};
use std::collections::HashMap;
use std::time::Duration;

mod fleet_calls;

/// The shortest step the engine takes when a limiter says a grant is due now but has none ready
/// (it never should; this only keeps a float rounding from spinning the loop).
const NUDGE: Duration = Duration::from_micros(1);

/// The time a fleet member's call takes to reach the store, and the answer to come back: a
/// Redis in the same region, half a millisecond each way.
pub const STORE_LATENCY: Duration = Duration::from_micros(500);

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
    /// The time of each instance's latest scheduled wake; older ones are stale.
    woken: Vec<Option<Timestamp>>,
    /// Instances that stopped (scale-in): they make no more store calls.
    stopped: Vec<bool>,
    /// What the instances that stopped learnt, in order, for the ones that take their places
    /// (`SimOptions::restore`).
    remembered: Vec<Option<pacer_core::LimiterMemory>>,
    /// The fleets' store, for the modes whose instances share one.
    store: MemoryFleetStore,
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
        wants_headers: mode.wants_headers() && options.server.sends_fields(),
        max_attempts: options.max_attempts.get(),
        api: ModelApi::with_shape(
            options.quota,
            Story {
                retry_after: story.retry_after && options.sends_retry_after,
                ..story.clone()
            },
            options.window,
            options.server,
        )
        .with_phase(options.phase),
        clients: Vec::new(),
        waiting: Vec::new(),
        armed: Vec::new(),
        woken: Vec::new(),
        stopped: Vec::new(),
        remembered: Vec::new(),
        store: MemoryFleetStore::new(RealClock::new()),
        agenda: Agenda::default(),
        recorder: Recorder::new(seconds),
    };
    engine.add_instances(options.instances, Timestamp::ZERO)?;
    // A story's counts are instances, or multiples of `--instances` (`per_base`).
    let scaled = |n: u32| {
        if story.per_base {
            n * options.instances
        } else {
            n
        }
    };
    for join in &story.joins {
        engine.agenda.push(
            Timestamp::from_duration(join.at),
            EventKind::Join {
                instances: scaled(join.instances),
            },
        );
    }
    for leave in &story.leaves {
        engine.agenda.push(
            Timestamp::from_duration(leave.at),
            EventKind::Leave {
                instances: scaled(leave.instances),
            },
        );
    }
    engine.run_until(Timestamp::from_duration(options.duration()), seconds)?;
    // The instances there from the start that never stopped.
    let whole_run: Vec<u32> = (0..options.instances)
        .filter(|&i| !engine.stopped.get(i as usize).copied().unwrap_or(true))
        .collect();
    let learned = engine
        .clients
        .first()
        .map(|c| c.learned())
        .unwrap_or_default();
    let (mut metrics, series) = engine.recorder.finish(
        arrivals.requests.len() as u64,
        options.minutes,
        story.quota_drop(),
        &whole_run,
    );
    metrics.identified = learned.now.as_ref().map(Identified::from);
    metrics.identified_by_fifth = learned.by_fifth.as_ref().map(Identified::from);
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
        // The instances running: a stopped one's limiter still holds its last rate.
        let rate = self
            .clients
            .iter()
            .zip(&self.stopped)
            .filter(|&(_, &stopped)| !stopped)
            .filter_map(|(c, _)| c.rate())
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
            EventKind::Arrive {
                instance,
                request,
                attempt,
                sent_at,
                back,
            } => self.arrive(instance, request, attempt, sent_at, back, now),
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
                if let Some(client) = self.clients[instance as usize].exchanges() {
                    let answered = client.answered(request, &response, now);
                    match (answered, verdict) {
                        (Answered::Retry, _) => self.ask(instance, request, attempt + 1, now),
                        (Answered::Done, Verdict::Accepted) => self.recorder.succeeded(),
                        (Answered::Done, Verdict::Throttled { .. }) => self.recorder.gave_up(),
                    }
                    self.arm(instance, now, now);
                    return Ok(());
                }
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
                self.arm_wake(instance, now);
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
            EventKind::Drawn {
                instance,
                request,
                attempt,
            } => self.drawn(instance, request, attempt, now),
            EventKind::Join { instances } => self.add_instances(instances, now)?,
            EventKind::Leave { .. } => {
                // The process is gone: what waited in its limiter is never sent, and it makes no
                // more store calls (its fleet lease runs out).
                let at = now.as_duration();
                for instance in 0..self.clients.len() {
                    if self.story.stop_of(self.options.instances, instance as u32) == Some(at) {
                        // What it learnt, for the process that takes its place (`--restore`).
                        if self.options.restore {
                            self.remembered.push(self.clients[instance].memory());
                        }
                        self.stopped[instance] = true;
                        for _ in self.waiting[instance].drain() {
                            self.recorder.rejected();
                        }
                        if let Some(client) = self.clients[instance].exchanges() {
                            for _ in 0..client.stop() {
                                self.recorder.rejected();
                            }
                        }
                        self.armed[instance] = None;
                    }
                }
            }
            EventKind::Wake { instance } => self.wake(instance, now),
            EventKind::News { instance } => {
                if !self.stopped[instance as usize] {
                    self.clients[instance as usize].on_news(now);
                    self.arm_wake(instance, now);
                }
            }
            EventKind::StoreCall {
                instance,
                call,
                sent,
            } => self.store_call(instance, call, sent, now),
            EventKind::StoreAnswer {
                instance,
                answer,
                sent,
            } => {
                let (changes, next) = self.clients[instance as usize].on_store(answer, sent, now);
                self.apply(instance, changes);
                if let Some(call) = next {
                    self.call_store(instance, call, now);
                }
                self.arm(instance, now, now);
                self.arm_wake(instance, now);
            }
        }
        Ok(())
    }

    /// An attempt asks its instance's client what holds it back, then for units; a client
    /// that runs the engine's exchanges begins the attempt's wait.
    fn ask(&mut self, instance: u32, request: u32, attempt: u32, now: Timestamp) {
        let units = self.requests[request as usize].units;
        if self.stopped[instance as usize] {
            self.recorder.rejected();
        } else if let Some(client) = self.clients[instance as usize].exchanges() {
            client.begin(request, units, now);
            self.arm(instance, now, now);
        } else {
            self.after_hold(instance, request, attempt, now, Self::queue);
        }
    }

    /// What the instance's client holds an attempt for first (refused if it is longer than
    /// the attempt may wait; a retry of a process that is gone is refused too), then `next`.
    fn after_hold(
        &mut self,
        instance: u32,
        request: u32,
        attempt: u32,
        now: Timestamp,
        next: fn(&mut Self, u32, u32, u32, Timestamp),
    ) {
        if self.stopped[instance as usize] {
            self.recorder.rejected();
            return;
        }
        match self.clients[instance as usize].hold(now) {
            Ok(wait) if wait.is_zero() => next(self, instance, request, attempt, now),
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

    /// An attempt asks its instance's own limiter for units.
    fn acquire(&mut self, instance: u32, request: u32, attempt: u32, now: Timestamp) {
        if self.stopped[instance as usize] {
            self.recorder.rejected();
            return;
        }
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

    /// Sends an attempt: the API decides it when it arrives (at once, unless `--forward` puts a
    /// share of the round trip on the way there); the response is back a round trip after the
    /// send.
    fn send(
        &mut self,
        instance: u32,
        request: u32,
        attempt: u32,
        now: Timestamp,
        waited: Duration,
    ) {
        self.clients[instance as usize].sent(now);
        self.recorder.sent(waited);
        let trip = latency(self.options.seed, request, attempt);
        if self.options.forward > 0.0 {
            let arrival = EventKind::Arrive {
                instance,
                request,
                attempt,
                sent_at: now,
                back: now + trip,
            };
            self.agenda
                .push(now + trip.mul_f64(self.options.forward), arrival);
        } else {
            self.arrive(instance, request, attempt, now, now + trip, now);
        }
    }

    /// An attempt sent at `sent_at` reaches the API at `now`: it is counted and decided, and its
    /// response is scheduled for `back`, a round trip after the send.
    fn arrive(
        &mut self,
        instance: u32,
        request: u32,
        attempt: u32,
        sent_at: Timestamp,
        back: Timestamp,
        now: Timestamp,
    ) {
        let units = self.requests[request as usize].units;
        let verdict = self.api.offer(units, now);
        // A server that queues what is over its pace (nginx's `limit_req`) answers that much
        // later.
        let mut back = back;
        match verdict {
            Verdict::Accepted => {
                self.recorder.accepted_from(instance, units, now);
                back += self.api.served_after(now);
            }
            Verdict::Throttled { .. } => self.recorder.throttled(now),
        }
        let headers = self.wants_headers.then(|| self.api.headers(now));
        self.agenda.push(
            back,
            EventKind::Response {
                instance,
                request,
                attempt,
                sent_at,
                verdict,
                headers,
            },
        );
    }

    /// A scheduled grant: send every waiting attempt whose units are there, and count the ones
    /// whose time to wait ended while `MaxConcurrent` held the queue as refused.
    fn grant(&mut self, instance: u32, now: Timestamp) {
        let i = instance as usize;
        if self.armed[i] != Some(now) || self.stopped[i] {
            return; // A later arm superseded this event, or the instance stopped.
        }
        self.armed[i] = None;
        if self.clients[i].exchanges().is_some() {
            self.arm(instance, now, now);
            return;
        }
        let (mut granted, mut refused) = (false, false);
        loop {
            while let Some((ticket, waited)) = self.clients[i].pop_ready(now) {
                granted = true;
                match self.waiting[i].remove(&ticket) {
                    Some(a) => self.send(instance, a.request, a.attempt, now, waited),
                    None => self.clients[i].not_sent(now),
                }
            }
            let expired = self.clients[i].refuse_expired(now);
            if expired.rejected.is_empty() {
                break;
            }
            // The first waiter may have been refused: the next may go at once.
            refused = true;
            self.apply(instance, expired);
        }
        let earliest = if granted || refused { now } else { now + NUDGE };
        self.arm(instance, now, earliest);
    }

    /// Schedules the instance's next grant, no earlier than `earliest`.
    fn arm(&mut self, instance: u32, now: Timestamp, earliest: Timestamp) {
        let i = instance as usize;
        if self.clients[i].exchanges().is_some() {
            self.settle(instance, now);
            return;
        }
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

    /// A client that runs the engine's exchanges: the waits that end by `now` go or are
    /// refused, and the next look is scheduled for when a wait is next due.
    fn settle(&mut self, instance: u32, now: Timestamp) {
        let i = instance as usize;
        let Some(client) = self.clients[i].exchanges() else {
            return;
        };
        let settled = client.settle(now);
        let next = client.next_at();
        for (request, how) in settled {
            match how {
                Settled::Go { attempt, waited } => {
                    self.send(instance, request, attempt, now, waited)
                }
                Settled::Refused => self.recorder.rejected(),
            }
        }
        match next {
            Some(at) if self.armed[i] != Some(at.max(now)) => {
                let at = at.max(now);
                self.armed[i] = Some(at);
                self.agenda.push(at, EventKind::Grant { instance });
            }
            Some(_) => {}
            None => self.armed[i] = None,
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

    /// Starts `count` more instances and, if the story announces it, tells every running
    /// client the new total.
    fn add_instances(&mut self, count: u32, now: Timestamp) -> Result<(), ModeError> {
        let before = self.clients.len() as u32;
        let total = before + count;
        let instance_count = self
            .story
            .instance_count_at(self.options.instances, now.as_duration());
        if self.story.announces {
            for instance in 0..before {
                let changes =
                    self.clients[instance as usize].set_instance_count(instance_count, now);
                self.apply(instance, changes);
                self.arm(instance, now, now);
            }
        }
        let mut limiter = self.options.limiter.clone();
        limiter.instance_count = instance_count;
        for instance in before..total {
            let setup = ClientSetup {
                instance,
                limiter: limiter.clone(),
                now,
                max_attempts: self.options.max_attempts,
            };
            let mut client = self.mode.client(&setup)?;
            // A process that replaces one that stopped starts from what that one learnt.
            if let Some(Some(memory)) =
                (!self.remembered.is_empty()).then(|| self.remembered.remove(0))
            {
                let _ = client.recall(&memory, now);
            }
            self.clients.push(client);
            self.waiting.push(HashMap::new());
            self.armed.push(None);
            self.woken.push(None);
            self.stopped.push(false);
            self.arm_wake(instance, now);
        }
        Ok(())
    }
}

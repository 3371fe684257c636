//! One process's part in a fleet, as a state machine: what to send to the store and when, what
//! to make of its answers, and this process's share of the fleet's rate.

use super::limiter::{FleetLimiter, Totals};
use super::{CommitReply, CommitRequest, FleetOptions, Gauges, SyncReply, SyncRequest, TickData};
use crate::limiter::BarePause;
use crate::limiter::accepted::QuotaWindowMeter;
use crate::{Feedback, LimiterOptions, Signal, Timestamp};
use std::time::Duration;

/// A call a [`FleetMember`] asks its driver to make to the store, now.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FleetCall {
    /// [`FleetStore::sync`](crate::FleetStore::sync).
    Sync(SyncRequest),
    /// [`FleetStore::commit`](crate::FleetStore::commit).
    Commit(CommitRequest),
}

/// A member syncs at least this many times in the window its fleet counts over
/// ([`FleetMember::period`]).
pub(super) const PERIODS_PER_WINDOW: u32 = 10;

/// The shortest period a short window brings a member's syncs down to.
use super::options::LEAST_PERIOD;

/// A throttle one of this member's requests met, until the fleet's state has it.
#[derive(Debug, Clone, Copy)]
struct Throttle {
    /// When the request was sent, on this member's clock.
    sent_at: Timestamp,
    retry_after: Option<Duration>,
    bare: BarePause,
}

/// The units callers asked for, per minute, smoothed with a time constant of [`DEMAND_SMOOTHING`]
/// (a few requests a period say little; ten seconds of them say what a member needs).
#[derive(Debug, Clone, Copy, Default)]
struct Demand {
    units: f64,
    since: Option<Timestamp>,
    per_minute: f64,
}

impl Demand {
    fn asked(&mut self, units: u64, now: Timestamp) {
        self.since.get_or_insert(now);
        self.units += units as f64;
    }

    /// The smoothed demand, the units asked since the last sample counted in once they span
    /// `min_span` at least: a sync soon after an ask (the first, or one a throttle hastens)
    /// would otherwise read one request in a millisecond as 60,000 a minute, and that member
    /// would hold most of the fleet's rate until its demand decayed. Until then they wait for
    /// the next sample.
    fn sample(&mut self, now: Timestamp, min_span: Duration) -> f64 {
        if let Some(since) = self.since {
            let secs = (now - since).as_secs_f64();
            if secs > 0.0 && secs >= min_span.as_secs_f64() {
                let rate = self.units * 60.0 / secs;
                // The first periods weigh as much as they are long against the time constant,
                // so the first estimate is the first period's rate.
                let weight = if self.per_minute == 0.0 {
                    1.0
                } else {
                    1.0 - (-secs / DEMAND_SMOOTHING.as_secs_f64()).exp()
                };
                self.per_minute += weight * (rate - self.per_minute);
                self.units = 0.0;
                self.since = Some(now);
            }
        }
        self.per_minute
    }
}

/// What a commit carries, to make again over another member's state if it loses the race.
#[derive(Debug, Clone, Default)]
struct Pending {
    /// The accepted units no commit has counted, as the sync read them (counted by this
    /// member's commit; once another member's commit wins, they are its or the next one's).
    accepted: f64,
    tick: Option<(TickData, Timestamp)>,
    throttles: Vec<Throttle>,
    tries: u32,
}

/// The time constant of a member's demand.
const DEMAND_SMOOTHING: Duration = Duration::from_secs(10);

/// How many times a member makes a lost commit again over the newer state before it lets the
/// next sync carry its news.
const COMMIT_TRIES: u32 = 3;

/// One process's part in one fleet (a limiter's endpoint shared by many processes through a
/// [`FleetStore`](crate::FleetStore)), free of IO: the driver asks it what to send
/// ([`poll`](Self::poll)), sends it, hands back the answer ([`on_sync`](Self::on_sync),
/// [`on_commit`](Self::on_commit), [`on_failure`](Self::on_failure)), and applies
/// [`share`](Self::share) to the process's limiter.
///
/// The fleet has **one** controller for the whole budget, kept in the store with what it
/// remembers: a throttle any member sees cuts the fleet's rate once (the contract's cooldown
/// and its rule that a request sent before the last cut does not cut again hold fleet-wide),
/// and once per `period` the member the store picks runs the controller's tick on what every
/// member reported. Each member sends its share of the fleet's rate: max-min fair, a member
/// whose demand is below an even share taking its demand and a quarter more (room to show a
/// growing demand), the others splitting the rest evenly. A member whose store does not answer goes on with its last share, and after
/// `fallback_after` with its own controller.
#[derive(Debug)]
pub struct FleetMember {
    key: String,
    id: String,
    options: FleetOptions,
    limiter: LimiterOptions,
    /// The fleet's state as last read or written, and its version.
    fleet: Option<(u64, FleetLimiter)>,
    /// The store's clock minus this member's, in nanoseconds.
    offset: i128,
    members: u32,
    demand: Demand,
    /// Accepted units not yet reported, and those of the sync in flight.
    accepted: f64,
    accepted_in_flight: f64,
    /// This member's accepted units over the last `QuotaWindow`: what it carries over a store
    /// that did not answer is at most this (older units no longer count in the server's window).
    recent: QuotaWindowMeter,
    throttles: Vec<Throttle>,
    pending: Pending,
    /// The call in flight and when it was sent.
    in_flight: Option<Timestamp>,
    next_sync: Timestamp,
    /// The syncs this member has sent (its jitter's sequence).
    syncs: u64,
    /// The store said it has no pool: this member keeps its share whatever the fleet decides.
    no_pool: bool,
    /// A draw had to wait, or was refused, since the last sync: reported as a wait in the
    /// member's gauges (its own queue is empty while it draws, and the fleet's controller must
    /// still see a demand above the rate).
    pool_waited: bool,
    /// A draw failed since the last good sync: until the next, the member sends from its share
    /// (an even part of the fleet's rate), not at the whole rate the pool paced.
    pool_failed: bool,
    last_good: Option<Timestamp>,
    /// When the member began, and the good replies since (counted to 2): the count is settled
    /// ([`count_settled`](Self::count_settled)) after the second.
    began: Timestamp,
    replies: u8,
}

impl FleetMember {
    /// Member `id` of the fleet at `key`, whose limiter has `limiter` options (its rates for the
    /// whole budget: the fleet's controller runs on them as one process would), starting at
    /// `now`.
    #[must_use]
    pub fn new(
        key: impl Into<String>,
        id: impl Into<String>,
        options: FleetOptions,
        limiter: LimiterOptions,
        now: Timestamp,
    ) -> Self {
        let window = limiter.quota_window;
        FleetMember {
            key: key.into(),
            id: id.into(),
            options,
            limiter,
            fleet: None,
            offset: 0,
            members: 1,
            demand: Demand::default(),
            accepted: 0.0,
            accepted_in_flight: 0.0,
            recent: QuotaWindowMeter::new(window, now),
            throttles: Vec::new(),
            pending: Pending::default(),
            in_flight: None,
            next_sync: now,
            syncs: 0,
            no_pool: false,
            pool_failed: false,
            pool_waited: false,
            last_good: None,
            began: now,
            replies: 0,
        }
    }

    /// The fleet's key in the store.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// This member's id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The options.
    #[must_use]
    pub fn options(&self) -> &FleetOptions {
        &self.options
    }

    /// A caller asked for `units` at `now` (granted, queued or refused: demand all the same).
    pub fn on_asked(&mut self, units: u64, now: Timestamp) {
        self.demand.asked(units, now);
    }

    /// A response came at `now`: accepted units are reported at the next sync; a throttle is
    /// reported at once (the next [`poll`](Self::poll) asks for a sync).
    pub fn on_response(&mut self, feedback: &Feedback, now: Timestamp) {
        self.record_response(feedback, BarePause::Take, now);
    }

    /// [`on_response`](Self::on_response), `bare` saying whether a throttle without
    /// `Retry-After` stops the members for `PauseWithoutRetryAfter`.
    pub(crate) fn record_response(&mut self, feedback: &Feedback, bare: BarePause, now: Timestamp) {
        match feedback.signal {
            Signal::Success => {
                self.accepted += feedback.units as f64;
                self.recent.record(feedback.units as f64, now);
            }
            Signal::Throttled { retry_after } => self.throttles.push(Throttle {
                sent_at: feedback.sent_at,
                retry_after,
                bare,
            }),
            Signal::Neutral => {}
        }
    }

    /// When the member wants [`poll`](Self::poll)ed next (a sync is due, or a call in flight
    /// times out).
    #[must_use]
    pub fn next_poll_at(&self) -> Timestamp {
        match self.in_flight {
            Some(sent) => sent.saturating_add(self.options.timeout),
            None if !self.throttles.is_empty() => Timestamp::ZERO,
            None => self.next_sync,
        }
    }

    /// The call to make now, if any: a sync every `period`, or at once after a throttle. `gauges`
    /// are the limiter's (its measured send rate, queued units, whether a request waited); the
    /// member adds its demand. A call in flight past `timeout` counts as failed.
    pub fn poll(&mut self, gauges: Gauges, now: Timestamp) -> Option<FleetCall> {
        if let Some(sent) = self.in_flight {
            if now.saturating_duration_since(sent) < self.options.timeout {
                return None;
            }
            self.on_failure(now);
        }
        if now < self.next_sync && self.throttles.is_empty() {
            return None;
        }
        let period = self.period();
        let mut request = SyncRequest::new(
            self.id.clone(),
            self.lease(),
            self.fleet.as_ref().map_or(0, |(v, _)| *v),
        );
        request.gauges = Gauges {
            demand: self.demand.sample(now, period),
            waited: gauges.waited || std::mem::take(&mut self.pool_waited),
            ..gauges
        };
        request.accepted = self.accepted;
        request.claim = period;
        self.accepted_in_flight = std::mem::take(&mut self.accepted);
        self.in_flight = Some(now);
        self.syncs = self.syncs.wrapping_add(1);
        self.next_sync = now.saturating_add(self.jittered(self.sync_period()));
        Some(FleetCall::Sync(request))
    }

    /// The store answered the sync sent at `sent` (the driver's clock) at `now`. Returns the
    /// commit to make, if the member has news for the fleet's state: a tick the store handed it,
    /// a throttle, or a state to write where there is none.
    pub fn on_sync(
        &mut self,
        reply: SyncReply,
        sent: Timestamp,
        now: Timestamp,
    ) -> Option<FleetCall> {
        self.in_flight = None;
        if !self.is_in_force(now) {
            // Back after the store was quiet: the throttles met meanwhile were this member's own
            // controller's to act on, and the fleet, whose members are only now coming back, would
            // read them against a window it did not see.
            self.throttles.clear();
        }
        self.last_good = Some(now);
        self.pool_failed = false;
        self.accepted_in_flight = 0.0;
        // The store's clock, taken at the middle of the round trip.
        let local_mid = sent.as_nanos() as i128 + (now - sent).as_nanos() as i128 / 2;
        self.offset = reply.now.as_nanos() as i128 - local_mid;
        self.members = reply.members.max(1);
        self.replies = self.replies.saturating_add(1).min(2);
        let mut news = false;
        match (reply.version, reply.state) {
            (0, _) => {
                // No state (a new fleet, or a store that lost it): write ours, or a new one.
                news = true;
                if self.fleet.is_none() {
                    self.fleet = Some((0, FleetLimiter::new(&self.limiter, reply.now)));
                }
                if let Some((v, _)) = &mut self.fleet {
                    *v = 0;
                }
            }
            (version, Some(state)) => self.read(version, &state, reply.now),
            (version, None) => {
                if let Some((v, _)) = &mut self.fleet {
                    *v = version;
                }
            }
        }
        self.pending = Pending {
            accepted: reply.accepted,
            tick: reply.tick.map(|t| (t, reply.now)),
            throttles: std::mem::take(&mut self.throttles),
            tries: 0,
        };
        news |= self.pending.tick.is_some() || !self.pending.throttles.is_empty();
        if !news {
            return None;
        }
        self.commit(reply.now)
    }

    /// The store answered a commit at `now`: written, or lost to another member's (whose state
    /// the member then makes its news again over, a few times at most).
    pub fn on_commit(&mut self, reply: CommitReply, now: Timestamp) -> Option<FleetCall> {
        self.in_flight = None;
        self.last_good = Some(now);
        if reply.committed {
            if let Some((v, _)) = &mut self.fleet {
                *v = reply.version;
            }
            self.pending = Pending::default();
            return None;
        }
        let server_now = self.to_store(now);
        if let Some(state) = reply.state {
            self.read(reply.version, &state, server_now);
        }
        self.pending.tries += 1;
        self.pending.accepted = 0.0;
        if self.pending.tries >= COMMIT_TRIES {
            // The next sync carries the throttles again; the tick is someone else's then.
            self.throttles.append(&mut self.pending.throttles);
            self.pending = Pending::default();
            return None;
        }
        self.commit(server_now)
    }

    /// The store told this member of another's urgent commit (a cut, a stop): it syncs at once.
    pub fn on_news(&mut self, now: Timestamp) {
        self.next_sync = self.next_sync.min(now);
    }

    /// The call in flight failed (the store is down or slow): the accepted units it carried go
    /// with the next sync, as many as still count in a window of `QuotaWindow` (the fleet's
    /// controller would otherwise find its window empty when the store is back, and take that
    /// for the limit); a throttle it was to report stays for the next sync too.
    pub fn on_failure(&mut self, now: Timestamp) {
        self.in_flight = None;
        let carried = self.accepted + std::mem::take(&mut self.accepted_in_flight);
        self.accepted = carried.min(self.recent.per_minute(now) * self.window_minutes());
        self.throttles.append(&mut self.pending.throttles);
        self.pending = Pending::default();
    }

    /// This member's rate while the fleet's is in force: its share of the fleet's rate, units
    /// per minute. `None` while the fleet has no limit yet (its unlimited start), and once the
    /// store has not answered for `fallback_after`: the process's own controller then runs.
    #[must_use]
    pub fn share(&self, now: Timestamp) -> Option<f64> {
        if !self.is_in_force(now) {
            return None;
        }
        let (_, fleet) = self.fleet.as_ref()?;
        if !fleet.is_limiting() {
            return None;
        }
        if self.draws_from_pool() {
            // The pool paces the fleet; the member's own limiter only keeps it under the whole
            // rate.
            return Some(fleet.rate());
        }
        Some(fleet.share(self.members, self.demand.per_minute))
    }

    /// Whether the fleet's rate is in force: the store answered within `fallback_after`.
    #[must_use]
    pub fn is_in_force(&self, now: Timestamp) -> bool {
        // Two syncs missed at least, however far apart they are.
        let fallback_after = self.options.fallback_after.max(self.sync_period() * 2);
        self.last_good
            .is_some_and(|t| now.saturating_duration_since(t) < fallback_after)
    }

    /// Whether the live count is settled at `now`: the member's second sync has come back
    /// (members that joined with it wrote their lease at their first sync, so a sync a period
    /// after its own first counts them), or the store has not answered two syncs within
    /// `fallback_after` of its start (it then acts alone, on a count of its own). Members
    /// started together each count only those before them until then: what a budget cut by
    /// that count lets go would be too much together.
    #[must_use]
    pub fn count_settled(&self, now: Timestamp) -> bool {
        let fallback_after = self.options.fallback_after.max(self.sync_period() * 2);
        self.replies >= 2 || now.saturating_duration_since(self.began) >= fallback_after
    }

    /// The live members at the last sync (1 before it).
    #[must_use]
    pub fn members(&self) -> u32 {
        self.members
    }

    /// The fleet's rate for the whole budget, units per minute, if the fleet limits.
    #[must_use]
    pub fn fleet_rate(&self) -> Option<f64> {
        let (_, fleet) = self.fleet.as_ref()?;
        fleet.is_limiting().then(|| fleet.rate())
    }

    /// The stop the server ordered the fleet, on this member's clock, if one holds at `now`.
    #[must_use]
    pub fn pause_until(&self, now: Timestamp) -> Option<Timestamp> {
        let (_, fleet) = self.fleet.as_ref()?;
        let until = self.to_local(fleet.pause_until());
        (until > now).then_some(until)
    }

    /// The fleet controller's estimate of the limit for the whole budget and whether it is
    /// firm (the Pacer controller's; `None` for the others or before a throttle).
    #[must_use]
    pub fn estimate(&self) -> Option<(f64, bool)> {
        self.fleet.as_ref().and_then(|(_, f)| f.estimate())
    }

    /// What a member that falls back to its own controller starts from: its part of the fleet's
    /// estimate, as its share is of the fleet's rate, for the whole budget of its limiter (which
    /// counts the members it last knew): held just under it, the members together stay under
    /// the fleet's estimate, a member that asked little as well as one that asked much.
    #[must_use]
    pub fn fallback_estimate(&self) -> Option<(f64, bool)> {
        let (_, fleet) = self.fleet.as_ref()?;
        let (limit, firm) = fleet.estimate()?;
        let rate = fleet.rate();
        if rate <= 0.0 {
            return None;
        }
        let part = fleet.share(self.members, self.demand.per_minute) / rate;
        Some((limit * part * f64::from(self.members.max(1)), firm))
    }

    /// How often this member syncs, and the fleet's controller ticks: `Period`, or a tenth of
    /// the window the fleet's controller counts over when that is shorter (a window it learnt,
    /// or `QuotaWindow`), but not under 50 ms. A fleet that shares a window of a
    /// second sees it ten times a window; at the default 250 ms it saw it four times, and the
    /// few units of a quarter of a window decided each estimate.
    #[must_use]
    pub fn period(&self) -> Duration {
        let window = self
            .fleet
            .as_ref()
            .map_or(self.limiter.quota_window, |(_, f)| {
                f.counting_window(&self.limiter)
            });
        self.options
            .period
            .min((window / PERIODS_PER_WINDOW).max(LEAST_PERIOD))
    }

    /// The window the server counts over, as far as the fleet's controller knows: the one it
    /// learnt from its first throttles, `None` before that or before the fleet's state is read
    /// ([`Controller::server_window`](crate::Controller::server_window)). A member's limiter
    /// pauses a bare throttle for at most a quarter of it while the fleet's rate is in force
    /// ([`steer`](Self::steer) hands it to the [`FleetLink`](crate::FleetLink)).
    #[must_use]
    pub fn server_window(&self) -> Option<Duration> {
        self.fleet.as_ref().and_then(|(_, f)| f.server_window())
    }

    /// How many cuts the fleet's controller made.
    #[must_use]
    pub fn decreases(&self) -> u64 {
        self.fleet.as_ref().map_or(0, |(_, f)| f.decreases())
    }

    fn read(&mut self, version: u64, state: &[u8], server_now: Timestamp) {
        match serde_json::from_slice::<FleetLimiter>(state) {
            Ok(mut fleet) => {
                fleet.adopt(&self.limiter, server_now);
                self.fleet = Some((version, fleet));
            }
            Err(e) => {
                // Not a state this Pacer can read (another version's): written over with ours.
                tracing::warn!(fleet = %self.key, error = %e, "a fleet state that cannot be read");
                let fleet = self
                    .fleet
                    .take()
                    .map(|(_, f)| f)
                    .unwrap_or_else(|| FleetLimiter::new(&self.limiter, server_now));
                self.fleet = Some((version, fleet));
            }
        }
    }

    /// Applies the pending tick and throttles to the state held, and asks to write it.
    fn commit(&mut self, server_now: Timestamp) -> Option<FleetCall> {
        let period = self.period();
        let lease = self.lease();
        let (version, fleet) = self.fleet.as_mut()?;
        let mut request = CommitRequest::new(self.id.clone(), *version, Vec::new());
        // The units accepted so far first: a throttle's estimate counts them.
        fleet.count(self.pending.accepted, &self.limiter, server_now);
        request.accepted = self.pending.accepted;
        if let Some((tick, at)) = &self.pending.tick {
            let totals = Totals {
                demands: tick.gauges.iter().map(|g| g.demand).collect(),
                measured: tick.gauges.iter().map(|g| g.measured).sum(),
                queued: tick.gauges.iter().map(|g| g.queued).sum(),
                waited: tick.gauges.iter().any(|g| g.waited),
                members: tick.gauges.len() as u32,
            };
            fleet.tick(&self.limiter, &totals, lease, server_now);
            request.next_tick = Some(at.saturating_add(period));
        }
        for t in &self.pending.throttles {
            let sent_at = Timestamp::from_nanos(
                (t.sent_at.as_nanos() as i128 + self.offset).clamp(0, u64::MAX as i128) as u64,
            );
            request.urgent |=
                fleet.throttle(&self.limiter, sent_at, t.retry_after, t.bare, server_now);
        }
        request.state = serde_json::to_vec(fleet).expect("a fleet's state serializes");
        self.in_flight = Some(self.to_local(server_now));
        Some(FleetCall::Commit(request))
    }

    /// `QuotaWindow` in minutes.
    fn window_minutes(&self) -> f64 {
        self.limiter.quota_window.as_secs_f64() / 60.0
    }

    fn to_store(&self, local: Timestamp) -> Timestamp {
        Timestamp::from_nanos(
            (local.as_nanos() as i128 + self.offset).clamp(0, u64::MAX as i128) as u64,
        )
    }

    fn to_local(&self, store: Timestamp) -> Timestamp {
        Timestamp::from_nanos(
            (store.as_nanos() as i128 - self.offset).clamp(0, u64::MAX as i128) as u64,
        )
    }
}

mod scale;

pub use scale::Drawn;

#[cfg(test)]
mod tests;

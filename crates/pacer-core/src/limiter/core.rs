//! The limiter as a state machine: pure data and decisions, driven by `now`.

use super::bucket::Bucket;
use super::control::Control;
use super::queue::{WaitQueue, Waiter};
use super::send_rate::SendRateMeter;
use super::{Acquired, Changes, LimiterOptions, Priority, RateChangeReason, Ticket};
use crate::controller::{Controller, ControllerContext};
use crate::validation::InvalidOptions;
use crate::{RejectReason, Timestamp, WaitCause};
use std::num::NonZeroU32;
use std::time::Duration;

/// The adaptive limiter without any clock, lock or sleep: every method takes `now` and returns a
/// decision. [`Limiter`](super::Limiter) wraps it for async code; the simulator drives it on
/// virtual time.
///
/// The rules, in the order a request meets them:
///
/// 1. A request of 0 units goes at once and changes nothing.
/// 2. With `Enabled = false` every request goes at once (the state is still tracked).
/// 3. If nobody waits, no pause is on, the bucket has the units and a request in flight more
///    stays within `MaxConcurrent` (when one is set), they are taken: go now.
///    A request larger than the bucket takes a full bucket and leaves a debt; it goes only if
///    that debt is repaid within `MaxWait` at the current rate (`units ≤ rate × (Burst +
///    MaxWait)`), and one above [`max_cost`](Self::max_cost) is refused outright.
/// 4. Otherwise the request would wait. Its wait is estimated at the current rate, behind every
///    request already waiting and after any pause. If `QueueLimit` requests wait already, or the
///    wait is longer than it may wait, it is refused now, having taken nothing. Otherwise it joins
///    the queue and the `waited` flag is set.
/// 5. Waiting requests get their units in arrival order within their [`Priority`] lane
///    ([`pop_ready`](Self::pop_ready)) once no pause is on, the bucket holds what the first
///    one needs and it has a slot under `MaxConcurrent`.
///
/// Every grant of at least one unit counts as a request in flight until the caller says it
/// landed ([`landed`](Self::landed)): answered, failed, or never sent.
///
/// A cut or a pause can push a queued request's estimate past its deadline; such requests are
/// refused at that moment (in [`Changes::rejected`]) rather than left to time out.
///
/// With `InitialUnitsPerMinute` unset (the default) the rate is `MaxUnitsPerMinute` until the
/// first throttle signal, so rule 3 lets every request go; from that signal on the rate starts
/// from the measured send rate ([`LimiterOptions::initial_units_per_minute`]).
#[derive(Debug)]
pub struct LimiterCore {
    pub(super) options: LimiterOptions,
    /// The instance count in force (the options' value unless set live).
    pub(super) instance_count: u32,
    pub(super) instance_count_is_live: bool,
    pub(super) controller: Box<dyn Controller>,
    pub(super) controller_is_custom: bool,
    /// Units per minute for this process.
    pub(super) rate: f64,
    pub(super) bucket: Bucket,
    pub(super) queue: WaitQueue,
    pub(super) next_ticket: u64,
    /// The contract's bookkeeping around the rate: cuts, increases, waits, the unlimited start.
    pub(super) control: Control,
    pub(super) pause_until: Timestamp,
    pub(super) meter: SendRateMeter,
    /// Following the server's numbers, and what that reads of every response.
    pub(super) server: super::server::ServerPace,
    pub(super) stats: super::LimiterStats,
    /// Requests granted and not yet landed ([`landed`](Self::landed)).
    pub(super) in_flight: u32,
}

impl LimiterCore {
    /// A limiter with the controller its options select.
    pub fn new(options: LimiterOptions, now: Timestamp) -> Result<Self, InvalidOptions> {
        options.validate()?;
        let controller = options.build_controller();
        Ok(Self::build(options, controller, false, now))
    }

    /// A limiter with a controller of your own; the `Controller` option is then ignored. (A
    /// [`RateController`](crate::RateController) runs in a
    /// [`PureController`](crate::PureController).)
    pub fn with_controller(
        options: LimiterOptions,
        controller: Box<dyn Controller>,
        now: Timestamp,
    ) -> Result<Self, InvalidOptions> {
        options.validate()?;
        Ok(Self::build(options, controller, true, now))
    }

    fn build(
        options: LimiterOptions,
        mut controller: Box<dyn Controller>,
        controller_is_custom: bool,
        now: Timestamp,
    ) -> Self {
        controller.on_options(&options, now);
        let instance_count = options.instance_count;
        let server = super::server::ServerPace::new(options.quota_window, now);
        let initial_whole = options.rate_at_start();
        let limiting = options.initial_units_per_minute.is_some();
        let rate = options.share(initial_whole, instance_count);
        LimiterCore {
            bucket: Bucket::new(rate, options.burst.as_secs_f64(), now),
            options,
            instance_count,
            instance_count_is_live: false,
            controller,
            controller_is_custom,
            rate,
            queue: WaitQueue::default(),
            next_ticket: 0,
            control: Control::new(rate, limiting, initial_whole, now),
            pause_until: Timestamp::ZERO,
            meter: SendRateMeter::new(now),
            server,
            stats: super::LimiterStats::default(),
            in_flight: 0,
        }
    }

    /// Asks for `units`, waiting at most `MaxWait`.
    pub fn acquire(&mut self, units: u64, now: Timestamp) -> Result<Acquired, RejectReason> {
        self.acquire_within(units, self.options.max_wait, now)
    }

    /// Asks for `units`, waiting at most `max_wait` (what is left of a request's budget after
    /// its other waits). Refuses at once, taking nothing, if the request costs more than
    /// [`max_cost`](Self::max_cost), if the queue is full, or if the estimated wait is longer
    /// than `max_wait` — which it is for a cost whose debt would outlast `MaxWait` at the
    /// current rate (see [`try_take`](Self::try_take)).
    pub fn acquire_within(
        &mut self,
        units: u64,
        max_wait: Duration,
        now: Timestamp,
    ) -> Result<Acquired, RejectReason> {
        self.acquire_with_priority(units, max_wait, Priority::Interactive, now)
    }

    /// Like [`acquire_within`](Self::acquire_within), in the queue's `priority` lane: its wait is
    /// estimated at its place in the order the lanes are served in ([`Priority`]).
    ///
    /// An interactive request can push batch requests queued before it past the time they may
    /// wait; [`Limiter`](super::Limiter) refuses those at once. A caller of the core that queues
    /// interactive requests while batch requests wait does the same by calling
    /// [`refuse_unreachable`](Self::refuse_unreachable).
    pub fn acquire_with_priority(
        &mut self,
        units: u64,
        max_wait: Duration,
        priority: Priority,
        now: Timestamp,
    ) -> Result<Acquired, RejectReason> {
        self.acquire_capped(units, max_wait, priority, None, now)
    }

    /// Like [`acquire_with_priority`](Self::acquire_with_priority), for a request that also
    /// waits until fewer than `max_concurrent` requests are in flight (its own
    /// [`MaxConcurrent`](crate::MaxConcurrent); the limiter's `MaxConcurrent` applies as
    /// well). A request that has its units but no slot waits in the queue, in its place; when
    /// no slot comes free before the time it may wait ends, it is refused then
    /// ([`refuse_expired`](Self::refuse_expired)).
    ///
    /// ```
    /// use pacer_core::{Acquired, LimiterCore, LimiterOptions, Priority, Timestamp};
    /// use std::num::NonZeroU32;
    /// use std::time::Duration;
    ///
    /// let t0 = Timestamp::ZERO;
    /// let mut core = LimiterCore::new(LimiterOptions::default(), t0).unwrap();
    /// let one = NonZeroU32::new(1);
    /// let wait = Duration::from_secs(30);
    /// assert_eq!(core.acquire_capped(1, wait, Priority::Interactive, one, t0), Ok(Acquired::Now));
    /// // The first is in flight: the second waits for it.
    /// let second = core.acquire_capped(1, wait, Priority::Interactive, one, t0);
    /// assert!(matches!(second, Ok(Acquired::Queued { .. })));
    /// assert_eq!(core.pop_ready(t0), None);
    /// assert!(core.landed(), "the first is answered: the second may go");
    /// assert!(core.pop_ready(t0).is_some());
    /// ```
    pub fn acquire_capped(
        &mut self,
        units: u64,
        max_wait: Duration,
        priority: Priority,
        max_concurrent: Option<NonZeroU32>,
        now: Timestamp,
    ) -> Result<Acquired, RejectReason> {
        let mut needed = match self.try_take_capped(units, max_concurrent, now) {
            Ok(()) => return Ok(Acquired::Now),
            Err(needed) => needed,
        };
        let max = self.max_cost();
        if units > max {
            self.stats.rejected_cost += 1;
            return Err(RejectReason::CostAboveLimit { cost: units, max });
        }
        // A cost whose debt outlasts `MaxWait` at the current rate may not wait longer than
        // `MaxWait` either, whatever the caller's own budget: it is refused now.
        let max_wait = if self.repayable(units as f64) {
            max_wait
        } else {
            max_wait.min(self.options.max_wait)
        };
        if self.queue.len() >= self.options.queue_limit {
            self.stats.rejected_queue_full += 1;
            return Err(RejectReason::QueueFull {
                limit: self.options.queue_limit,
            });
        }
        if priority != Priority::Interactive || self.queue.has_batch() {
            // The lanes change the order: the wait is that of its place in the order served.
            let units_f = units as f64;
            let ahead = self.queue.units_ahead_of_new(priority);
            needed = self.estimate(ahead, units_f, now) - now;
            if !self.repayable(units_f) {
                needed = needed.saturating_add(self.debt_wait(units_f));
            }
        }
        if needed > max_wait {
            self.stats.rejected_wait += 1;
            return Err(RejectReason::WaitTooLong {
                cause: WaitCause::Queue,
                needed,
                max_wait,
            });
        }
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        self.queue.push(
            ticket,
            units as f64,
            priority,
            now,
            now + max_wait,
            max_concurrent,
        );
        self.control.waited = true;
        Ok(Acquired::Queued {
            ticket,
            estimated_at: now + needed,
        })
    }

    /// Grants the first waiting request if its units are there (and a slot, under
    /// `MaxConcurrent`): returns its ticket and how long it waited. Call it until it returns
    /// `None`, then [`refuse_expired`](Self::refuse_expired) when a cap on requests in flight
    /// is in play.
    pub fn pop_ready(&mut self, now: Timestamp) -> Option<(Ticket, Duration)> {
        if now < self.pause_until {
            return None;
        }
        self.bucket.refill(now);
        let (units, cap) = self.queue.front().map(|w| (w.units, w.cap))?;
        if !self.options.enabled || (self.bucket.has(units) && self.has_slot(cap)) {
            let w = self.queue.pop_front()?;
            if self.options.enabled {
                self.bucket.take(w.units);
            }
            let waited = now - w.enqueued_at;
            self.stats.granted(w.units, waited);
            self.in_flight = self.in_flight.saturating_add(1);
            return Some((w.ticket, waited));
        }
        None
    }

    /// When to look at the queue again ([`pop_ready`](Self::pop_ready)): when the first waiting
    /// request will get its units if the rate stays as it is; `None` when nobody waits. While a
    /// cap on requests in flight is in play, no later than the earliest time a waiting request
    /// may wait until ([`refuse_expired`](Self::refuse_expired) refuses it then), and, while
    /// the first waits for a slot, that time alone: a slot comes free only when a request
    /// lands ([`landed`](Self::landed)), which no rate can tell.
    pub fn next_grant_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        let (units, cap) = self.queue.front().map(|w| (w.units, w.cap))?;
        if !self.slots_matter() {
            return Some(self.estimate(0.0, units, now));
        }
        let expiry = self.queue.earliest_deadline();
        let grant = self.has_slot(cap).then(|| self.estimate(0.0, units, now));
        match (grant, expiry) {
            (Some(g), Some(e)) => Some(g.min(e)),
            (g, e) => g.or(e),
        }
    }

    /// Takes `units` if they can go right now (nobody waits, no pause, the bucket has them, a
    /// slot is free under `MaxConcurrent`, and the debt they leave is repaid within `MaxWait`
    /// at the current rate); otherwise changes nothing and returns the estimated wait — for a
    /// cost whose debt would outlast `MaxWait`, the wait for a full bucket plus the time the
    /// debt takes, which is longer than `MaxWait`; for a request that waits only for a slot,
    /// the wait for its units, which may be zero (when a slot comes free is not known). Never
    /// queues, never counts a rejection: for callers that would rather do something else than
    /// wait. A grant of at least one unit is a request in flight until it
    /// [`landed`](Self::landed).
    pub fn try_take(&mut self, units: u64, now: Timestamp) -> Result<(), Duration> {
        self.try_take_capped(units, None, now)
    }

    /// Like [`try_take`](Self::try_take), for a request that also needs fewer than
    /// `max_concurrent` requests in flight (its own `MaxConcurrent`; the limiter's applies as
    /// well).
    pub fn try_take_capped(
        &mut self,
        units: u64,
        max_concurrent: Option<NonZeroU32>,
        now: Timestamp,
    ) -> Result<(), Duration> {
        if units == 0 {
            return Ok(());
        }
        let units_f = units as f64;
        if !self.options.enabled {
            self.stats.granted(units_f, Duration::ZERO);
            self.in_flight = self.in_flight.saturating_add(1);
            return Ok(());
        }
        self.bucket.refill(now);
        let repayable = self.repayable(units_f);
        if repayable
            && self.queue.len() == 0
            && now >= self.pause_until
            && self.bucket.has(units_f)
            && self.has_slot(max_concurrent)
        {
            self.bucket.take(units_f);
            self.stats.granted(units_f, Duration::ZERO);
            self.in_flight = self.in_flight.saturating_add(1);
            return Ok(());
        }
        let wait = self.estimate(self.queue.units(), units_f, now) - now;
        if repayable {
            Err(wait)
        } else {
            Err(wait.saturating_add(self.debt_wait(units_f)))
        }
    }

    /// The most one request may cost: what this process's share of `MaxUnitsPerMinute` gives in
    /// `Burst + MaxWait`, rounded down (`u64::MAX` with `Enabled = false`, which holds nothing
    /// back). A request of that cost, sent from a full bucket at the maximum rate, leaves a debt
    /// the limiter repays in `MaxWait`; a dearer one could not be repaid within `MaxWait` at any
    /// rate, so [`acquire_within`](Self::acquire_within) refuses it with
    /// [`RejectReason::CostAboveLimit`] before anything else. Raise `MaxWait` (or
    /// `MaxUnitsPerMinute`) to admit dearer requests.
    #[must_use]
    pub fn max_cost(&self) -> u64 {
        if !self.options.enabled {
            return u64::MAX;
        }
        let secs = self
            .options
            .burst
            .saturating_add(self.options.max_wait)
            .as_secs_f64();
        let units = self.max_rate() / 60.0 * secs;
        // Float rounding must not take a unit off an exact product; `as` saturates.
        (units + units.max(1.0) * 1e-9).floor() as u64
    }

    /// Whether a request of `units` taken from a full bucket at the current rate leaves a debt
    /// the bucket repays within `MaxWait`: `units ≤ rate × (Burst + MaxWait)`.
    fn repayable(&self, units: f64) -> bool {
        let most =
            self.bucket.capacity() + self.bucket.per_sec() * self.options.max_wait.as_secs_f64();
        units <= most + most.max(1.0) * 1e-6
    }

    /// How long the bucket takes, at the current rate, to repay the debt a request of `units`
    /// leaves when it takes a full bucket.
    fn debt_wait(&self, units: f64) -> Duration {
        let secs = (units - self.bucket.capacity()).max(0.0) / self.bucket.per_sec();
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }

    /// The ticket of the first waiting request, if any.
    pub fn first_waiting(&mut self) -> Option<Ticket> {
        self.queue.front().map(|w| w.ticket)
    }

    /// Takes a request out of the queue (its caller went away). Returns false if it was not
    /// waiting.
    pub fn cancel(&mut self, ticket: Ticket) -> bool {
        self.queue.remove(ticket).is_some()
    }

    /// Gives back units that were granted but not used (a caller went away between the grant and
    /// the send). Its slot among the requests in flight is given back by
    /// [`landed`](Self::landed).
    pub fn refund(&mut self, units: u64, now: Timestamp) {
        if self.options.enabled {
            self.bucket.refill(now);
            self.bucket.give_back(units as f64);
        }
        self.stats.refunded(units as f64);
    }

    /// Whether a [`Priority::Batch`] request is waiting.
    #[must_use]
    pub fn has_batch_waiting(&self) -> bool {
        self.queue.has_batch()
    }

    /// Whether `ticket` is still waiting.
    #[must_use]
    pub fn is_waiting(&self, ticket: Ticket) -> bool {
        self.queue.contains(ticket)
    }

    /// Whether `ticket` is the first waiting request (the one whose timer matters).
    pub fn is_first(&mut self, ticket: Ticket) -> bool {
        self.queue.is_front(ticket)
    }

    /// When a request of `units` behind `ahead` waiting units would get its units at the current
    /// rate: after any pause, once the bucket has given everything ahead plus what it needs.
    pub(super) fn estimate(&self, ahead: f64, units: f64, now: Timestamp) -> Timestamp {
        if !self.options.enabled {
            return now;
        }
        let start = now.max(self.pause_until);
        self.bucket
            .time_to_reach(start, ahead + self.bucket.need(units))
    }

    /// Refuses every waiting request that can no longer get its units before the time it may
    /// wait ends, at the current rate and in the order the queue serves: after
    /// [`acquire_with_priority`](Self::acquire_with_priority) put an interactive request ahead
    /// of batch requests. Cuts and pauses do it themselves.
    pub fn refuse_unreachable(&mut self, now: Timestamp) -> Changes {
        let mut changes = Changes::default();
        self.reject_unreachable(now, &mut changes);
        changes
    }

    /// Refuses every waiting request that can no longer get its units before its deadline, or
    /// whose debt would outlast `MaxWait` at the current rate.
    pub(super) fn reject_unreachable(&mut self, now: Timestamp, changes: &mut Changes) {
        let mut ahead = 0.0;
        let mut doomed: Vec<(Waiter, Timestamp)> = Vec::new();
        for w in self.queue.iter() {
            let at = self.estimate(ahead, w.units, now);
            if !self.repayable(w.units) {
                // At the lower rate its debt would outlast `MaxWait`.
                doomed.push((w.clone(), at.saturating_add(self.debt_wait(w.units))));
            } else if at > w.deadline {
                doomed.push((w.clone(), at));
            } else {
                ahead += w.units;
            }
        }
        for (w, at) in doomed {
            self.queue.remove(w.ticket);
            self.stats.rejected_wait += 1;
            changes.rejected.push((
                w.ticket,
                RejectReason::WaitTooLong {
                    cause: WaitCause::Queue,
                    needed: at - w.enqueued_at,
                    max_wait: w.deadline - w.enqueued_at,
                },
            ));
        }
    }

    /// Sets the rate (units per minute for this process), resizing the bucket.
    pub(super) fn set_rate(&mut self, rate: f64, now: Timestamp) {
        self.rate = rate;
        self.bucket
            .set_rate(rate, self.options.burst.as_secs_f64(), now);
    }

    /// Moves the rate to `target` within `[min, max]`, recording the change.
    pub(super) fn set_rate_for(
        &mut self,
        target: f64,
        reason: RateChangeReason,
        now: Timestamp,
        changes: &mut Changes,
    ) {
        if target.is_nan() {
            return;
        }
        let previous = self.rate;
        let rate = target.clamp(self.min_rate(), self.max_rate());
        if rate != previous {
            self.set_rate(rate, now);
            changes.rate_moved(previous, rate, reason);
        }
    }

    /// This process's share of a whole-budget value.
    pub(super) fn share(&self, whole_budget: f64) -> f64 {
        self.options.share(whole_budget, self.instance_count)
    }

    pub(super) fn min_rate(&self) -> f64 {
        self.share(self.options.min_units_per_minute)
    }

    pub(super) fn max_rate(&self) -> f64 {
        self.share(self.options.max_units_per_minute)
    }

    /// What the controller is told at `now` (on a throttle, with its `Retry-After`).
    pub(super) fn context(
        &self,
        now: Timestamp,
        retry_after: Option<Duration>,
    ) -> ControllerContext {
        let bounds = (self.rate, self.min_rate(), self.max_rate());
        let initial = self.share(self.control.initial_whole);
        let mut cx = self.control.context(now, bounds, initial, self.pause_until);
        cx.instance_count = self.instance_count;
        cx.measured_send_rate = self.meter.per_minute();
        cx.retry_after = retry_after;
        cx.queued_units = self.queue.units();
        cx.quota_window = self.options.quota_window;
        cx
    }

    /// The options in force.
    #[must_use]
    pub fn options(&self) -> &LimiterOptions {
        &self.options
    }

    /// The current rate, in units per minute for this process.
    #[must_use]
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Whether the limiter limits: true from the first request with `InitialUnitsPerMinute`
    /// set, otherwise from the first throttle signal on (see
    /// [`LimiterOptions::initial_units_per_minute`]). Until then the rate is the maximum.
    #[must_use]
    pub fn is_limiting(&self) -> bool {
        self.control.limiting
    }

    /// Ends the unlimited start at a throttle signal: the rate starts from the measured send
    /// rate, within `[min, max]`. Before the meter's first half-second has ended, from the
    /// units counted so far over the time since the period began (at least half a second).
    pub(super) fn start_limiting(&mut self, now: Timestamp, changes: &mut Changes) {
        if self.control.limiting {
            return;
        }
        let measured = self.meter.per_minute_at(now);
        let rate = measured.clamp(self.min_rate(), self.max_rate());
        self.control.start(rate, self.instance_count, now);
        let previous = self.rate;
        self.set_rate(rate, now);
        // Noted even when the rate stays the maximum: it is held to now.
        changes.rate_moved(previous, rate, RateChangeReason::Measured);
        changes.started_limiting = true;
    }

    /// The number of requests waiting.
    #[must_use]
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// Until when a Retry-After pause holds requests back, if one is on at `now`.
    #[must_use]
    pub fn paused_until(&self, now: Timestamp) -> Option<Timestamp> {
        (self.pause_until > now).then_some(self.pause_until)
    }
}

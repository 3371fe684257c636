//! The async shell: a [`LimiterCore`] behind a lock, a clock to read and to sleep on, and wakers.

use super::{
    BarePause, Changes, Feedback, LimiterCore, LimiterOptions, LimiterSnapshot, RateChangeReason,
    ServerQuota, Ticket,
};
use crate::controller::Controller;
use crate::validation::{InvalidOption, InvalidOptions};
use crate::{Clock, RealClock, RejectReason, Timestamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

mod acquire;

use acquire::Holder;
pub use acquire::{Acquire, Permit};

/// An adaptive limiter for async code. Cheap to clone: clones share one limiter.
///
/// [`acquire`](Limiter::acquire) waits for units in FIFO order within its [`Priority`](crate::Priority) lane
/// ([`Acquire::priority`]); [`on_response`](Limiter::on_response)
/// feeds each response back so the rate adapts. Waiting futures wake when their units are there,
/// when the rate is raised, and when a cut or a pause means they cannot be served in time (they
/// are then refused). Dropping a waiting future frees its place in the queue, and gives back the
/// units if they had been granted but not yet collected.
///
/// Each permit of at least one unit is a request in flight until [`landed`](Limiter::landed)
/// is called for it: with `MaxConcurrent` set, a request waits until fewer than that many are
/// in flight, and a released slot wakes it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use pacer_core::{Feedback, Limiter, LimiterOptions, Signal};
///
/// let limiter = Limiter::new(LimiterOptions::default()).unwrap();
/// let permit = limiter.acquire(1).await.unwrap();
/// // … send the request …
/// limiter.landed();
/// let _ = limiter.on_response(Feedback {
///     units: 1,
///     sent_at: permit.granted_at(),
///     signal: Signal::Success,
/// });
/// # }
/// ```
#[derive(Clone)]
pub struct Limiter {
    shared: Arc<Shared>,
}

struct Shared {
    name: Arc<str>,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

struct State {
    core: LimiterCore,
    slots: HashMap<Ticket, Slot>,
    /// The first waiter, once its future has armed a timer for its grant.
    armed: Option<Ticket>,
}

struct Slot {
    waker: Waker,
    outcome: Option<Result<Duration, RejectReason>>,
}

/// Builds a [`Limiter`] with a clock, a controller or a name of your choice.
#[must_use]
pub struct LimiterBuilder {
    options: LimiterOptions,
    clock: Option<Arc<dyn Clock>>,
    controller: Option<Box<dyn Controller>>,
    name: Arc<str>,
}

impl fmt::Debug for LimiterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimiterBuilder")
            .field("options", &self.options)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LimiterBuilder {
    /// The clock to read and sleep on. Default [`RealClock`].
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// A controller of your own instead of the one the `Controller` option selects. (A
    /// [`RateController`](crate::RateController) runs in a
    /// [`PureController`](crate::PureController).)
    pub fn controller(mut self, controller: Box<dyn Controller>) -> Self {
        self.controller = Some(controller);
        self
    }

    /// The name in logs and metrics. Default `default`.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// Validates the options and builds the limiter.
    pub fn build(self) -> Result<Limiter, InvalidOptions> {
        let clock = self.clock.unwrap_or_else(|| Arc::new(RealClock::new()));
        let now = clock.now();
        let core = match self.controller {
            Some(c) => LimiterCore::with_controller(self.options, c, now)?,
            None => LimiterCore::new(self.options, now)?,
        };
        Ok(Limiter {
            shared: Arc::new(Shared {
                name: self.name,
                clock,
                state: Mutex::new(State {
                    core,
                    slots: HashMap::new(),
                    armed: None,
                }),
            }),
        })
    }
}

impl Limiter {
    /// A limiter on the real clock with the controller its options select.
    pub fn new(options: LimiterOptions) -> Result<Self, InvalidOptions> {
        Limiter::builder(options).build()
    }

    /// A builder, to choose a clock, a controller or a name.
    pub fn builder(options: LimiterOptions) -> LimiterBuilder {
        LimiterBuilder {
            options,
            clock: None,
            controller: None,
            name: Arc::from("default"),
        }
    }

    /// Waits for `units`, at most `MaxWait`. Resolves to a [`Permit`], or to a [`RejectReason`] at once
    /// if the queue is full or the wait would be too long.
    pub fn acquire(&self, units: u64) -> Acquire<'_> {
        Acquire::new(Holder::Borrowed(self), units, None)
    }

    /// Waits for `units`, at most `max_wait` (for a caller with its own budget).
    pub fn acquire_within(&self, units: u64, max_wait: Duration) -> Acquire<'_> {
        Acquire::new(Holder::Borrowed(self), units, Some(max_wait))
    }

    /// Like [`acquire`](Self::acquire), but the future owns a clone of the limiter, so it can be
    /// spawned.
    pub fn acquire_owned(&self, units: u64) -> Acquire<'static> {
        Acquire::new(Holder::Owned(self.clone()), units, None)
    }

    /// Like [`acquire_within`](Self::acquire_within), owning a clone of the limiter.
    pub fn acquire_owned_within(&self, units: u64, max_wait: Duration) -> Acquire<'static> {
        Acquire::new(Holder::Owned(self.clone()), units, Some(max_wait))
    }

    /// Takes `units` only if they can go right now; otherwise returns the estimated wait and
    /// changes nothing (see [`LimiterCore::try_take`]).
    pub fn try_acquire(&self, units: u64) -> Result<Permit, Duration> {
        self.try_acquire_at(units, None, self.shared.clock.now())
    }

    /// [`try_acquire`](Self::try_acquire) at `now`, read from the limiter's clock by the caller,
    /// for a request with its own cap on requests in flight, if any.
    pub(crate) fn try_acquire_at(
        &self,
        units: u64,
        max_concurrent: Option<NonZeroU32>,
        now: Timestamp,
    ) -> Result<Permit, Duration> {
        (self.shared.state.lock().core).try_take_capped(units, max_concurrent, now)?;
        Ok(Permit {
            waited: Duration::ZERO,
            granted_at: now,
        })
    }

    /// Gives back what a caller was granted but will not use (the request was not sent after
    /// all): its units, and its slot among the requests in flight ([`landed`](Self::landed));
    /// waiting requests may then go sooner.
    pub fn refund(&self, units: u64) {
        let Ok(_) = self.apply(self.shared.clock.now(), |core, now| {
            core.refund(units, now);
            Ok::<_, Infallible>((Changes::default(), core.landed()))
        });
    }

    /// A request granted earlier landed: it was answered, its send failed, or it was never
    /// sent. Its slot among the requests in flight is free again, and a request that waited
    /// for one (`MaxConcurrent`) is woken. Call it once for every permit of at least one unit
    /// (see [`LimiterCore::landed`]); the engine's drivers do.
    pub fn landed(&self) {
        let Ok(_) = self.apply(self.shared.clock.now(), |core, _| {
            Ok::<_, Infallible>((Changes::default(), core.landed()))
        });
    }

    /// [`landed`](Self::landed) and [`on_response`](Self::on_response) at `now` under one lock:
    /// what the engine does with a response.
    pub(crate) fn landed_with_response_at(
        &self,
        feedback: Feedback,
        bare: BarePause,
        now: Timestamp,
    ) -> Changes {
        let Ok(changes) = self.apply(now, |core, now| {
            let unblocked = core.landed();
            Ok::<_, Infallible>((core.respond(feedback, bare, now), unblocked))
        });
        changes
    }

    /// Sets the rate from a fleet's share (see [`LimiterCore::set_share`]).
    pub fn set_share(&self, rate: f64) -> Changes {
        let Ok(changes) = self.mutate(|core, now| Ok::<_, Infallible>(core.set_share(rate, now)));
        changes
    }

    /// Tells the limiter how a request went (see [`LimiterCore::on_response`]).
    pub fn on_response(&self, feedback: Feedback) -> Changes {
        self.on_response_at(feedback, BarePause::Take, self.shared.clock.now())
    }

    /// [`on_response`](Self::on_response) at `now`, read from the limiter's clock by the caller,
    /// `bare` saying whether a throttle without `Retry-After` takes `PauseWithoutRetryAfter`.
    pub(crate) fn on_response_at(
        &self,
        feedback: Feedback,
        bare: BarePause,
        now: Timestamp,
    ) -> Changes {
        let Ok(changes) = self.mutate_at(now, |core, now| {
            Ok::<_, Infallible>(core.respond(feedback, bare, now))
        });
        changes
    }

    /// Sets the rate from the server's own numbers (see [`LimiterCore::follow_server`]). Call it
    /// with each response's numbers, before [`on_response`](Self::on_response).
    pub fn follow_server(&self, quota: ServerQuota) -> Changes {
        self.follow_server_at(quota, self.shared.clock.now())
    }

    /// [`follow_server`](Self::follow_server) at `now`, read from the limiter's clock by the
    /// caller.
    pub(crate) fn follow_server_at(&self, quota: ServerQuota, now: Timestamp) -> Changes {
        let Ok(changes) = self.mutate_at(now, |core, now| {
            Ok::<_, Infallible>(core.follow_server(quota, now))
        });
        changes
    }

    /// Whether the rate follows the server's numbers now.
    #[must_use]
    pub fn is_following_server(&self) -> bool {
        let now = self.shared.clock.now();
        self.shared.state.lock().core.is_following_server(now)
    }

    /// Holds every request back until `until` (see [`LimiterCore::pause_until`]).
    pub fn pause_until(&self, until: Timestamp) -> Changes {
        let Ok(changes) =
            self.mutate(|core, now| Ok::<_, Infallible>(core.pause_until(until, now)));
        changes
    }

    /// Sets the number of processes that share the budget (see
    /// [`LimiterCore::set_instance_count`]).
    pub fn set_instance_count(&self, count: u32) -> Result<Changes, InvalidOption> {
        self.mutate(|core, now| core.set_instance_count(count, now))
    }

    /// Replaces the options of the running limiter (see [`LimiterCore::update_options`]).
    pub fn update_options(&self, options: LimiterOptions) -> Result<Changes, InvalidOptions> {
        // A new `MaxConcurrent` or `Enabled` may free the first waiter's slot: its timer is
        // looked at again.
        self.apply(self.shared.clock.now(), |core, now| {
            core.update_options(options, now).map(|c| (c, true))
        })
    }

    /// The limiter's state now.
    #[must_use]
    pub fn snapshot(&self) -> LimiterSnapshot {
        let now = self.shared.clock.now();
        self.shared.state.lock().core.snapshot(now)
    }

    /// The number of processes that share the budget now ([`LimiterOptions::instance_count`],
    /// or the live count).
    #[must_use]
    pub fn instance_count(&self) -> u32 {
        self.shared.state.lock().core.instance_count
    }

    /// The number of requests waiting for units now.
    #[must_use]
    pub fn queue_len(&self) -> usize {
        self.shared.state.lock().core.queue_len()
    }

    /// Whether requests wait, or, under `MaxConcurrent`, are in flight: an endpoint that is
    /// busy is not evicted (its count of requests in flight would be lost).
    pub(crate) fn is_busy(&self) -> bool {
        let st = self.shared.state.lock();
        st.core.queue_len() > 0
            || (st.core.options().max_concurrent.is_some() && st.core.in_flight() > 0)
    }

    /// The current rate, in units per minute for this process.
    #[must_use]
    pub fn rate(&self) -> f64 {
        self.shared.state.lock().core.rate()
    }

    /// What it learnt (see [`LimiterCore::memory`]); `None` before it limits.
    #[must_use]
    pub fn memory(&self) -> Option<super::LimiterMemory> {
        self.shared.state.lock().core.memory()
    }

    /// Starts from what a limiter of an earlier process learnt (see [`LimiterCore::recall`]).
    pub fn recall(&self, memory: &super::LimiterMemory) -> Changes {
        let Ok(changes) = self.mutate(|core, now| Ok::<_, Infallible>(core.recall(memory, now)));
        changes
    }

    /// Whether it holds requests to its rate: from the first throttle signal on, or from the
    /// start with `InitialUnitsPerMinute` ([`LimiterCore::is_limiting`]).
    #[must_use]
    pub fn is_limiting(&self) -> bool {
        self.shared.state.lock().core.is_limiting()
    }

    /// The most one request may cost now (see [`LimiterCore::max_cost`]); a dearer one is
    /// refused with [`RejectReason::CostAboveLimit`].
    #[must_use]
    pub fn max_cost(&self) -> u64 {
        self.shared.state.lock().core.max_cost()
    }

    /// The options in force.
    #[must_use]
    pub fn options(&self) -> LimiterOptions {
        self.shared.state.lock().core.options().clone()
    }

    /// The limiter's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The limiter's clock.
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.shared.clock
    }

    /// How many waiter slots the shell holds (tests check that nothing leaks).
    #[cfg(test)]
    pub(crate) fn waiting_slots(&self) -> usize {
        self.shared.state.lock().slots.len()
    }

    /// Runs a change on the core, then serves, refuses and wakes waiters as it requires.
    fn mutate<E>(
        &self,
        f: impl FnOnce(&mut LimiterCore, Timestamp) -> Result<Changes, E>,
    ) -> Result<Changes, E> {
        self.mutate_at(self.shared.clock.now(), f)
    }

    /// [`mutate`](Self::mutate) at `now`.
    fn mutate_at<E>(
        &self,
        now: Timestamp,
        f: impl FnOnce(&mut LimiterCore, Timestamp) -> Result<Changes, E>,
    ) -> Result<Changes, E> {
        self.apply(now, |core, now| f(core, now).map(|c| (c, false)))
    }

    /// [`mutate_at`](Self::mutate_at) for a change that also says whether the first waiter's
    /// timer is out of date (a slot came free).
    fn apply<E>(
        &self,
        now: Timestamp,
        f: impl FnOnce(&mut LimiterCore, Timestamp) -> Result<(Changes, bool), E>,
    ) -> Result<Changes, E> {
        let mut wake = Vec::new();
        let changes = {
            let mut st = self.shared.state.lock();
            let (changes, stale) = f(&mut st.core, now)?;
            if stale || changes.rate.is_some() || changes.paused_until.is_some() {
                // The first waiter's timer is out of date: make it look again.
                st.armed = None;
            }
            st.settle(&changes, now, None, &mut wake);
            changes
        };
        self.log(&changes);
        wake.into_iter().for_each(Waker::wake);
        Ok(changes)
    }

    /// Logs what changed (most calls without rate-limit fields change nothing: that check is
    /// inlined).
    #[inline]
    fn log(&self, changes: &Changes) {
        if !changes.is_empty() {
            self.log_changes(changes);
        }
    }

    fn log_changes(&self, changes: &Changes) {
        if let Some(c) = changes.rate {
            if c.reason == RateChangeReason::Server {
                // Every response with rate-limit headers moves it: not news.
                tracing::debug!(
                    limiter = %self.shared.name,
                    rate = c.rate,
                    previous_rate = c.previous,
                    reason = c.reason.as_str(),
                    "rate changed"
                );
            } else {
                tracing::info!(
                    limiter = %self.shared.name,
                    rate = c.rate,
                    previous_rate = c.previous,
                    reason = c.reason.as_str(),
                    "rate changed"
                );
            }
        }
        if let Some(until) = changes.paused_until {
            let pause = until - self.shared.clock.now();
            tracing::info!(
                limiter = %self.shared.name,
                pause_ms = pause.as_millis() as u64,
                "pause started"
            );
        }
        for (_, rejected) in &changes.rejected {
            tracing::debug!(
                limiter = %self.shared.name,
                reason = rejected.kind(),
                "waiting request refused: {rejected}"
            );
        }
    }
}

impl State {
    /// Hands outcomes to refused and ready waiters, and makes sure the first waiter has a timer
    /// (waking it unless it is the one `polling` right now).
    #[inline]
    fn settle(
        &mut self,
        changes: &Changes,
        now: Timestamp,
        polling: Option<Ticket>,
        wake: &mut Vec<Waker>,
    ) {
        if changes.rejected.is_empty() && self.armed.is_none() && self.core.queue_len() == 0 {
            // Nobody waits: nothing to hand out, no timer to arm (most responses).
            return;
        }
        self.settle_waiters(changes, now, polling, wake);
    }

    fn settle_waiters(
        &mut self,
        changes: &Changes,
        now: Timestamp,
        polling: Option<Ticket>,
        wake: &mut Vec<Waker>,
    ) {
        for (ticket, rejected) in &changes.rejected {
            self.finish(*ticket, Err(rejected.clone()), wake);
        }
        loop {
            while let Some((ticket, waited)) = self.core.pop_ready(now) {
                self.finish(ticket, Ok(waited), wake);
            }
            // Waiters held by a cap on requests in flight past their time (none without one).
            let expired = self.core.refuse_expired(now);
            if expired.rejected.is_empty() {
                break;
            }
            for (ticket, rejected) in expired.rejected {
                self.finish(ticket, Err(rejected), wake);
            }
        }
        let first = self.core.first_waiting();
        if first != self.armed {
            self.armed = None;
            if first != polling
                && let Some(slot) = first.and_then(|t| self.slots.get(&t))
            {
                wake.push(slot.waker.clone());
            }
        }
    }

    fn finish(
        &mut self,
        ticket: Ticket,
        outcome: Result<Duration, RejectReason>,
        wake: &mut Vec<Waker>,
    ) {
        if self.armed == Some(ticket) {
            self.armed = None;
        }
        if let Some(slot) = self.slots.get_mut(&ticket) {
            slot.outcome = Some(outcome);
            wake.push(slot.waker.clone());
        }
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.state.lock();
        f.debug_struct("Limiter")
            .field("name", &self.shared.name)
            .field("rate", &st.core.rate())
            .field("queue_len", &st.core.queue_len())
            .finish_non_exhaustive()
    }
}

//! A fleet member for an async driver: the member behind a lock, the task that talks to the
//! store beside the requests, and what it tells the endpoint's limiter.

use super::{
    DrawRequest, Drawn, FleetCall, FleetError, FleetLink, FleetMember, FleetStore, Gauges,
};
use crate::limiter::BarePause;
use crate::{Changes, Clock, Feedback, Limiter, LimiterCore, Signal, Sleep, Timestamp};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::Poll;
use tokio::sync::Notify;

/// A limiter a fleet member steers: the live member count, its share of the fleet's rate, the
/// fleet's stop. Implemented by [`LimiterCore`] (the simulator's) and [`Limiter`].
pub trait Steered {
    /// [`LimiterCore::set_instance_count`].
    fn steer_instances(&mut self, count: u32, now: Timestamp) -> Changes;
    /// [`LimiterCore::set_share`].
    fn steer_share(&mut self, rate: f64, now: Timestamp) -> Changes;
    /// [`LimiterCore::pause_until`].
    fn steer_pause(&mut self, until: Timestamp, now: Timestamp) -> Changes;
    /// The units waiting in the limiter's queue.
    fn steer_queued(&self, now: Timestamp) -> f64;
}

impl Steered for LimiterCore {
    fn steer_instances(&mut self, count: u32, now: Timestamp) -> Changes {
        self.set_instance_count(count, now).unwrap_or_default()
    }

    fn steer_share(&mut self, rate: f64, now: Timestamp) -> Changes {
        self.set_share(rate, now)
    }

    fn steer_pause(&mut self, until: Timestamp, now: Timestamp) -> Changes {
        self.pause_until(until, now)
    }

    fn steer_queued(&self, now: Timestamp) -> f64 {
        self.snapshot(now).queued_units
    }
}

impl Steered for &Limiter {
    fn steer_instances(&mut self, count: u32, _now: Timestamp) -> Changes {
        self.set_instance_count(count).unwrap_or_default()
    }

    fn steer_share(&mut self, rate: f64, _now: Timestamp) -> Changes {
        self.set_share(rate)
    }

    fn steer_pause(&mut self, until: Timestamp, _now: Timestamp) -> Changes {
        self.pause_until(until)
    }

    fn steer_queued(&self, _now: Timestamp) -> f64 {
        self.snapshot().queued_units
    }
}

impl FleetMember {
    /// Tells `limiter` what the member knows at `now`: the live count (when it differs from
    /// `*counted`, which it then becomes), the member's share of the fleet's rate (and `link`
    /// follows), or, when the store has been quiet for `fallback_after`, that the limiter's own
    /// controller runs (`link` falls back, with its part of the fleet's estimate,
    /// [`fallback_estimate`](Self::fallback_estimate)); and the fleet's stop. While the fleet's
    /// rate is in force, `link` also carries the window the fleet's controller learnt
    /// ([`server_window`](Self::server_window)), which caps the limiter's pause after a bare
    /// throttle.
    pub fn steer(
        &self,
        link: &FleetLink,
        counted: &mut u32,
        limiter: &mut impl Steered,
        now: Timestamp,
    ) -> Changes {
        let mut changes = Changes::default();
        let members = self.members();
        if members != *counted {
            *counted = members;
            changes.merge(limiter.steer_instances(members, now));
        }
        // A member that switches to the pool with requests waiting in its own queue keeps its
        // even share until they are gone: at the whole rate they would all go at once.
        let share = match self.share(now) {
            Some(_) if self.draws(now) && limiter.steer_queued(now) > 0.0 => self.own_share(),
            share => share,
        };
        match share {
            Some(share) => {
                link.follow();
                link.set_server_window(self.server_window());
                changes.merge(limiter.steer_share(share, now));
            }
            None if !self.is_in_force(now) => link.fall_back(self.fallback_estimate()),
            None => {}
        }
        if let Some(until) = self.pause_until(now) {
            changes.merge(limiter.steer_pause(until, now));
        }
        changes
    }
}

/// One endpoint's member of its fleet, shared by the requests (which report to it) and the task
/// that syncs it with the store ([`FleetHandle::run`]). The endpoint holds the handle; the task
/// holds it weakly, and ends (leaving the fleet) once the endpoint is gone.
#[derive(Debug)]
pub struct FleetHandle {
    member: Mutex<Steering>,
    link: Arc<FleetLink>,
    /// The store the task syncs with (set by [`run`](Self::run)), for the requests' draws from
    /// the fleet's pool.
    store: std::sync::OnceLock<Arc<dyn FleetStore>>,
    /// Wakes the task: a throttle to report.
    wake: Arc<Notify>,
}

#[derive(Debug)]
struct Steering {
    member: FleetMember,
    counted: u32,
}

impl FleetHandle {
    /// A handle of `member`, whose limiter's controller follows `link`.
    #[must_use]
    pub fn new(member: FleetMember, link: Arc<FleetLink>) -> Arc<Self> {
        Arc::new(FleetHandle {
            member: Mutex::new(Steering { member, counted: 0 }),
            link,
            store: std::sync::OnceLock::new(),
            wake: Arc::new(Notify::new()),
        })
    }

    /// A request asked for `units` at `now`.
    pub fn asked(&self, units: u64, now: Timestamp) {
        self.member.lock().member.on_asked(units, now);
    }

    /// A response came at `now`; a throttle wakes the task, which reports it at once.
    pub fn responded(&self, feedback: &Feedback, now: Timestamp) {
        self.responded_with(feedback, BarePause::Take, now);
    }

    /// [`responded`](Self::responded), `bare` saying whether a throttle without `Retry-After`
    /// stops the members for `PauseWithoutRetryAfter`.
    pub(crate) fn responded_with(&self, feedback: &Feedback, bare: BarePause, now: Timestamp) {
        self.member
            .lock()
            .member
            .record_response(feedback, bare, now);
        if matches!(feedback.signal, Signal::Throttled { .. }) {
            self.wake.notify_one();
        }
    }

    /// The member's share, live count and whether the fleet is in force, at `now`.
    #[must_use]
    pub fn share(&self, now: Timestamp) -> Option<f64> {
        self.member.lock().member.share(now)
    }

    /// The draw a request of `units` that may wait `max_wait` makes from the fleet's pool
    /// before it is sent, when the fleet draws from its pool at `now`
    /// ([`FleetMember::pool`]); `None` before the task runs.
    #[must_use]
    pub fn pool(
        &self,
        units: u64,
        max_wait: std::time::Duration,
        now: Timestamp,
    ) -> Option<DrawRequest> {
        self.store.get()?;
        self.member.lock().member.pool(units, max_wait, now)
    }

    /// Whether a request at `now` draws from the fleet's pool ([`FleetMember::draws`]); never
    /// before the task runs.
    #[must_use]
    pub fn draws(&self, now: Timestamp) -> bool {
        self.store.get().is_some() && self.member.lock().member.draws(now)
    }

    /// Draws `request`'s units from the fleet's pool, within the member's `Timeout`
    /// ([`FleetStore::draw`]). When the store does not answer, the task is woken to put the
    /// member's share back on its limiter at once.
    pub async fn draw(&self, request: &DrawRequest, clock: &dyn Clock) -> Drawn {
        let Some(store) = self.store.get() else {
            return Drawn::Unanswered;
        };
        let (key, timeout) = {
            let s = self.member.lock();
            (s.member.key().to_owned(), s.member.options().timeout)
        };
        let deadline = clock.sleep_until(clock.now().saturating_add(timeout));
        let answer = within_answer(deadline, store.draw(&key, request)).await;
        let drawn = match &answer {
            Some(Ok(reply)) => self.member.lock().member.on_draw(Ok(*reply)),
            Some(Err(e)) => self.member.lock().member.on_draw(Err(e)),
            None => {
                let late = FleetError::unavailable("the pool's draw timed out");
                self.member.lock().member.on_draw(Err(&late))
            }
        };
        if drawn == Drawn::Unanswered {
            self.wake.notify_one();
        }
        drawn
    }

    /// Until when the fleet's stop holds its members, on this member's clock
    /// ([`FleetMember::pause_until`]).
    #[must_use]
    pub fn pause_until(&self, now: Timestamp) -> Option<Timestamp> {
        self.member.lock().member.pause_until(now)
    }

    /// The live member count at the last sync.
    #[must_use]
    pub fn members(&self) -> u32 {
        self.member.lock().member.members()
    }

    /// Whether the live count is settled at `now` ([`FleetMember::count_settled`]).
    #[must_use]
    pub fn count_settled(&self, now: Timestamp) -> bool {
        self.member.lock().member.count_settled(now)
    }

    /// Syncs the member with `store` on `clock` until the handle is dropped, steering `limiter`
    /// by what it learns. Every call is bounded by the member's `timeout`; no request waits on
    /// it. The driver spawns it beside its requests (`tokio::spawn`).
    pub fn run(
        handle: &Arc<FleetHandle>,
        store: Arc<dyn FleetStore>,
        limiter: Limiter,
        clock: Arc<dyn Clock>,
    ) -> impl Future<Output = ()> + Send + 'static + use<> {
        let weak = Arc::downgrade(handle);
        let wake = Arc::clone(&handle.wake);
        let _ = handle.store.set(Arc::clone(&store));
        let (key, id, timeout) = {
            let s = handle.member.lock();
            (
                s.member.key().to_owned(),
                s.member.id().to_owned(),
                s.member.options().timeout,
            )
        };
        async move {
            drive(
                weak,
                wake,
                Arc::clone(&store),
                limiter,
                Arc::clone(&clock),
                &key,
                timeout,
            )
            .await;
            // The endpoint is gone: leave at once rather than when the lease ends (best effort:
            // the lease ends by itself).
            let deadline = clock.sleep_until(clock.now().saturating_add(timeout));
            let _ = within(deadline, store.leave(&key, &id)).await;
        }
    }
}

async fn drive(
    handle: Weak<FleetHandle>,
    wake: Arc<Notify>,
    store: Arc<dyn FleetStore>,
    limiter: Limiter,
    clock: Arc<dyn Clock>,
    key: &str,
    timeout: std::time::Duration,
) {
    loop {
        let Some(h) = handle.upgrade() else {
            return;
        };
        let now = clock.now();
        let snapshot = limiter.snapshot();
        let gauges = Gauges::new(
            snapshot.measured_send_rate.unwrap_or(0.0),
            snapshot.queued_units,
            snapshot.waited || snapshot.queue_len > 0,
        );
        let mut call = h.member.lock().member.poll(gauges, now);
        while let Some(c) = call {
            let sent = clock.now();
            let deadline = clock.sleep_until(sent.saturating_add(timeout));
            let answer = match &c {
                FleetCall::Sync(r) => within(deadline, store.sync(key, r))
                    .await
                    .map(Answer::Synced),
                FleetCall::Commit(r) => within(deadline, store.commit(key, r))
                    .await
                    .map(Answer::Committed),
            };
            let now = clock.now();
            let mut s = h.member.lock();
            call = match answer {
                Some(Answer::Synced(reply)) => s.member.on_sync(reply, sent, now),
                Some(Answer::Committed(reply)) => s.member.on_commit(reply, now),
                None => {
                    s.member.on_failure(now);
                    None
                }
            };
        }
        let now = clock.now();
        {
            let mut guard = h.member.lock();
            let s = &mut *guard;
            let _ = s.member.steer(&h.link, &mut s.counted, &mut &limiter, now);
        }
        let next = h.member.lock().member.next_poll_at();
        drop(h);
        // Until the next sync is due, a throttle is to be reported, or another member's urgent
        // commit is news.
        let news = store.news(key);
        let woke = wake.notified();
        let sleep = clock.sleep_until(next);
        let heard = first_of(sleep, woke, news).await;
        if heard && let Some(h) = handle.upgrade() {
            h.member.lock().member.on_news(clock.now());
        }
    }
}

enum Answer {
    Synced(super::SyncReply),
    Committed(super::CommitReply),
}

/// `call`'s answer, unless `deadline` comes first or the call fails (`None`).
async fn within<T, E>(
    deadline: Sleep,
    call: Pin<Box<dyn Future<Output = Result<T, E>> + Send + '_>>,
) -> Option<T> {
    within_answer(deadline, call).await.and_then(Result::ok)
}

/// A store call's answer, or `None` when `deadline` came first.
async fn within_answer<T, E>(
    deadline: Sleep,
    call: Pin<Box<dyn Future<Output = Result<T, E>> + Send + '_>>,
) -> Option<Result<T, E>> {
    let (mut deadline, mut call) = (deadline, call);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(result) = call.as_mut().poll(cx) {
            return Poll::Ready(Some(result));
        }
        deadline.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// Waits for the first of a sleep, a wake and the news; true if it was the news.
async fn first_of(
    sleep: Sleep,
    woke: impl Future<Output = ()>,
    news: Pin<Box<dyn Future<Output = ()> + Send + '_>>,
) -> bool {
    let (mut sleep, mut news) = (sleep, news);
    let mut woke = std::pin::pin!(woke);
    std::future::poll_fn(|cx| {
        if news.as_mut().poll(cx).is_ready() {
            return Poll::Ready(true);
        }
        if woke.as_mut().poll(cx).is_ready() || sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(false);
        }
        Poll::Pending
    })
    .await
}

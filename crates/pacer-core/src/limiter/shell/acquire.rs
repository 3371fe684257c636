//! The future that waits for a request's units ([`Acquire`]) and the proof that it got them
//! ([`Permit`]).

use super::super::{Acquired, Changes, Priority, Ticket};
use super::{Limiter, Shared, Slot};
use crate::RejectReason;
use crate::{Sleep, Timestamp};
use std::fmt;
use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Proof that a request got its units (and, for at least one unit, a slot among the requests in
/// flight until [`Limiter::landed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "send the request, then report its response with the permit's `granted_at`"]
pub struct Permit {
    pub(super) waited: Duration,
    pub(super) granted_at: Timestamp,
}

impl Permit {
    /// How long the request waited for its units.
    #[must_use]
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// When the units were granted, on the limiter's clock: report it as
    /// [`Feedback::sent_at`](crate::Feedback::sent_at).
    #[must_use]
    pub fn granted_at(&self) -> Timestamp {
        self.granted_at
    }
}

/// The future of [`Limiter::acquire`] (borrowing the limiter) and [`Limiter::acquire_owned`].
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire<'a> {
    limiter: Holder<'a>,
    units: u64,
    /// `None`: the limiter's `MaxWait`.
    max_wait: Option<Duration>,
    priority: Priority,
    /// The request's own cap on requests in flight, if any.
    max_concurrent: Option<NonZeroU32>,
    step: Step,
    sleep: Option<(Timestamp, Sleep)>,
}

pub(super) enum Holder<'a> {
    Borrowed(&'a Limiter),
    Owned(Limiter),
}

impl Holder<'_> {
    fn shared(&self) -> &Shared {
        match self {
            Holder::Borrowed(l) => &l.shared,
            Holder::Owned(l) => &l.shared,
        }
    }
}

impl<'a> Acquire<'a> {
    pub(super) fn new(limiter: Holder<'a>, units: u64, max_wait: Option<Duration>) -> Self {
        Acquire {
            limiter,
            units,
            max_wait,
            priority: Priority::Interactive,
            max_concurrent: None,
            step: Step::Start,
            sleep: None,
        }
    }

    /// Waits in the queue's `priority` lane (default [`Priority::Interactive`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use pacer_core::{Limiter, LimiterOptions, Priority};
    ///
    /// let limiter = Limiter::new(LimiterOptions::default()).unwrap();
    /// let permit = limiter.acquire(1).priority(Priority::Batch).await.unwrap();
    /// # let _ = permit;
    /// # }
    /// ```
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Waits, besides its units, until fewer than `max_concurrent` requests are in flight
    /// (the request's own [`MaxConcurrent`](crate::MaxConcurrent); the limiter's
    /// `MaxConcurrent` applies as well). Default: the limiter's cap alone.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use pacer_core::{Limiter, LimiterOptions};
    /// use std::num::NonZeroU32;
    ///
    /// let limiter = Limiter::new(LimiterOptions::default()).unwrap();
    /// let one = NonZeroU32::MIN;
    /// let first = limiter.acquire(1).max_concurrent(one).await.unwrap();
    /// // … sent; the second would wait for it, until its answer:
    /// limiter.landed();
    /// let second = limiter.acquire(1).max_concurrent(one).await.unwrap();
    /// # let _ = (first, second);
    /// # }
    /// ```
    pub fn max_concurrent(mut self, max_concurrent: NonZeroU32) -> Self {
        self.max_concurrent = Some(max_concurrent);
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Start,
    Waiting(Ticket),
    Done,
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("units", &self.units)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl Future for Acquire<'_> {
    type Output = Result<Permit, RejectReason>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            let shared = this.limiter.shared();
            let now = shared.clock.now();
            let mut wake = Vec::new();
            let mut st = shared.state.lock();
            let ticket = match this.step {
                Step::Done => panic!("`Acquire` polled after completion"),
                Step::Waiting(ticket) => ticket,
                Step::Start => {
                    let max_wait = this.max_wait.unwrap_or(st.core.options().max_wait);
                    let acquired = st.core.acquire_capped(
                        this.units,
                        max_wait,
                        this.priority,
                        this.max_concurrent,
                        now,
                    );
                    match acquired {
                        Ok(Acquired::Now) => {
                            this.step = Step::Done;
                            return Poll::Ready(Ok(Permit {
                                waited: Duration::ZERO,
                                granted_at: now,
                            }));
                        }
                        Err(rejected) => {
                            this.step = Step::Done;
                            drop(st);
                            tracing::debug!(
                                limiter = %shared.name,
                                reason = rejected.kind(),
                                "request refused: {rejected}"
                            );
                            return Poll::Ready(Err(rejected));
                        }
                        Ok(Acquired::Queued { ticket, .. }) => {
                            st.slots.insert(
                                ticket,
                                Slot {
                                    waker: cx.waker().clone(),
                                    outcome: None,
                                },
                            );
                            this.step = Step::Waiting(ticket);
                            if st.core.expires_first(ticket) {
                                // Under a cap on requests in flight, its deadline is the first
                                // waiter's timer now.
                                st.armed = None;
                            }
                            if this.priority == Priority::Interactive && st.core.has_batch_waiting()
                            {
                                // It may have pushed batch requests past their time.
                                let changes = st.core.refuse_unreachable(now);
                                st.settle(&changes, now, Some(ticket), &mut wake);
                            }
                            ticket
                        }
                    }
                }
            };
            st.settle(&Changes::default(), now, Some(ticket), &mut wake);
            let slot = st
                .slots
                .get_mut(&ticket)
                .expect("a waiting ticket has a slot");
            if let Some(outcome) = slot.outcome.take() {
                st.slots.remove(&ticket);
                drop(st);
                wake.into_iter().for_each(Waker::wake);
                this.step = Step::Done;
                this.sleep = None;
                return Poll::Ready(outcome.map(|waited| Permit {
                    waited,
                    granted_at: now,
                }));
            }
            slot.waker.clone_from(cx.waker());
            let deadline = if st.core.is_first(ticket) {
                st.armed = Some(ticket);
                st.core.next_grant_at(now)
            } else {
                None
            };
            drop(st);
            wake.into_iter().for_each(Waker::wake);
            let Some(deadline) = deadline else {
                this.sleep = None;
                return Poll::Pending;
            };
            if this.sleep.as_ref().is_none_or(|(at, _)| *at != deadline) {
                this.sleep = Some((deadline, shared.clock.sleep_until(deadline)));
            }
            let (_, sleep) = this.sleep.as_mut().expect("just set");
            match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.sleep = None;
                    continue;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Step::Waiting(ticket) = self.step else {
            return;
        };
        let shared = self.limiter.shared();
        let now = shared.clock.now();
        let mut wake = Vec::new();
        {
            let mut st = shared.state.lock();
            match st.slots.remove(&ticket).and_then(|s| s.outcome) {
                Some(Ok(_)) => {
                    // Granted but never collected: its units and its slot go back.
                    st.core.refund(self.units, now);
                    if st.core.landed() {
                        st.armed = None;
                    }
                }
                Some(Err(_)) => {}
                None => {
                    st.core.cancel(ticket);
                }
            }
            if st.armed == Some(ticket) {
                st.armed = None;
            }
            st.settle(&Changes::default(), now, None, &mut wake);
        }
        wake.into_iter().for_each(Waker::wake);
    }
}

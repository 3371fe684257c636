//! The cap on requests in flight (`MaxConcurrent`): slots taken at the grant, given back when
//! the request lands.
//!
//! A rate says nothing of how many requests are out at once, and some servers count that
//! instead (Stripe's concurrency limiter; Bottleneck's `maxConcurrent` and Polly's bulkhead
//! on the client side). The slot is taken with the units, by the same grant, so a request that
//! has its units but no slot keeps its place in the queue; it is given back by one explicit
//! call, [`LimiterCore::landed`], not by the response's feedback, so that a driver can give it
//! back from a guard's `Drop` when a request is abandoned between its grant and its answer.
//! When a slot comes free is not known in advance, so a request that waits for one is refused
//! when the time it may wait ends ([`LimiterCore::refuse_expired`]), not estimated away when it
//! joins.

use super::{Changes, LimiterCore};
use crate::{RejectReason, Timestamp, WaitCause};
use std::num::NonZeroU32;

impl LimiterCore {
    /// A request granted earlier landed: answered, failed, or never sent after all. Its slot
    /// among the requests in flight is free again. Returns whether that lets the first waiting
    /// request go, which waited for a slot: its timer is then out of date (call
    /// [`pop_ready`](Self::pop_ready), and [`next_grant_at`](Self::next_grant_at) again).
    ///
    /// Call it once for every grant of at least one unit ([`try_take`](Self::try_take), an
    /// [`Acquired::Now`](super::Acquired::Now), each ticket [`pop_ready`](Self::pop_ready)
    /// returns); a call with nothing in flight changes nothing.
    #[inline]
    pub fn landed(&mut self) -> bool {
        if !self.slots_matter() {
            // No cap: only the count (every response comes this way).
            self.in_flight = self.in_flight.saturating_sub(1);
            return false;
        }
        self.landed_under_a_cap()
    }

    /// [`landed`](Self::landed) while a cap is in play.
    fn landed_under_a_cap(&mut self) -> bool {
        let blocked = self.first_waits_for_a_slot();
        self.in_flight = self.in_flight.saturating_sub(1);
        blocked && !self.first_waits_for_a_slot()
    }

    /// Requests granted and not yet landed.
    #[must_use]
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Refuses every waiting request whose time to wait has ended, at `now`: while a cap on
    /// requests in flight holds the queue, no rate tells when it moves again, so a request is
    /// refused when the time it may wait ends ([`RejectReason::WaitTooLong`], cause
    /// [`WaitCause::Concurrency`]). Nothing happens while no cap is in play (the estimates
    /// made when requests joined hold then). Call it after [`pop_ready`](Self::pop_ready) has
    /// granted what it could, at the time [`next_grant_at`](Self::next_grant_at) said.
    pub fn refuse_expired(&mut self, now: Timestamp) -> Changes {
        let mut changes = Changes::default();
        if !self.slots_matter() || self.queue.earliest_deadline().is_none_or(|d| d > now) {
            return changes;
        }
        let expired: Vec<_> = self
            .queue
            .iter()
            .filter(|w| w.deadline <= now)
            .map(|w| (w.ticket, w.enqueued_at, w.deadline))
            .collect();
        for (ticket, enqueued_at, deadline) in expired {
            self.queue.remove(ticket);
            self.stats.rejected_wait += 1;
            changes.rejected.push((
                ticket,
                RejectReason::WaitTooLong {
                    cause: WaitCause::Concurrency,
                    needed: now - enqueued_at,
                    max_wait: deadline - enqueued_at,
                },
            ));
        }
        changes
    }

    /// Whether a request whose own cap is `own` may be one more in flight now: under the
    /// limiter's `MaxConcurrent` and its own, and always with `Enabled = false`.
    #[inline]
    pub(super) fn has_slot(&self, own: Option<NonZeroU32>) -> bool {
        let cap = match (self.options.max_concurrent, own) {
            (None, None) => return true,
            (Some(a), Some(b)) => a.min(b),
            (Some(cap), None) | (None, Some(cap)) => cap,
        };
        !self.options.enabled || self.in_flight < cap.get()
    }

    /// Whether a cap on requests in flight is in play: the limiter's, or a waiting request's
    /// own.
    #[inline]
    pub(super) fn slots_matter(&self) -> bool {
        self.options.max_concurrent.is_some() || self.queue.has_capped()
    }

    /// Whether waiting request `ticket`, just queued, moves the first waiter's timer sooner:
    /// while a cap is in play that timer is no later than every waiter's deadline
    /// ([`next_grant_at`](Self::next_grant_at)), and this one's is the earliest.
    pub(super) fn expires_first(&mut self, ticket: super::Ticket) -> bool {
        if !self.slots_matter() || self.queue.is_front(ticket) {
            return false;
        }
        let (mut mine, mut others) = (None, Timestamp::MAX);
        for w in self.queue.iter() {
            if w.ticket == ticket {
                mine = Some(w.deadline);
            } else {
                others = others.min(w.deadline);
            }
        }
        mine.is_some_and(|d| d < others)
    }

    /// Whether the first waiting request waits for a slot.
    fn first_waits_for_a_slot(&mut self) -> bool {
        let cap = match self.queue.front() {
            Some(w) => w.cap,
            None => return false,
        };
        !self.has_slot(cap)
    }
}

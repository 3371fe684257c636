//! The queue of waiting requests, kept as data so the simulator can run it without tokio.
//!
//! Two lanes, [`Priority::Interactive`] and [`Priority::Batch`], each first come, first served.
//! Interactive requests go before queued batch work, but not forever: while both lanes wait, at
//! most [`INTERACTIVE_PER_BATCH`] interactive requests in a row are granted before the oldest
//! batch request is, so batch work keeps at least a fifth of the grants however busy the
//! interactive lane is. The rule counts grants, not time, so it needs no clock and the order
//! the queue will serve its waiters in is known in advance (estimates and refusals use it).

use crate::Timestamp;
use std::collections::VecDeque;
use std::num::NonZeroU32;

/// How many interactive requests in a row may be granted while a batch request waits, before
/// the oldest batch request is granted. Four to one keeps interactive requests well ahead
/// (each waits behind at most a quarter more units than its own lane holds) while batch work
/// still moves at a fifth of the rate or more.
pub const INTERACTIVE_PER_BATCH: u32 = 4;

/// A request's lane in a limiter's queue.
///
/// Requests of one lane are served in arrival order. Interactive requests go before queued batch
/// requests, but while both wait, a batch request is granted after at most
/// [`INTERACTIVE_PER_BATCH`] interactive ones in a row, so batch work is never starved. A batch
/// request can be refused later than it was queued: when interactive requests that arrived after
/// it push its grant past the time it may wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Priority {
    /// A request someone waits for (the default): ahead of queued batch work.
    #[default]
    Interactive,
    /// Background work that may wait behind interactive requests.
    Batch,
}

/// A place in a limiter's queue. Tickets are issued in increasing order, so each lane is sorted by
/// ticket and a cancelled request is found by binary search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(pub(crate) u64);

impl Ticket {
    /// The ticket's number (unique within one limiter).
    #[must_use]
    pub fn get(self) -> u64 {
        self.0
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Waiter {
    pub(crate) ticket: Ticket,
    pub(crate) units: f64,
    pub(crate) enqueued_at: Timestamp,
    pub(crate) deadline: Timestamp,
    /// The request's own cap on requests in flight (its `MaxConcurrent`), if it has one.
    pub(crate) cap: Option<NonZeroU32>,
    live: bool,
}

/// Waiting requests in two lanes, served in the order the module docs describe.
#[derive(Debug, Default, Clone)]
pub(crate) struct WaitQueue {
    interactive: Lane,
    batch: Lane,
    /// Interactive requests granted in a row while a batch request waited.
    streak: u32,
}

impl WaitQueue {
    pub(crate) fn push(
        &mut self,
        ticket: Ticket,
        units: f64,
        priority: Priority,
        enqueued_at: Timestamp,
        deadline: Timestamp,
        cap: Option<NonZeroU32>,
    ) {
        let lane = match priority {
            Priority::Interactive => &mut self.interactive,
            Priority::Batch => &mut self.batch,
        };
        lane.push(ticket, units, enqueued_at, deadline, cap);
    }

    /// Whether the next grant goes to the batch lane.
    fn batch_next(&mut self) -> bool {
        if self.batch.front().is_none() {
            return false;
        }
        self.interactive.front().is_none() || self.streak >= INTERACTIVE_PER_BATCH
    }

    /// The next waiter to be granted (dropping tombstones in front of it).
    pub(crate) fn front(&mut self) -> Option<&Waiter> {
        if self.batch_next() {
            self.batch.front()
        } else {
            self.interactive.front()
        }
    }

    /// Removes and returns the next waiter to be granted.
    pub(crate) fn pop_front(&mut self) -> Option<Waiter> {
        if self.batch_next() {
            self.streak = 0;
            self.batch.pop_front()
        } else {
            let w = self.interactive.pop_front()?;
            self.streak = if self.batch.len() > 0 {
                self.streak + 1
            } else {
                0
            };
            Some(w)
        }
    }

    /// Removes the waiter with `ticket`; `None` if it is not waiting.
    pub(crate) fn remove(&mut self, ticket: Ticket) -> Option<Waiter> {
        let removed = self
            .interactive
            .remove(ticket)
            .or_else(|| self.batch.remove(ticket));
        if self.batch.len() == 0 {
            self.streak = 0;
        }
        removed
    }

    /// Whether `ticket` is the next waiter to be granted.
    pub(crate) fn is_front(&mut self, ticket: Ticket) -> bool {
        self.front().is_some_and(|w| w.ticket == ticket)
    }

    pub(crate) fn contains(&self, ticket: Ticket) -> bool {
        self.interactive.contains(ticket) || self.batch.contains(ticket)
    }

    /// Live waiters in the order they will be granted (if none leaves and none arrives).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Waiter> {
        self.order(None).flatten()
    }

    /// The order of [`iter`](Self::iter) with a new waiter of `extra`'s lane pushed last, which
    /// comes out as `None`.
    fn order(&self, extra: Option<Priority>) -> impl Iterator<Item = Option<&Waiter>> {
        let mut interactive = self
            .interactive
            .with_new(extra == Some(Priority::Interactive))
            .peekable();
        let mut batch = self
            .batch
            .with_new(extra == Some(Priority::Batch))
            .peekable();
        let mut streak = self.streak;
        std::iter::from_fn(move || {
            let batch_next = batch.peek().is_some()
                && (interactive.peek().is_none() || streak >= INTERACTIVE_PER_BATCH);
            if batch_next {
                streak = 0;
                batch.next()
            } else {
                let w = interactive.next()?;
                if batch.peek().is_some() {
                    streak += 1;
                }
                Some(w)
            }
        })
    }

    /// The units that would be granted before a new waiter of `priority`.
    pub(crate) fn units_ahead_of_new(&self, priority: Priority) -> f64 {
        self.order(Some(priority))
            .map_while(|w| w.map(|w| w.units))
            .sum()
    }

    /// The units granted before `ticket` in the order of [`iter`](Self::iter); `None` if it is
    /// not waiting.
    #[cfg(test)]
    pub(crate) fn units_ahead_of(&self, ticket: Ticket) -> Option<f64> {
        let mut ahead = 0.0;
        for w in self.iter() {
            if w.ticket == ticket {
                return Some(ahead);
            }
            ahead += w.units;
        }
        None
    }

    /// Whether a batch request waits.
    pub(crate) fn has_batch(&self) -> bool {
        self.batch.len() > 0
    }

    /// Number of live waiters.
    pub(crate) fn len(&self) -> usize {
        self.interactive.len() + self.batch.len()
    }

    /// Sum of the units of the live waiters.
    pub(crate) fn units(&self) -> f64 {
        self.interactive.units() + self.batch.units()
    }

    /// Whether a live waiter has a cap of its own on requests in flight.
    pub(crate) fn has_capped(&self) -> bool {
        self.interactive.capped + self.batch.capped > 0
    }

    /// The earliest deadline of the live waiters.
    pub(crate) fn earliest_deadline(&self) -> Option<Timestamp> {
        self.interactive
            .iter()
            .chain(self.batch.iter())
            .map(|w| w.deadline)
            .min()
    }
}

/// One lane's waiting requests in arrival order. Cancelling leaves a tombstone that is skipped
/// when it reaches the front, so a cancel costs O(log n) and the front stays O(1).
#[derive(Debug, Default, Clone)]
struct Lane {
    entries: VecDeque<Waiter>,
    live: usize,
    live_units: f64,
    /// Live waiters with a cap of their own.
    capped: usize,
}

impl Lane {
    fn push(
        &mut self,
        ticket: Ticket,
        units: f64,
        enqueued_at: Timestamp,
        deadline: Timestamp,
        cap: Option<NonZeroU32>,
    ) {
        debug_assert!(self.entries.back().is_none_or(|w| w.ticket < ticket));
        self.entries.push_back(Waiter {
            ticket,
            units,
            enqueued_at,
            deadline,
            cap,
            live: true,
        });
        self.live += 1;
        self.live_units += units;
        self.capped += usize::from(cap.is_some());
    }

    /// The first live waiter (dropping tombstones in front of it).
    fn front(&mut self) -> Option<&Waiter> {
        while self.entries.front().is_some_and(|w| !w.live) {
            self.entries.pop_front();
        }
        self.entries.front()
    }

    /// Removes and returns the first live waiter.
    fn pop_front(&mut self) -> Option<Waiter> {
        self.front()?;
        let w = self.entries.pop_front()?;
        self.forget(&w);
        Some(w)
    }

    /// Removes the waiter with `ticket`; `None` if it is not waiting.
    fn remove(&mut self, ticket: Ticket) -> Option<Waiter> {
        let i = self
            .entries
            .binary_search_by_key(&ticket, |w| w.ticket)
            .ok()?;
        let w = &mut self.entries[i];
        if !w.live {
            return None;
        }
        w.live = false;
        let removed = w.clone();
        self.forget(&removed);
        Some(removed)
    }

    fn contains(&self, ticket: Ticket) -> bool {
        self.entries
            .binary_search_by_key(&ticket, |w| w.ticket)
            .is_ok_and(|i| self.entries[i].live)
    }

    /// Live waiters in order.
    fn iter(&self) -> impl Iterator<Item = &Waiter> {
        self.entries.iter().filter(|w| w.live)
    }

    /// Live waiters in order, then (if `new`) a new one as `None`.
    fn with_new(&self, new: bool) -> impl Iterator<Item = Option<&Waiter>> {
        self.iter().map(Some).chain(new.then_some(None))
    }

    fn len(&self) -> usize {
        self.live
    }

    fn units(&self) -> f64 {
        self.live_units
    }

    fn forget(&mut self, w: &Waiter) {
        let units = w.units;
        self.capped -= usize::from(w.cap.is_some());
        self.live -= 1;
        if self.live == 0 {
            // Reset instead of subtracting, so float error cannot build up over millions of waits.
            self.live_units = 0.0;
            self.entries.retain(|w| w.live);
        } else {
            self.live_units -= units;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Priority::{Batch, Interactive};

    fn q(n: u64) -> WaitQueue {
        let mut q = WaitQueue::default();
        for i in 0..n {
            q.push(
                Ticket(i),
                1.0 + i as f64,
                Interactive,
                Timestamp::ZERO,
                Timestamp::MAX,
                None,
            );
        }
        q
    }

    /// A queue of the given lanes, ticket `i` for the `i`-th, one unit each.
    fn lanes(priorities: &[Priority]) -> WaitQueue {
        let mut q = WaitQueue::default();
        for (i, p) in priorities.iter().enumerate() {
            q.push(
                Ticket(i as u64),
                1.0,
                *p,
                Timestamp::ZERO,
                Timestamp::MAX,
                None,
            );
        }
        q
    }

    fn drain(q: &mut WaitQueue) -> Vec<u64> {
        std::iter::from_fn(|| q.pop_front().map(|w| w.ticket.0)).collect()
    }

    #[test]
    fn leaves_in_arrival_order_skipping_cancelled_waiters() {
        let mut q = q(5);
        assert_eq!(q.remove(Ticket(0)).map(|w| w.units), Some(1.0));
        assert_eq!(q.remove(Ticket(2)).map(|w| w.units), Some(3.0));
        assert_eq!(q.remove(Ticket(2)).map(|w| w.units), None, "only once");
        assert_eq!(q.len(), 3);
        assert_eq!(q.units(), 2.0 + 4.0 + 5.0);
        assert!(q.is_front(Ticket(1)));
        assert_eq!(drain(&mut q), [1, 3, 4]);
        assert_eq!(q.len(), 0);
        assert_eq!(q.units(), 0.0);
    }

    #[test]
    fn contains_only_live_waiters() {
        let mut q = q(3);
        q.remove(Ticket(1));
        assert!(q.contains(Ticket(0)));
        assert!(!q.contains(Ticket(1)));
        assert!(!q.contains(Ticket(7)));
        assert_eq!(q.iter().map(|w| w.ticket.0).collect::<Vec<_>>(), [0, 2]);
    }

    #[test]
    fn interactive_requests_go_before_queued_batch_work() {
        // Two batch requests queued first, then three interactive ones.
        let mut q = lanes(&[Batch, Batch, Interactive, Interactive, Interactive]);
        assert!(q.is_front(Ticket(2)));
        assert_eq!(drain(&mut q), [2, 3, 4, 0, 1]);
    }

    #[test]
    fn batch_work_is_granted_after_at_most_four_interactive_requests_in_a_row() {
        let mut order = vec![Batch, Batch];
        order.extend([Interactive; 10]);
        let mut q = lanes(&order);
        // Tickets 2..12 are interactive; a batch request goes after every fourth of them.
        let expected = [2, 3, 4, 5, 0, 6, 7, 8, 9, 1, 10, 11];
        assert_eq!(
            q.iter().map(|w| w.ticket.0).collect::<Vec<_>>(),
            expected,
            "the announced order"
        );
        assert_eq!(drain(&mut q), expected, "the order served");
    }

    #[test]
    fn the_streak_counts_only_while_batch_work_waits() {
        let mut q = lanes(&[Interactive; 6]);
        assert_eq!(q.pop_front().map(|w| w.ticket.0), Some(0));
        assert_eq!(q.pop_front().map(|w| w.ticket.0), Some(1));
        // Interactive requests granted before any batch request waited do not count.
        q.push(Ticket(6), 1.0, Batch, Timestamp::ZERO, Timestamp::MAX, None);
        assert_eq!(drain(&mut q), [2, 3, 4, 5, 6]);
        // A batch request that leaves resets the streak.
        let mut q = lanes(&[Batch, Interactive, Interactive, Interactive, Interactive]);
        q.pop_front();
        q.pop_front();
        q.remove(Ticket(0));
        q.push(Ticket(5), 1.0, Batch, Timestamp::ZERO, Timestamp::MAX, None);
        q.push(
            Ticket(6),
            1.0,
            Interactive,
            Timestamp::ZERO,
            Timestamp::MAX,
            None,
        );
        assert_eq!(drain(&mut q), [3, 4, 6, 5]);
    }

    #[test]
    fn units_ahead_follow_the_order_served() {
        let mut order = vec![Batch];
        order.extend([Interactive; 5]);
        let q = lanes(&order);
        assert_eq!(q.units_ahead_of(Ticket(1)), Some(0.0));
        assert_eq!(q.units_ahead_of(Ticket(0)), Some(4.0));
        assert_eq!(q.units_ahead_of(Ticket(5)), Some(5.0));
        assert_eq!(q.units_ahead_of(Ticket(9)), None);
        // Four interactive, the batch one, the fifth interactive, then the new one.
        assert_eq!(q.units_ahead_of_new(Interactive), 6.0);
        let q = lanes(&[Batch, Interactive, Interactive]);
        assert_eq!(q.units_ahead_of_new(Interactive), 2.0);
        assert_eq!(q.units_ahead_of_new(Batch), 3.0);
        assert_eq!(lanes(&[Batch]).units_ahead_of_new(Interactive), 0.0);
        assert!(q.has_batch());
        assert_eq!((q.len(), q.units()), (3, 3.0));
    }

    #[test]
    fn the_queue_knows_its_capped_waiters_and_its_earliest_deadline() {
        let mut q = WaitQueue::default();
        let at = |ms| Timestamp::ZERO + std::time::Duration::from_millis(ms);
        let one = NonZeroU32::new(1);
        q.push(Ticket(0), 1.0, Interactive, at(0), at(900), None);
        q.push(Ticket(1), 1.0, Batch, at(0), at(300), one);
        q.push(Ticket(2), 1.0, Interactive, at(0), at(500), one);
        assert!(q.has_capped());
        assert_eq!(q.earliest_deadline(), Some(at(300)));
        q.remove(Ticket(1));
        assert_eq!(q.earliest_deadline(), Some(at(500)));
        assert_eq!(q.pop_front().map(|w| w.ticket.0), Some(0));
        assert!(q.has_capped());
        assert_eq!(q.pop_front().map(|w| (w.ticket.0, w.cap)), Some((2, one)));
        assert!(!q.has_capped());
        assert_eq!(q.earliest_deadline(), None);
    }

    #[test]
    fn a_cancelled_request_is_found_in_either_lane() {
        let mut q = lanes(&[Batch, Interactive, Batch, Interactive]);
        assert_eq!(q.remove(Ticket(2)).map(|w| w.ticket.0), Some(2));
        assert_eq!(q.remove(Ticket(1)).map(|w| w.ticket.0), Some(1));
        assert!(!q.contains(Ticket(2)));
        assert_eq!(drain(&mut q), [3, 0]);
        assert!(!q.has_batch());
    }
}

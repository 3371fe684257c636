//! The FIFO queue of waiting requests, kept as data so the simulator can run it without tokio.

use crate::Timestamp;
use std::collections::VecDeque;

/// A place in a limiter's queue. Tickets are issued in increasing order, so the queue is sorted by
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
    live: bool,
}

/// Waiting requests in arrival order. Cancelling leaves a tombstone that is skipped when it
/// reaches the front, so a cancel costs O(log n) and the front stays O(1).
#[derive(Debug, Default, Clone)]
pub(crate) struct WaitQueue {
    entries: VecDeque<Waiter>,
    live: usize,
    live_units: f64,
}

impl WaitQueue {
    pub(crate) fn push(
        &mut self,
        ticket: Ticket,
        units: f64,
        enqueued_at: Timestamp,
        deadline: Timestamp,
    ) {
        debug_assert!(self.entries.back().is_none_or(|w| w.ticket < ticket));
        self.entries.push_back(Waiter {
            ticket,
            units,
            enqueued_at,
            deadline,
            live: true,
        });
        self.live += 1;
        self.live_units += units;
    }

    /// The first live waiter (dropping tombstones in front of it).
    pub(crate) fn front(&mut self) -> Option<&Waiter> {
        while self.entries.front().is_some_and(|w| !w.live) {
            self.entries.pop_front();
        }
        self.entries.front()
    }

    /// Removes and returns the first live waiter.
    pub(crate) fn pop_front(&mut self) -> Option<Waiter> {
        self.front()?;
        let w = self.entries.pop_front()?;
        self.forget(w.units);
        Some(w)
    }

    /// Removes the waiter with `ticket`; `None` if it is not waiting.
    pub(crate) fn remove(&mut self, ticket: Ticket) -> Option<Waiter> {
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
        self.forget(removed.units);
        Some(removed)
    }

    /// Whether `ticket` is the first live waiter.
    pub(crate) fn is_front(&mut self, ticket: Ticket) -> bool {
        self.front().is_some_and(|w| w.ticket == ticket)
    }

    pub(crate) fn contains(&self, ticket: Ticket) -> bool {
        self.entries
            .binary_search_by_key(&ticket, |w| w.ticket)
            .is_ok_and(|i| self.entries[i].live)
    }

    /// Live waiters in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Waiter> {
        self.entries.iter().filter(|w| w.live)
    }

    /// Number of live waiters.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Sum of the units of the live waiters.
    pub(crate) fn units(&self) -> f64 {
        self.live_units
    }

    fn forget(&mut self, units: f64) {
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

    fn q(n: u64) -> WaitQueue {
        let mut q = WaitQueue::default();
        for i in 0..n {
            q.push(Ticket(i), 1.0 + i as f64, Timestamp::ZERO, Timestamp::MAX);
        }
        q
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
        let order: Vec<_> = std::iter::from_fn(|| q.pop_front().map(|w| w.ticket.0)).collect();
        assert_eq!(order, [1, 3, 4]);
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
}

//! The engine's agenda: events on virtual time, earliest first, ties in the order they were
//! scheduled (so a run never depends on the heap's internal order).

use crate::model::{ModelHeaders, Verdict};
use crate::modes::StoreAnswer;
use pacer_core::{FleetCall, Timestamp};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Something that happens at a moment of the run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EventKind {
    /// An instance's first waiting attempt should get its units now.
    Grant { instance: u32 },
    /// An attempt reaches the server, which counts and decides it (only with a share of the
    /// round trip on the way there: otherwise the server decides at the send).
    Arrive {
        instance: u32,
        request: u32,
        attempt: u32,
        sent_at: Timestamp,
        /// When its response reaches the client: a round trip after the send.
        back: Timestamp,
    },
    /// A response reaches the client.
    Response {
        instance: u32,
        request: u32,
        attempt: u32,
        sent_at: Timestamp,
        verdict: Verdict,
        headers: Option<ModelHeaders>,
    },
    /// A throttled request's next attempt asks for units (after a Retry-After sleep).
    Retry {
        instance: u32,
        request: u32,
        attempt: u32,
    },
    /// An attempt held back by its client ([`crate::Client::hold`]) asks for units, without
    /// asking for a hold again (the middleware looks at the server's state once before it
    /// queues).
    Held {
        instance: u32,
        request: u32,
        attempt: u32,
    },
    /// An attempt's units were drawn from its fleet's pool, and its time to go has come: it
    /// asks its own limiter (which the pool does not slow) and goes.
    Drawn {
        instance: u32,
        request: u32,
        attempt: u32,
    },
    /// Instances join (scale-out).
    Join { instances: u32 },
    /// Instances leave (scale-in): the most recent ones still running.
    Leave { instances: u32 },
    /// A client asked to be woken (its fleet member's next store call).
    Wake { instance: u32 },
    /// The store tells a member of another's urgent commit.
    News { instance: u32 },
    /// A fleet member's call reaches the store.
    StoreCall {
        instance: u32,
        call: FleetCall,
        sent: Timestamp,
    },
    /// The store's answer reaches the member (`None`: a call the store, down, never answered,
    /// delivered when the member's timeout ends).
    StoreAnswer {
        instance: u32,
        answer: Option<StoreAnswer>,
        sent: Timestamp,
    },
}

#[derive(Debug)]
struct Event<K> {
    at: Timestamp,
    seq: u64,
    kind: K,
}

impl<K> PartialEq for Event<K> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl<K> Eq for Event<K> {}

impl<K> PartialOrd for Event<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Event<K> {
    /// Reversed, so the max-heap pops the earliest event.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A priority queue of events (the engine's kinds, or another world's: the `llm-batch` story's).
#[derive(Debug)]
pub(crate) struct Agenda<K = EventKind> {
    heap: BinaryHeap<Event<K>>,
    seq: u64,
}

impl<K> Default for Agenda<K> {
    fn default() -> Self {
        Agenda {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<K> Agenda<K> {
    pub(crate) fn push(&mut self, at: Timestamp, kind: K) {
        self.heap.push(Event {
            at,
            seq: self.seq,
            kind,
        });
        self.seq += 1;
    }

    /// When the next event is due.
    pub(crate) fn next_at(&self) -> Option<Timestamp> {
        self.heap.peek().map(|e| e.at)
    }

    pub(crate) fn pop(&mut self) -> Option<(Timestamp, K)> {
        self.heap.pop().map(|e| (e.at, e.kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn earliest_first_then_in_scheduling_order() {
        let mut a = Agenda::default();
        let t = |s| Timestamp::ZERO + Duration::from_secs(s);
        a.push(t(2), EventKind::Grant { instance: 0 });
        a.push(t(1), EventKind::Grant { instance: 1 });
        a.push(t(2), EventKind::Grant { instance: 2 });
        a.push(t(1), EventKind::Grant { instance: 3 });
        let order: Vec<_> = std::iter::from_fn(|| a.pop())
            .map(|(_, k)| match k {
                EventKind::Grant { instance } => instance,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, [1, 3, 0, 2]);
        assert_eq!(a.next_at(), None);
    }
}

//! The record a [`ServerModel`](super::ServerModel) is estimated from: an endpoint's last sends.

use super::ServerModel;
use crate::Timestamp;
use std::collections::VecDeque;
use std::time::Duration;

/// The sends an endpoint's [`Record`] keeps one by one: at 16 bytes each, 8 KiB at most,
/// allocated as the endpoint sends. Older sends are kept as accepted units per second, for
/// [`OLDER_SECS`]: 8 bytes a second, 7 KiB at most.
pub const RECORD_CAPACITY: usize = 512;

/// How long a [`Record`] keeps the accepted units of the sends it no longer keeps one by one,
/// by second: the longest window it tries (a quarter of an hour) can be scored over it.
pub const OLDER_SECS: u32 = 900;

/// The refusals [`Record::learn`] estimates again at each.
pub const EVERY_REFUSAL: u32 = 8;

/// `outcome` of an accepted send.
const ACCEPTED: u32 = u32::MAX;
/// `outcome` of a refusal without `Retry-After`.
const BARE: u32 = u32::MAX - 1;

/// One send: when, how many units, and what the server said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sent {
    /// Nanoseconds on the limiter's clock.
    pub(super) at: u64,
    pub(super) units: u32,
    /// [`ACCEPTED`], [`BARE`], or the refusal's `Retry-After` in milliseconds.
    outcome: u32,
}

impl Sent {
    pub(super) fn refused(&self) -> bool {
        self.outcome != ACCEPTED
    }

    pub(super) fn accepted_units(&self) -> u64 {
        if self.refused() {
            0
        } else {
            u64::from(self.units)
        }
    }

    /// The refusal's `Retry-After`, in nanoseconds.
    pub(super) fn retry_after(&self) -> Option<u64> {
        (self.refused() && self.outcome != BARE).then(|| u64::from(self.outcome) * 1_000_000)
    }
}

/// An endpoint's last [`RECORD_CAPACITY`] sends, in the order they were sent, and the limit and
/// window its server's fields last named. [`Record::estimate`] makes a [`ServerModel`] of it.
#[derive(Debug, Clone, Default)]
pub struct Record {
    sends: VecDeque<Sent>,
    /// The accepted units of the sends dropped from `sends`, by second of their send time.
    older: VecDeque<(u32, u32)>,
    /// When the last send dropped from `sends` was sent, in nanoseconds (0: none was).
    since: u64,
    /// Nanoseconds since which the record holds every accepted unit (0 until `older` lets go of
    /// a second).
    covered: u64,
    /// The limit and window the server's fields last named.
    policy: Option<(u64, Duration)>,
    /// The last estimate, and the refusals and send time it was made at.
    believed: Option<ServerModel>,
    learned: u32,
    learned_at: u64,
    /// Refusals kept since the record was made.
    refused: u32,
}

impl Record {
    /// An empty record.
    #[must_use]
    pub fn new() -> Self {
        Record::default()
    }

    /// Keeps a send of `units` at `sent_at` that the server accepted.
    pub fn accepted(&mut self, sent_at: Timestamp, units: u64) {
        self.push(sent_at, units, ACCEPTED);
    }

    /// Keeps a send of `units` at `sent_at` that the server refused for its rate, with the
    /// refusal's `Retry-After` if it had one.
    pub fn refused(&mut self, sent_at: Timestamp, units: u64, retry_after: Option<Duration>) {
        self.refused = self.refused.saturating_add(u32::from(units > 0));
        let outcome = retry_after.map_or(BARE, |wait| {
            u32::try_from(wait.as_millis()).map_or(BARE - 1, |ms| ms.min(BARE - 1))
        });
        self.push(sent_at, units, outcome);
    }

    /// Keeps the limit and window the server's rate-limit fields named.
    pub fn named(&mut self, limit: u64, window: Duration) {
        if limit > 0 && !window.is_zero() {
            self.policy = Some((limit, window));
        }
    }

    /// The sends kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sends.len()
    }

    /// True when it keeps no send.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty()
    }

    /// The refusals kept.
    #[must_use]
    pub fn refusals(&self) -> usize {
        self.sends.iter().filter(|s| s.refused()).count()
    }

    fn push(&mut self, sent_at: Timestamp, units: u64, outcome: u32) {
        if units == 0 {
            return;
        }
        let sent = Sent {
            at: sent_at.as_nanos(),
            units: u32::try_from(units).unwrap_or(u32::MAX),
            outcome,
        };
        if self.sends.len() == RECORD_CAPACITY
            && let Some(dropped) = self.sends.pop_front()
        {
            self.since = dropped.at;
            self.keep_older(dropped);
        }
        // Responses come back out of order; a send is kept in the order it was sent, found
        // from the back where it almost always belongs.
        let at = self
            .sends
            .iter()
            .rposition(|s| s.at <= sent.at)
            .map_or(0, |i| i + 1);
        self.sends.insert(at, sent);
    }

    /// Estimates again ([`estimate`](Self::estimate)) if a refusal came since the last
    /// estimate, and either the record holds fewer than [`EVERY_REFUSAL`] refusals or a second
    /// of send time has passed since: the first refusals each move the estimate, later ones
    /// are read a second at a time, so that a client refused again and again does not estimate
    /// at each. Returns the new estimate when its kind, window or limit (by a tenth) changed.
    pub fn learn(&mut self, instances: u32) -> Option<&ServerModel> {
        let at = self.sends.back().map_or(0, |s| s.at);
        let due = self.refused > self.learned
            && (self.refused <= EVERY_REFUSAL
                || at.saturating_sub(self.learned_at) >= 1_000_000_000);
        if !due {
            return None;
        }
        self.learned = self.refused;
        self.learned_at = at;
        let estimate = self.estimate(instances)?;
        let changed = self.believed.as_ref().is_none_or(|b| {
            b.kind != estimate.kind
                || b.window != estimate.window
                || (b.limit - estimate.limit).abs() > b.limit / 10.0
        });
        self.believed = Some(estimate);
        changed.then_some(self.believed.as_ref()).flatten()
    }

    /// The last estimate [`learn`](Self::learn) made: what this process believes of the
    /// server's limiter now. It stands after the refusals it rests on leave the record.
    #[must_use]
    pub fn believed(&self) -> Option<&ServerModel> {
        self.believed.as_ref()
    }

    /// Keeps a dropped send's accepted units in its second, and lets go of the seconds older
    /// than [`OLDER_SECS`].
    fn keep_older(&mut self, dropped: Sent) {
        let second = u32::try_from(dropped.at / 1_000_000_000).unwrap_or(u32::MAX);
        let units = u32::try_from(dropped.accepted_units()).unwrap_or(u32::MAX);
        match self.older.back_mut() {
            Some((last, sum)) if *last >= second => {
                // Dropped in send order but for late answers: those count in the last second.
                *sum = sum.saturating_add(units);
            }
            _ => self.older.push_back((second, units)),
        }
        while let Some(&(first, _)) = self.older.front() {
            if first.saturating_add(OLDER_SECS) > second {
                break;
            }
            self.older.pop_front();
            self.covered = u64::from(first + 1) * 1_000_000_000;
        }
    }

    /// The likeliest hypothesis about the server's limiter, for a process that is one of
    /// `instances` sharing it; `None` until the record holds a refusal it can rank.
    #[must_use]
    pub fn estimate(&self, instances: u32) -> Option<ServerModel> {
        let sends: Vec<Sent> = self.sends.iter().copied().collect();
        let older: Vec<(u32, u32)> = self.older.iter().copied().collect();
        let kept = super::estimate::Kept {
            sends: &sends,
            older: &older,
            since: self.since,
            covered: self.covered,
        };
        super::estimate::estimate(&kept, self.policy, instances.max(1))
    }
}

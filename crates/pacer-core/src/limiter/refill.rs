//! Whether a server with a short window refills like a bucket: room it gives back faster than any
//! window could.

use crate::Timestamp;
use std::time::Duration;

/// A span's fleet units plus its lowest `remaining` above this many quotas: the server gave back
/// more than a window of the policy could (a window's `remaining` at the span's end is at most the
/// quota less what the span sent), so it refills as it goes, a bucket.
const REFILLED: f64 = 1.25;

/// The part of the quota a bucket's room is spent down to, never below: what is kept against the
/// numbers' round trip and the other processes spending the same room.
const ROOM_KEPT: f64 = 0.5;

/// What a server's `remaining` did over the last span of its policy's window, against what this
/// process sent in it.
///
/// Paced evenly at `p` units a window, a window of any shape (sliding or fixed) holds `remaining`
/// at or below `q − p` once in every span of its length: the units the span sent are still in it
/// (sliding), or the window that ended in the span held them all (fixed). A bucket or GCRA that
/// refills at `q` a window holds `remaining` near the top while the pace is under its refill: the
/// room the even pace leaves is its own, and spending it only lowers the level. A span in which
/// the fleet's units (this process's times the instance count) and the lowest `remaining` add up
/// to more than [`REFILLED`] quotas is such a bucket's; room above [`ROOM_KEPT`] of the quota is
/// then spent over a window on top of the even pace, for as long as the spans say so.
#[derive(Debug, Clone)]
pub(crate) struct Refill {
    /// The span: the policy's window.
    window: Duration,
    /// The current span's start.
    started: Timestamp,
    /// This process's units accepted in the current span.
    sent: f64,
    /// The lowest `remaining` seen in the current span (`None`: no numbers yet).
    lowest: Option<u64>,
    /// The last whole span's lowest `remaining`, if it refilled as a bucket does.
    refilled: Option<u64>,
}

impl Refill {
    /// Spans of `window`, starting at `now`.
    pub(crate) fn new(window: Duration, now: Timestamp) -> Self {
        Refill {
            window: window.max(Duration::from_millis(1)),
            started: now,
            sent: 0.0,
            lowest: None,
            refilled: None,
        }
    }

    /// Counts `units` the server accepted at `now`.
    pub(crate) fn accepted(&mut self, units: u64, now: Timestamp) {
        if now >= self.started {
            self.sent += units as f64;
        }
    }

    /// The room to spend on top of the even pace, in units over a window for this process, after
    /// the numbers `remaining` of a policy of `limit` over `window` at `now`, with `instances`
    /// processes sharing it.
    pub(crate) fn room(
        &mut self,
        remaining: u64,
        limit: u64,
        window: Duration,
        instances: f64,
        now: Timestamp,
    ) -> f64 {
        if window != self.window {
            *self = Refill::new(window, now);
        }
        if now >= self.started + self.window {
            let whole = now < self.started + self.window * 2;
            let limit = limit as f64;
            self.refilled = self
                .lowest
                .filter(|low| whole && self.sent * instances + *low as f64 > REFILLED * limit);
            self.started = now;
            self.sent = 0.0;
            self.lowest = None;
        }
        let lowest = self.lowest.map_or(remaining, |low| low.min(remaining));
        self.lowest = Some(lowest);
        match self.refilled {
            Some(last) => (last.min(lowest) as f64 - ROOM_KEPT * limit as f64).max(0.0) / instances,
            None => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Timestamp {
        Timestamp::from_secs_f64(s)
    }

    const W: Duration = Duration::from_secs(1);

    /// Feeds a span of 10 responses of `units` each, at `remaining` each, from `from` s; the
    /// room after the last.
    fn span(r: &mut Refill, from: f64, units: u64, remaining: u64, n: f64) -> f64 {
        let mut room = 0.0;
        for i in 0..10 {
            let at = secs(from + f64::from(i) * 0.1);
            room = r.room(remaining, 50, W, n, at);
            r.accepted(units, at);
        }
        room
    }

    #[test]
    fn a_bucket_s_room_above_half_the_quota_is_spent_once_a_whole_span_shows_it() {
        let mut r = Refill::new(W, secs(0.0));
        // 40 units a second by two processes (20 each), the bucket near full: nothing yet.
        assert_eq!(span(&mut r, 0.0, 2, 48, 2.0), 0.0);
        // The span after it: 40 + 48 > 62.5. Room 48 − 25, half of it this process's.
        assert_eq!(span(&mut r, 1.0, 2, 48, 2.0), 11.5);
        // The level falls within the span: the lower of the last span's and this one's.
        assert_eq!(r.room(30, 50, W, 2.0, secs(2.05)), 2.5);
        assert_eq!(r.room(20, 50, W, 2.0, secs(2.1)), 0.0);
    }

    #[test]
    fn a_window_paced_evenly_never_shows_room() {
        // A sliding window at 40 a second: remaining 10 once the window is full.
        let mut r = Refill::new(W, secs(0.0));
        for s in 0..5 {
            assert_eq!(span(&mut r, f64::from(s), 2, 10, 2.0), 0.0);
        }
        // A fixed window: full at each boundary, 10 left at its end; the span's lowest is the
        // end of the window before.
        let mut r = Refill::new(W, secs(0.0));
        for s in 0..5 {
            let mut room = 0.0;
            for i in 0..10_u32 {
                let at = secs(f64::from(s) + 0.05 + f64::from(i) * 0.1);
                room = r.room(u64::from(46 - 4 * i), 50, W, 2.0, at);
                r.accepted(2, at);
            }
            assert_eq!(room, 0.0);
        }
    }

    #[test]
    fn a_lull_is_no_bucket_and_a_gap_forgets_one() {
        let mut r = Refill::new(W, secs(0.0));
        // Nothing sent for a span, the window empty: 0 + 50 is no more than a window holds.
        assert_eq!(r.room(50, 50, W, 2.0, secs(0.5)), 0.0);
        assert_eq!(span(&mut r, 1.0, 2, 48, 2.0), 0.0);
        assert_eq!(span(&mut r, 2.0, 2, 48, 2.0), 11.5);
        // No numbers for two spans: the last whole span is not the one before.
        assert_eq!(r.room(48, 50, W, 2.0, secs(5.0)), 0.0);
        // Another window: counting starts again.
        assert_eq!(
            r.room(48, 500, Duration::from_secs(10), 2.0, secs(5.5)),
            0.0
        );
    }
}

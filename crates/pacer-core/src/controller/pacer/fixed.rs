//! A server whose window is fixed (it resets on a boundary), told apart by the ends of its
//! throttles' `Retry-After`s, and the count over the part of the window since its start.
//!
//! A fixed window's `Retry-After` runs to the window's end, so a throttle at `t` with a
//! `Retry-After` of `r` says the window began at `t + r − W`. The units accepted over the last
//! `W` before it also hold some of the window before, which reset at that boundary: counted as
//! the limit, they lift the estimate over the quota by up to the probe's rate times `r`. In a
//! sliding window the same count over `t + r − W ..= t` leaves out the units that must leave
//! for the request to fit (and, behind a neighbour, our own that are in the window), so the
//! rule applies only once the throttles' ends have fallen on the same boundaries, a whole
//! number of windows apart, more often in a row than a sliding window's would by chance.

use super::PacerController;
use crate::Timestamp;
use crate::controller::ControllerContext;
use std::time::Duration;

/// `Retry-After` is whole seconds, rounded up, and the response takes part of a round trip to
/// come: two ends of the same boundary differ by up to this much.
const SLACK: Duration = Duration::from_millis(1_500);
/// A `Retry-After` of one second, the least there is, says only "soon" (a sliding window's
/// usual answer): it tells no boundary.
const LEAST: Duration = Duration::from_secs(2);
/// Ends in a row on the boundaries make a window fixed once a sliding window's would fall so
/// by chance less often than this.
const CHANCE: f64 = 1.0 / 16.0;

/// A `Retry-After` that can tell a boundary of `window`: at least [`LEAST`], under the window.
fn telling(retry_after: Option<Duration>, window: Duration) -> Option<Duration> {
    retry_after.filter(|r| *r >= LEAST && *r < window)
}

/// The ends of the throttles' `Retry-After`s, and how many in a row fell a whole number of
/// windows after the one before.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Boundaries {
    last: Option<Timestamp>,
    aligned: u8,
}

impl Boundaries {
    /// A throttle at `now` with `retry_after`, the server's window `window`.
    pub(super) fn throttled(
        &mut self,
        now: Timestamp,
        retry_after: Option<Duration>,
        window: Duration,
    ) {
        let Some(r) = telling(retry_after, window) else {
            return;
        };
        let end = now + r;
        let Some(last) = self.last.replace(end) else {
            return;
        };
        let apart = end.saturating_duration_since(last);
        if apart <= SLACK {
            // The same boundary (the requests in flight as the window filled): no new evidence.
            return;
        }
        let off = Duration::from_nanos((apart.as_nanos() % window.as_nanos().max(1)) as u64);
        let on_a_boundary = apart + SLACK >= window && (off <= SLACK || window - off <= SLACK);
        self.aligned = if on_a_boundary {
            self.aligned.saturating_add(1)
        } else {
            0
        };
    }

    /// Whether the server's window, `window` long, is fixed: its throttles ended on its
    /// boundaries more times in a row than chance would have them. An end falls within
    /// [`SLACK`] of a boundary by chance 2 × `SLACK` ÷ `window` of the time: once is enough in
    /// a window of a minute (1 in 20), three times in one of 10 s; a window of 6 s or less is
    /// never told.
    pub(super) fn fixed(&self, window: Duration) -> bool {
        let chance = 2.0 * SLACK.as_secs_f64() / window.as_secs_f64();
        if chance >= 0.5 {
            return false;
        }
        let (mut needed, mut p) = (1, chance);
        while p > CHANCE {
            p *= chance;
            needed += 1;
        }
        self.aligned >= needed
    }
}

impl PacerController {
    /// At a throttle (`cx`, as the controller reasons on it), against a window found fixed: the
    /// units accepted since the window began, per minute; `None` for the whole window's count.
    pub(super) fn since_boundary(&self, cx: &ControllerContext) -> Option<f64> {
        let r = telling(cx.retry_after, cx.quota_window)?;
        if !self.boundaries.fixed(cx.quota_window) {
            return None;
        }
        // The window began up to a second before `r` says (it is rounded up).
        let began = cx
            .now
            .saturating_sub(cx.quota_window - r.saturating_sub(Duration::from_secs(1)));
        Some(self.accepted_per_minute_since(began, cx.now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64) -> Timestamp {
        Timestamp::from_secs_f64(secs)
    }

    fn fed(throttles: &[(f64, u64)], window: u64) -> Boundaries {
        let mut b = Boundaries::default();
        for &(t, r) in throttles {
            b.throttled(
                at(t),
                Some(Duration::from_secs(r)),
                Duration::from_secs(window),
            );
        }
        b
    }

    #[test]
    fn in_a_window_of_a_minute_one_end_on_the_boundaries_makes_it_fixed() {
        let minute = Duration::from_secs(60);
        // A minute's window resetting on each minute: throttles at 49.3 s (11 s to wait) and
        // 237.1 s (3 s), ends at 60.3 s and 240.1 s.
        assert!(fed(&[(49.3, 11), (237.1, 3)], 60).fixed(minute));
        // One end alone tells nothing; nor do the requests in flight at one boundary.
        assert!(!fed(&[(49.3, 11)], 60).fixed(minute));
        assert!(!fed(&[(49.3, 11), (49.5, 11), (50.1, 10)], 60).fixed(minute));
        // Those after the one that told it change nothing either.
        assert!(fed(&[(49.3, 11), (237.1, 3), (237.5, 3), (238.2, 2)], 60).fixed(minute));
        // An end off the boundaries starts again.
        assert!(!fed(&[(49.3, 11), (237.1, 3), (400.0, 30)], 60).fixed(minute));
        // A `Retry-After` of a second, or one of a window or more, says nothing.
        assert!(fed(&[(49.3, 11), (200.0, 1), (237.1, 3), (260.0, 90)], 60).fixed(minute));
    }

    #[test]
    fn ends_whole_windows_apart_within_the_rounding() {
        let minute = Duration::from_secs(60);
        // Ends at 20 s, then two windows and a second and a half later, or earlier.
        assert!(fed(&[(10.0, 10), (137.5, 4)], 60).fixed(minute));
        assert!(fed(&[(10.0, 10), (134.5, 4)], 60).fixed(minute));
        // Two seconds off is another end.
        assert!(!fed(&[(10.0, 10), (138.0, 4)], 60).fixed(minute));
    }

    #[test]
    fn a_shorter_window_needs_more_ends_in_a_row_and_one_of_6_s_is_never_told() {
        let ten = Duration::from_secs(10);
        // Ends at 5, 15, 25 and 35 s: two on the boundaries after the first are chance one time
        // in eleven in a window of 10 s, three one time in 37.
        assert!(!fed(&[(2.0, 3), (12.0, 3), (22.0, 3)], 10).fixed(ten));
        assert!(fed(&[(2.0, 3), (12.0, 3), (22.0, 3), (32.0, 3)], 10).fixed(ten));
        let six = Duration::from_secs(6);
        let ends: Vec<(f64, u64)> = (0..10).map(|i| (f64::from(i) * 6.0 + 1.0, 2)).collect();
        assert!(!fed(&ends, 6).fixed(six));
    }
}

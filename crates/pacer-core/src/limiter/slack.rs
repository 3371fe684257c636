//! The room a short window's pace keeps for the way to the server.
//!
//! A short window is paced at the policy's pace less every process's largest request
//! ([`LimiterCore::short_window_pace`](super::LimiterCore)): sent evenly at that, the fleet's
//! units in any window stay within the limit, *as the server receives them at the moment they
//! are sent*. On a real network each request takes its own time to get there, so an even pace
//! reaches the server uneven: one process's units bunch by its pace times the spread of those
//! times (25 a second spread over 75 ms bunch two units). Nothing the client sees measures that
//! spread (a round trip's spread also holds the way back and the server's work), but a throttle
//! of a request sent at the short pace says the margin was too small. So each such throttle
//! widens it by a unit a process, at most once a window; and after
//! [`Slack::NARROW_AFTER`] without one it narrows by a unit again, in case the network calmed.

use crate::Timestamp;
use std::time::Duration;

/// Units a process keeps free in a short window beyond its largest request, learnt from the
/// throttles met at the short pace.
#[derive(Debug, Clone, Default)]
pub(super) struct Slack {
    /// The units kept free, on top of the largest request.
    units: u32,
    /// Since when the rate has been the pace of a short window, and that window (`None`: it is
    /// not).
    pacing: Option<(Timestamp, Duration)>,
    /// When the slack last changed, or the pace began (the narrowing counts from it).
    changed_at: Option<Timestamp>,
}

impl Slack {
    /// A slack unchanged for this long, with no throttle at the short pace, narrows by a unit.
    pub(super) const NARROW_AFTER: Duration = Duration::from_secs(300);

    /// At most this share of a process's part of the limit is kept free as slack.
    const MOST: f64 = 0.5;

    /// The rate is now the pace of a short window of `window`, from `now` (it may have been for a
    /// while).
    pub(super) fn pacing(&mut self, window: Duration, now: Timestamp) {
        match &mut self.pacing {
            Some((_, w)) => *w = window,
            None => {
                self.pacing = Some((now, window));
                self.changed_at = Some(now);
            }
        }
    }

    /// The rate is no longer a short window's pace.
    pub(super) fn not_pacing(&mut self) {
        self.pacing = None;
    }

    /// A throttle of a request sent at `sent_at`, seen at `now`: if the request went out at the
    /// short pace, the slack widens by a unit, at most once a window.
    pub(super) fn throttled(&mut self, sent_at: Timestamp, now: Timestamp) {
        let Some((since, window)) = self.pacing else {
            return;
        };
        if sent_at < since {
            return; // sent before the pace began: a start's burst, not the pace's margin
        }
        if self.units > 0 && self.changed_at.is_some_and(|at| now < at + window) {
            return; // the same overfill seen again: one widening a window
        }
        self.units = self.units.saturating_add(1);
        self.changed_at = Some(now);
    }

    /// The units a process keeps free beyond its largest request of `cost`, at `now`, for its
    /// part `share` of the limit: the slack, narrowed by a unit for each [`Self::NARROW_AFTER`]
    /// since it last changed, and at most half of what the share leaves after the request.
    pub(super) fn units(&mut self, share: f64, cost: f64, now: Timestamp) -> f64 {
        if let Some(at) = self.changed_at
            && self.units > 0
            && now >= at + Self::NARROW_AFTER
        {
            self.units -= 1;
            self.changed_at = Some(now);
        }
        f64::from(self.units).min(((share - cost) * Self::MOST).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Timestamp {
        Timestamp::from_secs_f64(s)
    }

    const W: Duration = Duration::from_secs(1);

    #[test]
    fn a_throttle_at_the_short_pace_widens_it_once_a_window() {
        let mut s = Slack::default();
        s.throttled(secs(1.0), secs(1.1));
        assert_eq!(s.units(25.0, 1.0, secs(1.1)), 0.0, "not pacing: no slack");
        s.pacing(W, secs(2.0));
        s.throttled(secs(1.9), secs(2.1));
        assert_eq!(s.units(25.0, 1.0, secs(2.1)), 0.0, "sent before the pace");
        s.throttled(secs(2.0), secs(2.1));
        assert_eq!(s.units(25.0, 1.0, secs(2.1)), 1.0);
        s.throttled(secs(2.5), secs(2.6));
        assert_eq!(s.units(25.0, 1.0, secs(2.6)), 1.0, "the same window");
        s.throttled(secs(3.0), secs(3.2));
        assert_eq!(s.units(25.0, 1.0, secs(3.2)), 2.0, "a window later");
    }

    #[test]
    fn it_narrows_a_unit_at_a_time_without_throttles_and_stays_within_half_the_share() {
        let mut s = Slack::default();
        s.pacing(W, secs(0.0));
        for i in 0..6 {
            s.throttled(secs(f64::from(i) * 2.0), secs(f64::from(i) * 2.0 + 0.1));
        }
        assert_eq!(s.units(25.0, 1.0, secs(11.0)), 6.0);
        assert_eq!(s.units(3.0, 1.0, secs(11.0)), 1.0, "half of 3 − 1");
        assert_eq!(s.units(1.5, 1.0, secs(11.0)), 0.25);
        assert_eq!(
            s.units(1.0, 2.0, secs(11.0)),
            0.0,
            "a request above the share"
        );
        let t = 10.1 + Slack::NARROW_AFTER.as_secs_f64();
        assert_eq!(s.units(25.0, 1.0, secs(t)), 5.0);
        assert_eq!(
            s.units(25.0, 1.0, secs(t + 1.0)),
            5.0,
            "counted from the narrowing"
        );
        assert_eq!(
            s.units(25.0, 1.0, secs(t + Slack::NARROW_AFTER.as_secs_f64())),
            4.0
        );
        s.not_pacing();
        s.throttled(secs(700.0), secs(700.1));
        assert_eq!(
            s.units(25.0, 1.0, secs(700.1)),
            4.0,
            "not pacing: kept, not widened"
        );
    }
}

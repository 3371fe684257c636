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
//! A narrowing that a throttle refutes within the wait before it doubles that wait (up to
//! [`Slack::MOST_NARROW_AFTER`]), as a probe that finds nothing does: on a network whose spread
//! stays the same, each narrowing costs a throttle and its pause, so they must grow rare. One
//! that goes unrefuted halves it again.

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
    /// When it last narrowed, until a throttle or the next narrowing tells whether it was right.
    narrowed_at: Option<Timestamp>,
    /// How long the slack waits without a throttle before it narrows (`None`:
    /// [`Self::NARROW_AFTER`]).
    narrow_after: Option<Duration>,
}

impl Slack {
    /// A slack unchanged for this long, with no throttle at the short pace, narrows by a unit.
    pub(super) const NARROW_AFTER: Duration = Duration::from_secs(300);

    /// The longest wait before a narrowing, after narrowings that throttles refuted.
    pub(super) const MOST_NARROW_AFTER: Duration = Duration::from_secs(2_400);

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
        if let Some(at) = self.narrowed_at.take()
            && now < at + self.narrow_after()
        {
            // The last narrowing was one unit too many: wait longer before the next.
            self.narrow_after = Some((self.narrow_after() * 2).min(Self::MOST_NARROW_AFTER));
        }
        self.units = self.units.saturating_add(1);
        self.changed_at = Some(now);
    }

    /// How long the slack waits without a throttle before it narrows.
    fn narrow_after(&self) -> Duration {
        self.narrow_after.unwrap_or(Self::NARROW_AFTER)
    }

    /// The units a process keeps free beyond its largest request of `cost`, at `now`, for its
    /// part `share` of the limit: the slack, narrowed by a unit once it has gone the current wait
    /// (at first [`Self::NARROW_AFTER`]) unchanged, and at most half of what the share leaves
    /// after the request.
    pub(super) fn units(&mut self, share: f64, cost: f64, now: Timestamp) -> f64 {
        if let Some(at) = self.changed_at
            && self.units > 0
            && now >= at + self.narrow_after()
        {
            if self.narrowed_at.is_some() {
                // The last narrowing went unrefuted for a whole wait: the next may come sooner.
                self.narrow_after = Some((self.narrow_after() / 2).max(Self::NARROW_AFTER));
            }
            self.units -= 1;
            self.changed_at = Some(now);
            self.narrowed_at = Some(now);
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

    #[test]
    fn a_narrowing_a_throttle_refutes_doubles_the_wait_before_the_next_and_one_unrefuted_halves_it()
    {
        let narrow = Slack::NARROW_AFTER.as_secs_f64();
        let mut s = Slack::default();
        s.pacing(W, secs(0.0));
        s.throttled(secs(1.0), secs(1.1));
        s.throttled(secs(3.0), secs(3.1));
        assert_eq!(s.units(25.0, 1.0, secs(3.1)), 2.0);
        // Narrowed after the wait; a throttle within the next wait refutes it: back up a unit,
        // and the next narrowing waits twice as long.
        let t = 3.1 + narrow;
        assert_eq!(s.units(25.0, 1.0, secs(t)), 1.0);
        s.throttled(secs(t + 10.0), secs(t + 10.1));
        let t = t + 10.1;
        assert_eq!(s.units(25.0, 1.0, secs(t)), 2.0);
        assert_eq!(
            s.units(25.0, 1.0, secs(t + narrow)),
            2.0,
            "the wait doubled"
        );
        assert_eq!(s.units(25.0, 1.0, secs(t + 2.0 * narrow)), 1.0);
        // Refuted again: four times the first wait.
        let t = t + 2.0 * narrow;
        s.throttled(secs(t + 1.0), secs(t + 1.1));
        let t = t + 1.1;
        assert_eq!(s.units(25.0, 1.0, secs(t + 3.9 * narrow)), 2.0);
        assert_eq!(s.units(25.0, 1.0, secs(t + 4.0 * narrow)), 1.0);
        // Each narrowing that goes unrefuted for a whole wait halves the wait before the next,
        // down to the first.
        let t = t + 4.0 * narrow;
        s.throttled(secs(t + 1.0), secs(t + 1.1));
        s.throttled(secs(t + 3.0), secs(t + 3.1));
        let t = t + 3.1;
        assert_eq!(
            s.units(25.0, 1.0, secs(t)),
            3.0,
            "a narrowing refuted, twice widened"
        );
        assert_eq!(s.narrow_after(), Slack::NARROW_AFTER * 8);
        assert_eq!(s.units(25.0, 1.0, secs(t + 8.0 * narrow)), 2.0);
        assert_eq!(
            s.units(25.0, 1.0, secs(t + 16.0 * narrow)),
            1.0,
            "halved after it"
        );
        assert_eq!(s.narrow_after(), Slack::NARROW_AFTER * 4);
        assert_eq!(s.units(25.0, 1.0, secs(t + 19.9 * narrow)), 1.0);
        assert_eq!(s.units(25.0, 1.0, secs(t + 20.0 * narrow)), 0.0);
        assert_eq!(s.narrow_after(), Slack::NARROW_AFTER * 2);
    }

    #[test]
    fn the_wait_before_a_narrowing_grows_at_most_to_its_ceiling() {
        let mut s = Slack::default();
        s.pacing(W, secs(0.0));
        s.throttled(secs(0.0), secs(0.1));
        s.throttled(secs(1.0), secs(1.1));
        let mut t = 1.1;
        for _ in 0..8 {
            // Each narrowing refuted at once.
            t += s.narrow_after().as_secs_f64();
            assert_eq!(s.units(25.0, 1.0, secs(t)), 1.0);
            s.throttled(secs(t + 1.0), secs(t + 1.1));
            t += 1.1;
            assert_eq!(s.units(25.0, 1.0, secs(t)), 2.0);
        }
        assert_eq!(s.narrow_after(), Slack::MOST_NARROW_AFTER);
    }
}

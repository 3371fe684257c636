//! After a throttle: how long the hold waits before the next probe.

use super::PacerController;
use std::time::Duration;

impl PacerController {
    /// The new wait before a probe, after a throttle.
    pub(super) fn next_probe_after(&self, t: &Throttle) -> Duration {
        let o = &self.options;
        if t.probing {
            if self.ceiling.is_some() {
                o.recovery_probe_after
            } else if self.found_room(t) {
                // The probe found more room: the limit moves, keep an eye on it.
                o.probe_after
            } else {
                (self.probe_after * 2).min(o.max_probe_after)
            }
        } else if t.fell {
            o.recovery_probe_after
        } else if t.previous.is_some() {
            self.probe_after
        } else if t.saturated && (t.age >= t.window || t.long_pause) {
            o.probe_after
        } else {
            // The first throttle met us below our rate (the limit fell below our demand, for
            // all we know for a moment), or came within our first window while the server's
            // window already let units go (a short Retry-After: it is older than we are, and
            // our part-window of units understates our share): look again soon.
            o.recovery_probe_after
        }
    }

    /// Whether a probe's throttle found more room than the estimate before it (with no higher
    /// limit remembered to probe back toward).
    fn found_room(&self, t: &Throttle) -> bool {
        self.ceiling.is_none()
            && t.previous
                .is_some_and(|l| t.estimate > l * (1.0 + self.options.cut_margin))
    }

    /// After [`next_probe_after`](Self::next_probe_after): the room a probe found is confirmed
    /// by the next throttle that is not a probe's. If that one finds less than the probe's
    /// estimate, the room was a bucket's tokens, regained while the rate was under its leak
    /// after a cut, and not the limit moving: the next probe waits twice as long, as after a
    /// probe that found nothing.
    pub(super) fn confirm_probe_room(&mut self, t: &Throttle) {
        if t.probing {
            self.probe_found = self.found_room(t);
        } else if std::mem::take(&mut self.probe_found)
            && t.previous.is_some_and(|l| t.estimate < l)
        {
            self.probe_after = (self.probe_after * 2).min(self.options.max_probe_after);
        }
    }
}

/// What a throttle says, worked out once.
pub(super) struct Throttle {
    pub(super) estimate: f64,
    pub(super) previous: Option<f64>,
    pub(super) probing: bool,
    pub(super) saturated: bool,
    pub(super) long_pause: bool,
    pub(super) fell: bool,
    pub(super) age: Duration,
    pub(super) window: Duration,
}

//! The time spent in pauses since the last cut: what CUBIC's `t` leaves out.

use super::ControllerContext;
use crate::Timestamp;
use std::time::Duration;

/// The pause time ordered since the last cut (or since the limiter started), for a controller
/// whose clock should not run while the server holds every request back.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct PausedTime {
    since_cut: Duration,
}

impl PausedTime {
    /// A cut at `cx.now`: only the part of a running pause still ahead counts after it.
    pub(crate) fn on_cut(&mut self, cx: &ControllerContext) {
        self.since_cut = cx.pause_ahead();
    }

    /// The limiter holds every request from `from` to `until`.
    pub(crate) fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        self.since_cut += until - from;
    }

    /// The time since the last cut without the time paused (a pause still ahead is not yet
    /// time paused).
    pub(crate) fn unpaused_since_cut(&self, cx: &ControllerContext) -> Duration {
        let paused = self.since_cut.saturating_sub(cx.pause_ahead());
        cx.since_last_decrease.saturating_sub(paused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_secs(secs)
    }

    #[test]
    fn a_pause_counts_once_it_is_behind_and_a_cut_keeps_only_what_is_ahead() {
        let mut p = PausedTime::default();
        // A pause from 10 s to 20 s, ordered at 10 s.
        p.on_pause(at(10), at(20));
        let mut cx = ControllerContext::new(at(15), 100.0, 1.0, 1000.0);
        cx.pause_until = at(20);
        cx.since_last_decrease = Duration::from_secs(15);
        // At 15 s, 5 s of it are behind.
        assert_eq!(p.unpaused_since_cut(&cx), Duration::from_secs(10));
        // A cut at 15 s: the 5 s still ahead count after it.
        p.on_cut(&cx);
        cx.now = at(30);
        cx.since_last_decrease = Duration::from_secs(15);
        assert_eq!(p.unpaused_since_cut(&cx), Duration::from_secs(10));
    }
}

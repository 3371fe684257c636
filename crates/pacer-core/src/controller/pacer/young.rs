//! The Pacer controller's first window: what a throttle before the limiter is a `QuotaWindow`
//! old says of a server that counts over a shorter window.

use super::PacerController;
use crate::Timestamp;
use crate::controller::RateControllerState;
use std::time::Duration;

/// After a young throttle, successes that come this long after the cut (past any round trip,
/// so sent after it) and before the limiter is a window old say the server's window is shorter.
const YOUNG_SETTLE: Duration = Duration::from_secs(2);
/// The part of a young count, scaled to the window, taken as the limit: the count holds the
/// room a fresh server gives at once (a bucket's capacity), which a pace measured over a few
/// seconds overstates. Chosen over the simulator's 1 s windows
/// (docs/research/controllers-record.md, "A cold start against a server with a shorter
/// window"). A server that queued our requests (`Young::queued`) gave no room at once: its
/// count is taken whole.
const YOUNG_SCALE: f64 = 0.6;

/// A throttle before the limiter is a `QuotaWindow` old whose `Retry-After` ends within this
/// part of the window, counted from the start, measured the server's pace: our own first units
/// could not leave a window that long so soon. A minute's window filled alone ends the span at
/// the window. A fixed window's `Retry-After` ends at a boundary, and a throttle that comes
/// after its first boundary may end a span past a quarter of a minute: with a quarter, a fixed
/// window of 10 s was read at some phases as a minute's, its first seconds' count as the limit.
/// Of 0.25, 0.33, 0.4 and 0.5, the least that reads a fixed window of 10 s as short at every
/// phase (docs/research/controllers-record.md, "A fixed window's boundary").
const YOUNG_PACE_SPAN: f64 = 0.4;

impl PacerController {
    /// After a young throttle, on a success: accepted again past any round trip since the cut
    /// and before our first units could leave a window of `QuotaWindow`, the server counts over
    /// a shorter one (a bucket that leaks, as nginx's `limit_req`), and the units accepted since
    /// the start were its pace over our age, not a window's quota. The estimate becomes them
    /// scaled to the window (less the room a fresh server gives at once), at most what we sent.
    /// A window old, the count was a window's after all and is kept.
    pub(super) fn read_young_throttle(&mut self, state: &RateControllerState) -> Option<f64> {
        let window = state.quota_window;
        let young = self.young.take().filter(|_| self.age(state) < window)?;
        if !self.settled(state) {
            // A response to a request sent before the cut: it says nothing yet.
            self.young = Some(young);
            return None;
        }
        let n = f64::from(state.instance_count.max(1));
        if young.queued {
            // The server held what we sent and let it through at its pace: every unit it
            // accepted since the start came at that pace, the ones it answers only now too.
            // Nothing it holds will be refused, so the rate goes to the hold at once.
            let _ = n;
            self.limit = None;
            self.firm = false;
            self.ramp_from = None;
            let pace =
                state.accepted_per_minute * window.as_secs_f64() / self.age(state).as_secs_f64();
            return Some(pace.min(young.sent));
        }
        let scaled = (YOUNG_SCALE * young.accepted * window.as_secs_f64()
            / young.age.as_secs_f64())
        .min(young.sent);
        if self.limit.is_some_and(|l| scaled * n > l) {
            self.limit = Some(scaled * n);
        }
        None
    }

    /// Whether a success at `state` says the server counts over a shorter window than
    /// `QuotaWindow` ([`read_young_throttle`](Self::read_young_throttle)): a young throttle is
    /// pending, the success came past any round trip since the cut, and the limiter is not yet a
    /// window old.
    pub(super) fn young_says_shorter(&self, state: &RateControllerState) -> bool {
        self.young.is_some() && self.age(state) < state.quota_window && self.settled(state)
    }

    /// On a success of `units` to a request sent at `sent_at`, at `now`: one sent before a
    /// young throttle was accepted before it, though it answers after it (the server decided it
    /// when it came, then held it, or the way back took longer), and joins the throttle's
    /// count. One that comes past any round trip after the throttle was held by the server
    /// (`Young::queued`).
    pub(super) fn note_late(&mut self, units: f64, sent_at: Timestamp, now: Timestamp) {
        let settle = self.timing(YOUNG_SETTLE);
        let per_minute = 60.0 / self.counting_window().as_secs_f64();
        if let Some(young) = &mut self.young
            && let Some(at) = young.at
            && sent_at < at
        {
            young.accepted += units * per_minute;
            if now.saturating_duration_since(at) >= settle {
                young.queued = true;
            }
        }
    }

    /// Past any round trip since the cut: a response now is to a request sent after it.
    fn settled(&self, state: &RateControllerState) -> bool {
        state.since_last_decrease >= self.timing(YOUNG_SETTLE)
    }
}

/// For a throttle with a `Retry-After` at `age`, within the limiter's first `QuotaWindow` and
/// ending within [`YOUNG_PACE_SPAN`] of it: the span from the start to the end of the
/// `Retry-After`. A server that filled its window with our units alone would have asked us to wait
/// until our first units leave it, a window after the start; the server's window is at most this
/// span (or others' units fill it).
pub(super) fn short_span(
    age: Duration,
    retry_after: Option<Duration>,
    window: Duration,
) -> Option<Duration> {
    let span = age + retry_after?;
    (age < window && span.as_secs_f64() <= YOUNG_PACE_SPAN * window.as_secs_f64()).then_some(span)
}

/// For a throttle with a short span ([`short_span`]): the server's pace over that span (the units
/// accepted since the start over it, per minute), at most the send rate.
pub(super) fn young_pace(state: &RateControllerState, age: Duration) -> Option<f64> {
    let window = state.quota_window;
    let span = short_span(age, state.retry_after, window)?;
    // Before the limiter is a window old, the count holds every unit accepted since the start:
    // `accepted_per_minute` is that count times 60 s over the window; over the span instead.
    let pace = state.accepted_per_minute * window.as_secs_f64() / span.as_secs_f64();
    let sent = state.measured_send_rate.unwrap_or(state.rate);
    (pace > 0.0).then(|| pace.min(sent))
}

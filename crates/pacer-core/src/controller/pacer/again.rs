//! A cut that fell short: when a throttle within `DecreaseCooldown` of a cut cuts again.

use super::{PacerController, sent_rate};
use crate::{ControllerContext, Timestamp};

/// A cut within this many windows of the controller's start is a cold start's: every process
/// may be climbing.
const COLD_WINDOWS: u32 = 10;

impl PacerController {
    /// [`Controller::cuts_again`](crate::Controller::cuts_again) for a request sent at `sent_at`.
    pub(super) fn cut_fell_short(&mut self, cx: &ControllerContext, sent_at: Timestamp) -> bool {
        // Every unit in the window this request was judged by went out after the cut, and the
        // server still refused it: the cut left the rate above what it lets through. (Only a
        // `QuotaWindow` shorter than `DecreaseCooldown` gets here.) In the first windows of
        // several processes, all climbing at once, a refusal a window after our first cut may
        // be another's climb still on its way to its own throttle: it is ours a window later
        // (cut again at once, the process throttled first cut twice while the others cut once,
        // and the shares stayed that far apart for good). Only a refusal with `Retry-After`: a
        // run of bare ones is a bucket's, measured below; nor in a window learnt from a young
        // throttle, where the controller grows from its cut until a throttle measures a whole
        // window.
        let cut_at = cx.now.saturating_sub(cx.since_last_decrease);
        let cold = cx.instance_count > 1
            && cx.retry_after.is_some()
            && self.learnt.is_none()
            && self.age_at_cut <= cx.quota_window * COLD_WINDOWS;
        let windows = if cold { 2 } else { 1 };
        if sent_at.saturating_duration_since(cut_at) >= cx.quota_window * windows {
            return true;
        }
        // A run of bare throttles measures the server's pace below the rate: a bucket leaks
        // slower than the cut lets us send, and waiting out the cooldown only refuses more.
        self.leak(cx)
            .is_some_and(|pace| pace < cx.rate * (1.0 - self.options.cut_margin))
    }

    /// At a throttle (`cx`): the server's pace a run of bare throttles measured, if it is a
    /// bucket's leak. A bucket still accepts its leak during the run; a window that is spent
    /// accepts next to nothing until units leave it or it resets, and that says nothing of a
    /// pace (a fixed window of 10 s: cut to almost nothing before its boundary; one of a minute,
    /// with the library's defaults: an estimate of 60 a minute, held until the next probe).
    pub(super) fn leak(&mut self, cx: &ControllerContext) -> Option<f64> {
        let sent = sent_rate(cx.rate, cx.measured_send_rate);
        self.bare
            .throttled(cx.now, cx.quota_window, cx.retry_after, sent)
    }
}

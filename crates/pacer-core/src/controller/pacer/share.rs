//! The Pacer controller's reading of the units accepted as this process's share, across changes
//! of the instance count, and the demonstrated rate it raises.

use super::PacerController;
use crate::controller::RateControllerState;
use std::time::Duration;

impl PacerController {
    /// The units accepted over the last window as this process's share: within a window of a
    /// change of the instance count, scaled by `before / now` (that window was another share).
    pub(super) fn accepted_share(&mut self, state: &RateControllerState) -> f64 {
        let (share, instances) = self.share_of(state);
        self.instances = Some(instances);
        share
    }

    /// [`accepted_share`](Self::accepted_share) without noting a change of the instance count:
    /// the share, and the counts and the age of the change as they would be noted.
    pub(super) fn share_of(&self, state: &RateControllerState) -> (f64, (u32, u32, Duration)) {
        self.share_at(
            self.age(state),
            state.instance_count,
            state.quota_window,
            state.accepted_per_minute,
        )
    }

    /// [`share_of`](Self::share_of) from its parts: the controller's age, the instance count,
    /// the `QuotaWindow` and the units accepted over it, per minute.
    fn share_at(
        &self,
        age: Duration,
        instance_count: u32,
        quota_window: Duration,
        accepted_per_minute: f64,
    ) -> (f64, (u32, u32, Duration)) {
        let n = instance_count.max(1);
        let (now, before, at) = match self.instances {
            Some((last, _, _)) if last != n => (n, last, age),
            Some(seen) => seen,
            None => (n, n, age),
        };
        let share = if before != now && age.saturating_sub(at) < quota_window {
            accepted_per_minute * f64::from(before) / f64::from(now)
        } else {
            accepted_per_minute
        };
        (share, (now, before, at))
    }

    /// Raises the demonstrated rate (the most this process's share has reached) to the share
    /// now, while the estimate is not firm.
    pub(super) fn note_demonstrated(
        &mut self,
        age: Duration,
        instance_count: u32,
        quota_window: Duration,
        accepted_per_minute: f64,
    ) {
        if !self.firm {
            let n = f64::from(instance_count.max(1));
            let share = self
                .share_at(age, instance_count, quota_window, accepted_per_minute)
                .0;
            self.demonstrated = self.demonstrated.max(share * n);
        }
    }
}

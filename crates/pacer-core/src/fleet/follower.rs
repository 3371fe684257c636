//! The controller of a fleet member's own limiter.

use super::limiter::BuiltIn;
use crate::{Controller, ControllerContext, Feedback, LimiterOptions, Timestamp};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What a fleet member's driver tells its limiter's [`FleetFollower`]: whether the fleet's rate
/// is in force, the window the fleet's controller learnt, and the fleet's estimate to start
/// from when it is not.
#[derive(Debug, Default)]
pub struct FleetLink {
    following: AtomicBool,
    /// The fleet's [`server_window`](crate::FleetMember::server_window) in nanoseconds; 0 for
    /// none.
    server_window: AtomicU64,
    seed: Mutex<Option<(f64, bool)>>,
}

impl FleetLink {
    /// A link, not following yet (the member's own controller runs until the fleet answers).
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(FleetLink::default())
    }

    /// The fleet's rate is in force: the driver sets the limiter's rate to the member's share.
    pub fn follow(&self) {
        self.following.store(true, Ordering::Relaxed);
    }

    /// The fleet's rate is no longer in force: the member's own controller runs, starting from
    /// `estimate` (the fleet's estimate of the limit for the whole budget and whether it is
    /// firm), if it has none of its own.
    pub fn fall_back(&self, estimate: Option<(f64, bool)>) {
        if self.following.swap(false, Ordering::Relaxed) {
            *self.seed.lock() = estimate;
        }
    }

    /// Whether the fleet's rate is in force.
    #[must_use]
    pub fn is_following(&self) -> bool {
        self.following.load(Ordering::Relaxed)
    }

    /// The window the fleet's controller learnt
    /// ([`FleetMember::server_window`](crate::FleetMember::server_window)): while the fleet's
    /// rate is in force, the limiter's pause after a bare throttle is at most a quarter of it.
    pub fn set_server_window(&self, window: Option<Duration>) {
        let nanos = window.map_or(0, |w| u64::try_from(w.as_nanos()).unwrap_or(u64::MAX));
        self.server_window.store(nanos, Ordering::Relaxed);
    }

    /// The window set by [`set_server_window`](Self::set_server_window).
    #[must_use]
    pub fn server_window(&self) -> Option<Duration> {
        match self.server_window.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }
}

/// The controller of a fleet member's limiter. While the fleet's rate is in force
/// ([`FleetLink::follow`]) it holds the rate the member's driver sets (the member's share; the
/// fleet's own controller decides, in the store): a success moves nothing, a throttle cuts
/// nothing (the limiter still pauses for its `Retry-After`, and the member reports it to the
/// fleet at once). Otherwise the built-in controller the options select runs, as in any
/// limiter; it sees every event all along, so it takes over with its counts current, and with
/// the fleet's estimate when it had none.
#[derive(Debug)]
pub struct FleetFollower {
    inner: BuiltIn,
    link: Arc<FleetLink>,
}

impl FleetFollower {
    /// A follower of `link`, with the built-in controller `options` select for when the fleet
    /// is not in force.
    #[must_use]
    pub fn new(options: &LimiterOptions, link: Arc<FleetLink>) -> Self {
        FleetFollower {
            inner: BuiltIn::new(options),
            link,
        }
    }

    /// The controller of its own, seeded with the fleet's estimate if it was handed one.
    fn own(&mut self) -> &mut dyn Controller {
        if let Some((limit, firm)) = self.link.seed.lock().take() {
            self.inner.seed(limit, firm);
        }
        self.inner.get()
    }
}

impl Controller for FleetFollower {
    fn on_options(&mut self, options: &LimiterOptions, now: Timestamp) {
        self.inner.adopt(options);
        self.inner.get().on_options(options, now);
    }

    fn on_response(&mut self, feedback: &Feedback, now: Timestamp) {
        self.inner.get().on_response(feedback, now);
    }

    fn on_pause(&mut self, from: Timestamp, until: Timestamp) {
        self.inner.get().on_pause(from, until);
    }

    fn on_throttled(&mut self, cx: &ControllerContext) -> f64 {
        if self.link.is_following() {
            return cx.rate;
        }
        self.own().on_throttled(cx)
    }

    fn on_success(&mut self, cx: &ControllerContext) -> Option<f64> {
        if self.link.is_following() {
            return None;
        }
        self.own().on_success(cx)
    }

    /// The fleet's window while its rate is in force, else the member's own controller's.
    fn server_window(&self) -> Option<Duration> {
        if self.link.is_following() {
            self.link.server_window()
        } else {
            self.inner.server_window()
        }
    }
}

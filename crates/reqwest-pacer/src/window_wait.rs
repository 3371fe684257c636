//! The strict windows' part of the wait: their ETA before the queue, their take after it, and
//! what happens when their store cannot be reached.

use crate::RejectReason;
use crate::error::Rejection;
use crate::{PacerError, StrictWindow};
use pacer_core::{Clock, WindowError, WindowStore};
use std::sync::Arc;
use std::time::Duration;

/// A window with the key this request has in it.
pub(crate) struct KeyedWindow<'a> {
    pub(crate) window: &'a StrictWindow,
    pub(crate) key: String,
    pub(crate) limiter: &'a str,
}

/// What a window says of a request.
pub(crate) enum WindowAnswer {
    /// Go (the units were taken, or fit now, or the window is skipped while its store is down).
    Go,
    /// Not yet: wait this long and ask again.
    Wait(Duration),
}

/// The fallback store to call while the window's own is down, and the limit there.
struct Target<'a> {
    store: &'a dyn WindowStore,
    limit: u64,
}

impl KeyedWindow<'_> {
    /// When `units` would fit, without taking them.
    pub(crate) async fn eta(
        &self,
        units: u64,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        refuse: &impl Fn(RejectReason) -> Rejection,
    ) -> Result<WindowAnswer, PacerError> {
        let w = self.window;
        self.check_quarantine(clock)?;
        let primary = w.store.eta(&self.key, w.geometry, w.limit, units).await;
        let outcome = match self.on(primary, clock, instance_count, refuse, units)? {
            Ok(outcome) => outcome,
            Err(None) => return Ok(WindowAnswer::Go),
            Err(Some(t)) => t
                .store
                .eta(&self.key, w.geometry, t.limit, units)
                .await
                .map_err(|e| self.failed(&e, refuse, units, t.limit))?,
        };
        match outcome.wait() {
            None => Err(self.never(refuse, units, w.limit)),
            Some(wait) if wait.is_zero() => Ok(WindowAnswer::Go),
            Some(wait) => Ok(WindowAnswer::Wait(wait)),
        }
    }

    /// Takes `units` if they all fit now; otherwise says how long until they would.
    pub(crate) async fn take(
        &self,
        units: u64,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        refuse: &impl Fn(RejectReason) -> Rejection,
    ) -> Result<WindowAnswer, PacerError> {
        let w = self.window;
        let primary = w
            .store
            .try_take(&self.key, w.geometry, w.limit, units)
            .await;
        let outcome = match self.on(primary, clock, instance_count, refuse, units)? {
            Ok(outcome) => outcome,
            Err(None) => return Ok(WindowAnswer::Go),
            Err(Some(t)) => t
                .store
                .try_take(&self.key, w.geometry, t.limit, units)
                .await
                .map_err(|e| self.failed(&e, refuse, units, t.limit))?,
        };
        if outcome.is_acquired() {
            Ok(WindowAnswer::Go)
        } else {
            Ok(WindowAnswer::Wait(outcome.wait()))
        }
    }

    /// Sorts a call's result: its outcome (`Ok(Ok)`), a fallback to call instead
    /// (`Ok(Err(Some))`), skip the window (`Ok(Err(None))`), or fail the request (`Err`).
    #[allow(clippy::type_complexity)]
    fn on<T>(
        &self,
        result: Result<T, WindowError>,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        refuse: &impl Fn(RejectReason) -> Rejection,
        units: u64,
    ) -> Result<Result<T, Option<Target<'_>>>, PacerError> {
        match result {
            Ok(outcome) => {
                self.window.recovered();
                Ok(Ok(outcome))
            }
            Err(e) if e.is_unavailable() => match self.window.fallback(clock, instance_count, &e) {
                Some((store, limit)) => Ok(Err(Some(Target { store, limit }))),
                None if self.window.on_failure == crate::StoreFailure::FailOpen => Ok(Err(None)),
                None => Err(self.failed(&e, refuse, units, self.window.limit)),
            },
            Err(e) => Err(self.failed(&e, refuse, units, self.window.limit)),
        }
    }

    /// Under `FailClosed`, refuses while the window recovers from an outage of its store.
    fn check_quarantine(&self, clock: &Arc<dyn Clock>) -> Result<(), PacerError> {
        match self.window.quarantined(clock.now()) {
            Some(left) => Err(PacerError::WindowStore {
                limiter: self.limiter.to_owned(),
                message: format!(
                    "window {:?} refuses for {:.3} s more after an outage of its store, so that \
                     no span of the window can exceed its limit",
                    &*self.window.name,
                    left.as_secs_f64()
                ),
            }),
            None => Ok(()),
        }
    }

    fn failed(
        &self,
        e: &WindowError,
        refuse: &impl Fn(RejectReason) -> Rejection,
        units: u64,
        limit: u64,
    ) -> PacerError {
        if e.is_never() {
            return self.never(refuse, units, limit);
        }
        PacerError::WindowStore {
            limiter: self.limiter.to_owned(),
            message: format!("window {:?}: {e}", &*self.window.name),
        }
    }

    fn never(
        &self,
        refuse: &impl Fn(RejectReason) -> Rejection,
        units: u64,
        limit: u64,
    ) -> PacerError {
        PacerError::Rejected(refuse(RejectReason::AboveWindowLimit {
            window: self.window.name.to_string(),
            limit,
            units,
        }))
    }
}

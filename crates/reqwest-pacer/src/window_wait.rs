//! The strict windows' part of the wait: a request's key in each window, and the window's
//! refusals as the middleware's errors. What a window decides (its ETA, its take, its fallback
//! and quarantine when the store is down) is the core's [`pacer_core::WindowLimit`].

use crate::error::Rejection;
use crate::{PacerError, RejectReason, StrictWindow};
use pacer_core::{Clock, WindowAnswer, WindowRefusal};
use std::sync::Arc;

/// A window with the key this request has in it.
pub(crate) struct KeyedWindow<'a> {
    pub(crate) window: &'a StrictWindow,
    pub(crate) key: String,
    pub(crate) limiter: &'a str,
}

impl KeyedWindow<'_> {
    /// When the request's units would fit, without taking them.
    pub(crate) async fn eta(
        &self,
        units: u64,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        refuse: &impl Fn(RejectReason) -> Rejection,
    ) -> Result<WindowAnswer, PacerError> {
        let answer = self
            .window
            .window
            .eta(&self.key, units, clock, instance_count)
            .await;
        answer.map_err(|r| self.error(r, refuse))
    }

    /// Takes the request's units if they fit now, else says how long until they may.
    pub(crate) async fn take(
        &self,
        units: u64,
        clock: &Arc<dyn Clock>,
        instance_count: u32,
        refuse: &impl Fn(RejectReason) -> Rejection,
    ) -> Result<WindowAnswer, PacerError> {
        let answer = self
            .window
            .window
            .take(&self.key, units, clock, instance_count)
            .await;
        answer.map_err(|r| self.error(r, refuse))
    }

    fn error(
        &self,
        refusal: WindowRefusal,
        refuse: &impl Fn(RejectReason) -> Rejection,
    ) -> PacerError {
        match refusal {
            WindowRefusal::Rejected(reason) => PacerError::Rejected(refuse(reason)),
            WindowRefusal::Store { message } => PacerError::WindowStore {
                limiter: self.limiter.to_owned(),
                message,
            },
            // A refusal of a kind added later: reported as the store's, naming the window.
            _ => PacerError::WindowStore {
                limiter: self.limiter.to_owned(),
                message: format!("window {:?} refused the request", self.window.name()),
            },
        }
    }
}

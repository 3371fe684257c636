//! `none`: no limiter, retry only. Every attempt goes the moment it is asked for; a throttled
//! request sleeps its `Retry-After` and is sent again, up to 4 attempts in all.

use super::{Client, ClientSetup, Mode, ModeError, Response};
use pacer_core::{Acquired, Changes, RejectReason, Ticket, Timestamp};
use std::time::Duration;

/// The `none` mode: a retry loop that honours `Retry-After` and nothing else.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLimiter;

impl Mode for NoLimiter {
    fn name(&self) -> &str {
        "none"
    }

    fn client(&self, _setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError> {
        Ok(Box::new(NoLimiter))
    }
}

impl Client for NoLimiter {
    fn acquire(&mut self, _units: u64, _now: Timestamp) -> Result<Acquired, RejectReason> {
        Ok(Acquired::Now)
    }

    fn pop_ready(&mut self, _now: Timestamp) -> Option<(Ticket, Duration)> {
        None
    }

    fn next_grant_at(&mut self, _now: Timestamp) -> Option<Timestamp> {
        None
    }

    fn on_response(&mut self, _response: &Response, _now: Timestamp) -> Changes {
        Changes::default()
    }

    fn retry_delay(&self, retry_after: Duration) -> Duration {
        retry_after
    }

    fn set_instance_count(&mut self, _count: u32, _now: Timestamp) -> Changes {
        Changes::default()
    }

    fn rate(&self) -> Option<f64> {
        None
    }
}

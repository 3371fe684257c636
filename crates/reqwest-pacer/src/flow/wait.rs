//! Step 3 of the flow: every wait before a send, within one `MaxWait`.

use super::Request;
use crate::PacerError;
use crate::error::Rejection;
use pacer_core::{Attempt, Refusal, Timestamp, WindowLimit};
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Request<'_> {
    /// The engine's fast path ([`pacer_core::Engine::go_now`]): the time the request may go
    /// if nothing but its adaptive limiter can hold it and that limiter has its units now.
    /// `now` is the time on the limiter's clock.
    pub(super) fn go_now(
        &self,
        windows: &[(&WindowLimit, String)],
        now: Timestamp,
    ) -> Option<Timestamp> {
        let (named, units) = (self.named, self.units);
        let sent_at = named
            .engine
            .go_now(&self.endpoint, units, !windows.is_empty(), now)?;
        named.metrics.sent(units, Duration::ZERO);
        Some(sent_at)
    }

    /// Step 3: every wait before a send, in one budget of `MaxWait`, in the engine's order
    /// ([`pacer_core::Engine::wait`]). Returns when the request may go, or why it may not.
    pub(super) async fn wait(
        &self,
        windows: &[(&WindowLimit, String)],
        start: Timestamp,
    ) -> std::result::Result<Timestamp, PacerError> {
        let (named, config, endpoint, units) =
            (self.named, &*self.config, &self.endpoint, self.units);
        let options = &config.options;
        let _waiting = named.waiting();
        let attempt = Attempt::new(units, start, self.max_wait().unwrap_or(options.max_wait))
            .tokens(self.tokens())
            .windows(windows)
            .priority(self.priority())
            .timeout(self.timeout())
            .instance_count(named.instance_count(config))
            .max_retry_after(options.max_retry_after);
        let mut tokens_attempt = self
            .own
            .as_ref()
            .map_or(0, |o| o.attempt_sent.load(Ordering::Relaxed));
        let waited = named
            .engine
            .wait(
                &config.rules,
                &named.clock,
                endpoint,
                &attempt,
                &mut tokens_attempt,
            )
            .await;
        if let Some(own) = &self.own {
            own.attempt_sent.store(tokens_attempt, Ordering::Relaxed);
        }
        let now = waited.map_err(|refusal| match refusal {
            Refusal::Rejected(reason) => {
                PacerError::Rejected(Rejection::new(&named.name, endpoint.key(), reason))
            }
            Refusal::Store { message } => PacerError::WindowStore {
                limiter: named.name.to_string(),
                message,
            },
            // A refusal of a kind added later: reported as a store's, with what it says.
            other => PacerError::WindowStore {
                limiter: named.name.to_string(),
                message: other.to_string(),
            },
        })?;
        named.metrics.sent(units, now - start);
        Ok(now)
    }
}

//! Step 3 of the flow: every wait before a send, within one `MaxWait`.

use super::Request;
use crate::PacerError;
use crate::error::Rejection;
use pacer_core::{Attempt, Refusal, Timestamp, WindowLimit};
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Request<'_> {
    /// The attempt the engine sees: the request's units, tokens, strict windows and limits,
    /// from `start` (the time on the limiter's clock).
    fn attempt<'w>(
        &self,
        windows: &'w [(&'w WindowLimit, String)],
        start: Timestamp,
        not_before: Option<Timestamp>,
    ) -> Attempt<'w> {
        let (named, options) = (self.named, &self.config.options);
        Attempt::new(
            self.units,
            start,
            self.max_wait().unwrap_or(options.max_wait),
        )
        .tokens(self.tokens())
        .windows(windows)
        .priority(self.priority())
        .timeout(self.timeout())
        .instance_count(named.instance_count(&self.config))
        .max_retry_after(options.max_retry_after)
        .not_before(not_before)
        .max_concurrent(self.max_concurrent())
    }

    /// The engine's fast path ([`pacer_core::Engine::go_now`]): the time the request may go
    /// if nothing holds it now, its units (and tokens) taken. `now` is the time on the
    /// limiter's clock.
    #[inline]
    pub(super) fn go_now(
        &self,
        windows: &[(&WindowLimit, String)],
        now: Timestamp,
    ) -> Option<Timestamp> {
        let (named, options) = (self.named, &self.config.options);
        // Only what the fast path reads: the lane, the timeout and the instance count are the
        // wait's.
        let attempt = Attempt::new(self.units, now, options.max_wait)
            .tokens(self.tokens())
            .windows(windows)
            .max_retry_after(options.max_retry_after)
            .max_concurrent(self.max_concurrent());
        let mut tokens_attempt = self.tokens_attempt();
        let sent_at = named.engine.go_now(
            &self.config.rules,
            &self.endpoint,
            &attempt,
            &mut tokens_attempt,
        )?;
        self.set_tokens_attempt(tokens_attempt);
        named.metrics.sent(self.units, Duration::ZERO);
        Some(sent_at)
    }

    /// The number under which the request's tokens are in flight (0 before its first send).
    fn tokens_attempt(&self) -> u64 {
        self.own
            .as_ref()
            .map_or(0, |o| o.attempt_sent.load(Ordering::Relaxed))
    }

    fn set_tokens_attempt(&self, attempt: u64) {
        if let Some(own) = &self.own {
            own.attempt_sent.store(attempt, Ordering::Relaxed);
        }
    }

    /// Step 3: every wait before a send, in one budget of `MaxWait`, in the engine's order
    /// ([`pacer_core::Engine::begin_wait`], pumped by [`pacer_core::drive::wait`]), not before `not_before` (a retry's own wait). Returns
    /// when the request may go, or why it may not.
    pub(super) async fn wait(
        &self,
        windows: &[(&WindowLimit, String)],
        start: Timestamp,
        not_before: Option<Timestamp>,
    ) -> std::result::Result<Timestamp, PacerError> {
        let (named, config, endpoint, units) =
            (self.named, &*self.config, &self.endpoint, self.units);
        let _waiting = named.waiting();
        let attempt = self.attempt(windows, start, not_before);
        let mut tokens_attempt = self.tokens_attempt();
        let waited = pacer_core::drive::wait(
            &named.engine,
            &config.rules,
            &named.clock,
            endpoint,
            &attempt,
            &mut tokens_attempt,
        )
        .await;
        self.set_tokens_attempt(tokens_attempt);
        let now = waited.map_err(|refusal| match refusal {
            Refusal::Rejected(reason) => PacerError::Rejected(Rejection::new(
                crate::Paced::new(&named.name, endpoint.key()),
                reason,
            )),
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

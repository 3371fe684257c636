//! Step 3 of the flow: every wait before a send, within one `MaxWait`.

use super::Request;
use crate::PacerError;
use crate::RejectReason;
use crate::error::Rejection;
use crate::window_wait::KeyedWindow;
use pacer_core::WaitCause;
use pacer_core::WindowAnswer;
use pacer_core::{CostAboveLimit, Timestamp};
use std::sync::atomic::Ordering;
use std::time::Duration;

impl Request<'_> {
    /// The time the request may go if it may go at once without looking at anything but the
    /// adaptive limiter (no strict window, no rate-limit header yet) and that limiter has its
    /// units now; they are then taken.
    pub(super) fn go_now(&self, windows: &[KeyedWindow<'_>]) -> Option<Timestamp> {
        let (named, units) = (self.named, self.units);
        if !windows.is_empty() || named.engine.headers_seen() {
            return None;
        }
        let permit = self.endpoint.limiter().try_acquire(units).ok()?;
        named.metrics.sent(units, Duration::ZERO);
        Some(permit.granted_at())
    }

    /// Step 3: every wait before a send, in one budget of `MaxWait`: a cost above the limiter's
    /// `max_cost` is refused first; then the quotas in tokens (a cost above one's limit is
    /// refused first), the server-ordered stop, the strict windows' ETA, the proactive delay,
    /// the adaptive queue, the windows' take, then the tokens' take.
    /// Returns when the request may go, or why it may not; a refused request takes nothing (but
    /// units of a window taken before another window or the queue refused it).
    pub(super) async fn wait(
        &self,
        windows: &[KeyedWindow<'_>],
        start: Timestamp,
    ) -> std::result::Result<Timestamp, PacerError> {
        let (named, config, endpoint, units) =
            (self.named, &*self.config, &self.endpoint, self.units);
        let (engine, limiter) = (&named.engine, endpoint.limiter());
        let clock = &named.clock;
        let options = &config.options;
        let max_wait = self.max_wait().unwrap_or(options.max_wait);
        let instance_count = named.instance_count(config);
        let _waiting = named.waiting();
        let refuse = |reason| Rejection::new(&named.name, endpoint.key(), reason);
        let above = |e: CostAboveLimit| PacerError::Rejected(refuse(e.into()));
        let past_timeout = |cause| {
            self.timeout().map(|(_, timeout)| {
                PacerError::Rejected(refuse(RejectReason::PastTimeout { cause, timeout }))
            })
        };
        let too_long = |cause, needed| {
            PacerError::Rejected(refuse(RejectReason::WaitTooLong {
                cause,
                needed,
                max_wait,
            }))
        };
        // Sleeps `wait` more if the budget allows.
        let sleep = |wait: Duration, cause| async move {
            let needed = (clock.now() - start) + wait;
            if needed > max_wait {
                return Err(too_long(cause, needed));
            }
            if let Some((end, _)) = self.timeout()
                && clock.now().saturating_add(wait) > end
            {
                return Err(past_timeout(cause).expect("a timeout"));
            }
            if !wait.is_zero() {
                clock.sleep_until(clock.now() + wait).await;
            }
            Ok(())
        };

        // A cost the limiter could never repay within MaxWait is refused before any wait (the
        // fast path never takes it: `try_acquire` refuses a debt that outlasts MaxWait).
        let max_cost = limiter.max_cost();
        if units > max_cost {
            return Err(PacerError::Rejected(refuse(RejectReason::CostAboveLimit {
                cost: units,
                max: max_cost,
            })));
        }
        // The quotas in other units (tokens): a cost above one is refused before anything else;
        // a wait for its refill is capped like an exhausted stop.
        let cap = config.rules.server_stop().max_exhausted_delay();
        let mut unit_waited = Duration::ZERO;
        while let Some(wait) = engine
            .tokens_wait(endpoint, self.tokens(), clock.now())
            .map_err(above)?
        {
            let wait = wait.min(cap.saturating_sub(unit_waited));
            if wait.is_zero() {
                break;
            }
            sleep(wait, WaitCause::UnitQuota).await?;
            unit_waited += wait;
        }
        // The server-ordered stop (and, without windows to wait for first, the proactive delay:
        // one look at the header state serves both).
        let hold = engine.hold(
            &config.rules,
            endpoint,
            start,
            options.max_retry_after,
            !windows.is_empty(),
        );
        sleep(hold.wait, hold.cause).await?;
        if !windows.is_empty() {
            // Each strict window's ETA, without taking anything yet.
            for w in windows {
                if let WindowAnswer::Wait(wait) =
                    w.eta(units, clock, instance_count, &refuse).await?
                {
                    sleep(wait, WaitCause::Window).await?;
                }
            }
            // The proactive algorithm's delay, on the state as it is now.
            let hold = engine.hold(
                &config.rules,
                endpoint,
                clock.now(),
                options.max_retry_after,
                false,
            );
            sleep(hold.wait, hold.cause).await?;
        }
        // The adaptive limiter's queue, in the request's lane, with what is left of the budget
        // (and of the TotalTimeout).
        let now = clock.now();
        let waited = now - start;
        let left = max_wait.saturating_sub(waited);
        let timeout_left = self.timeout().map(|(end, _)| end - now);
        let _permit = limiter
            .acquire_within(units, timeout_left.map_or(left, |t| t.min(left)))
            .priority(self.priority())
            .await
            .map_err(|r| match (&r, timeout_left) {
                (pacer_core::Rejected::WaitTooLong { needed, .. }, Some(t))
                    if t < left && *needed <= left =>
                {
                    past_timeout(WaitCause::Queue).expect("a timeout")
                }
                _ => PacerError::Rejected(refuse(RejectReason::from_limiter(&r, waited, max_wait))),
            })?;
        // Take the windows' units; if another process took them meanwhile, wait again.
        for w in windows {
            loop {
                let answer = match w.take(units, clock, instance_count, &refuse).await {
                    Ok(answer) => answer,
                    Err(e) => {
                        limiter.refund(units);
                        return Err(e);
                    }
                };
                match answer {
                    WindowAnswer::Go => break,
                    WindowAnswer::Wait(wait) => {
                        if let Err(e) = sleep(wait, WaitCause::Window).await {
                            limiter.refund(units);
                            return Err(e);
                        }
                    }
                }
            }
        }
        // Take the tokens; if concurrent requests took them meanwhile, wait again (still within
        // the exhausted-stop cap).
        let mut attempt = self
            .own
            .as_ref()
            .map_or(0, |o| o.attempt_sent.load(Ordering::Relaxed));
        loop {
            let force = unit_waited >= cap;
            let taken =
                engine.tokens_take(endpoint, self.tokens(), clock.now(), &mut attempt, force);
            let wait = match taken {
                Ok(None) => break,
                Ok(Some(wait)) => wait.min(cap.saturating_sub(unit_waited)),
                Err(e) => {
                    limiter.refund(units);
                    return Err(above(e));
                }
            };
            if let Err(e) = sleep(wait, WaitCause::UnitQuota).await {
                limiter.refund(units);
                return Err(e);
            }
            unit_waited += wait;
        }
        if let Some(own) = &self.own {
            own.attempt_sent.store(attempt, Ordering::Relaxed);
        }
        let now = clock.now();
        engine.sent(endpoint, now);
        named.metrics.sent(units, now - start);
        Ok(now)
    }
}

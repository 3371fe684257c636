//! Every wait before a send, in one `MaxWait` budget, in one order for every driver.

use super::{Endpoint, Engine, Refusal, RejectReason, Rules, WaitCause, WindowAnswer, WindowLimit};
use crate::{Clock, Limiter, Priority, Timestamp};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// One attempt of a request, as [`Engine::wait`] needs it: its units, its tokens, its keyed
/// strict windows and its limits.
///
/// ```
/// use pacer_core::{Attempt, Timestamp};
/// use std::time::Duration;
///
/// let attempt = Attempt::new(1, Timestamp::ZERO, Duration::from_secs(30)).tokens(Some(500));
/// # let _ = attempt;
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Attempt<'a> {
    pub(super) units: u64,
    pub(super) tokens: Option<u64>,
    pub(super) windows: &'a [(&'a WindowLimit, String)],
    max_wait: Duration,
    priority: Priority,
    timeout: Option<(Timestamp, Duration)>,
    pub(super) start: Timestamp,
    instance_count: u32,
    pub(super) max_retry_after: Duration,
    pub(super) not_before: Option<Timestamp>,
    pub(super) max_concurrent: Option<NonZeroU32>,
}

impl<'a> Attempt<'a> {
    /// An attempt of `units` that came in at `start` and may wait `max_wait`, with no tokens,
    /// no window, the default lane, no timeout, one instance, no cap on a `Retry-After`
    /// beyond `max_wait`'s and no cap of its own on requests in flight.
    #[inline]
    pub fn new(units: u64, start: Timestamp, max_wait: Duration) -> Self {
        Attempt {
            units,
            tokens: None,
            windows: &[],
            max_wait,
            priority: Priority::default(),
            timeout: None,
            start,
            instance_count: 1,
            max_retry_after: Duration::MAX,
            not_before: None,
            max_concurrent: None,
        }
    }

    /// Its cost in tokens, if known (for the quotas in tokens).
    #[inline]
    pub fn tokens(mut self, tokens: Option<u64>) -> Self {
        self.tokens = tokens;
        self
    }

    /// Its strict windows, each with the request's key in it.
    #[inline]
    pub fn windows(mut self, windows: &'a [(&'a WindowLimit, String)]) -> Self {
        self.windows = windows;
        self
    }

    /// Its lane in the adaptive limiter's queue.
    #[inline]
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// When its whole request must end, and that timeout (the middleware's `TotalTimeout`): a
    /// wait that would end after it is refused at once.
    #[inline]
    pub fn timeout(mut self, timeout: Option<(Timestamp, Duration)>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The number of processes sharing the limit (a window's fallback takes its share).
    #[inline]
    pub fn instance_count(mut self, count: u32) -> Self {
        self.instance_count = count;
        self
    }

    /// The cap on a server's `Retry-After` (`MaxRetryAfter`).
    #[inline]
    pub fn max_retry_after(mut self, cap: Duration) -> Self {
        self.max_retry_after = cap;
        self
    }

    /// The earliest it may go, whatever else allows: a retry after a refusal for contention
    /// waits its own [`After::retry_in`](super::After::retry_in) first, within the same
    /// `MaxWait`.
    #[inline]
    pub fn not_before(mut self, at: Option<Timestamp>) -> Self {
        self.not_before = at;
        self
    }

    /// Its own cap on its endpoint's requests in flight ([`MaxConcurrent`](crate::MaxConcurrent)):
    /// it waits for its units until fewer than that many are in flight, the limiter's own
    /// `MaxConcurrent` applying as well.
    ///
    /// ```
    /// use pacer_core::{Attempt, MaxConcurrent, Timestamp};
    /// use std::time::Duration;
    ///
    /// let attempt = Attempt::new(1, Timestamp::ZERO, Duration::from_secs(30))
    ///     .max_concurrent(Some(MaxConcurrent(2).cap()));
    /// # let _ = attempt;
    /// ```
    #[inline]
    pub fn max_concurrent(mut self, cap: Option<NonZeroU32>) -> Self {
        self.max_concurrent = cap;
        self
    }
}

/// The adaptive limiter's grant while the rest of an attempt's wait runs (the windows' units, the
/// tokens): a refusal gives its units and its slot back ([`Limiter::refund`]); a wait dropped
/// meanwhile gives its slot back ([`Limiter::landed`]), so that an abandoned request does not
/// hold a place under `MaxConcurrent` for ever.
struct Granted<'a> {
    limiter: &'a Limiter,
    units: u64,
    held: bool,
}

impl Granted<'_> {
    /// The attempt was refused: its units and its slot go back.
    fn refund(&mut self) {
        self.held = false;
        self.limiter.refund(self.units);
    }

    /// The attempt goes: the driver holds its slot from here.
    fn keep(mut self) {
        self.held = false;
    }
}

impl Drop for Granted<'_> {
    fn drop(&mut self) {
        if self.held {
            self.limiter.landed();
        }
    }
}

impl Engine {
    /// Every wait of one attempt before its send, within one `MaxWait` from its start, in this
    /// order:
    ///
    /// 1. a cost the limiter could never repay is refused; a retry's own wait
    ///    ([`Attempt::not_before`]);
    /// 2. the quotas in tokens (a cost above one's limit is refused; a wait for a refill is
    ///    capped like an exhausted stop);
    /// 3. the server-ordered stop ([`Engine::hold`]);
    /// 4. each strict window's ETA, then the proactive delay (without windows, step 3 gives it);
    /// 5. the adaptive limiter's units, in the attempt's lane, and a slot among its endpoint's
    ///    requests in flight under `MaxConcurrent` (the limiter's, and the attempt's own);
    /// 6. each window's units are taken, then the tokens (waiting again if another request or
    ///    process took them meanwhile).
    ///
    /// Sleeps on `clock`; returns when the attempt may go, the send recorded
    /// ([`Engine::sent`]), a request in flight from then on (see [`Engine::go_now`]). `tokens_attempt` carries the number under which the request's tokens
    /// are in flight (0 at first; see [`Engine::tokens_take`]). A refused attempt takes nothing,
    /// but the units of a window taken before another window refused it.
    ///
    /// # Errors
    ///
    /// [`Refusal::Rejected`] with the reason; [`Refusal::Store`] when a strict window's store
    /// failed and its policy does not send without it.
    pub async fn wait(
        &self,
        rules: &Rules,
        clock: &Arc<dyn Clock>,
        endpoint: &Endpoint,
        attempt: &Attempt<'_>,
        tokens_attempt: &mut u64,
    ) -> Result<Timestamp, Refusal> {
        let (units, start, max_wait) = (attempt.units, attempt.start, attempt.max_wait);
        let limiter = endpoint.limiter();
        if let Some(fleet) = endpoint.fleet() {
            fleet.asked(units, start);
        }
        let past_timeout = |cause| {
            attempt
                .timeout
                .map(|(_, timeout)| Refusal::Rejected(RejectReason::PastTimeout { cause, timeout }))
        };
        // The time, read again only after what can take time (a sleep, a store's answer, the
        // limiter's queue): a request nothing holds reads the clock once, before it comes here.
        let mut now = start;
        // Sleeps `wait` more from `now` if the budget allows; the time after it.
        let sleep = |now: Timestamp, wait: Duration, cause| async move {
            let needed = (now - start) + wait;
            if needed > max_wait {
                return Err(Refusal::Rejected(RejectReason::WaitTooLong {
                    cause,
                    needed,
                    max_wait,
                }));
            }
            if let Some((end, _)) = attempt.timeout
                && now.saturating_add(wait) > end
            {
                return Err(past_timeout(cause).expect("a timeout"));
            }
            if wait.is_zero() {
                return Ok(now);
            }
            clock.sleep_until(now + wait).await;
            Ok(clock.now())
        };
        // 1. A cost the limiter could never repay within MaxWait.
        let max_cost = limiter.max_cost();
        if units > max_cost {
            return Err(Refusal::Rejected(RejectReason::CostAboveLimit {
                cost: units,
                max: max_cost,
            }));
        }
        // A retry's own wait (a refusal for contention), before anything is asked.
        if let Some(at) = attempt.not_before.filter(|&at| at > now) {
            now = sleep(now, at - now, WaitCause::ServerStop).await?;
        }
        // 2. The quotas in tokens.
        let cap = rules.server_stop().max_exhausted_delay();
        let mut unit_waited = Duration::ZERO;
        while let Some(wait) = self
            .tokens_wait(endpoint, attempt.tokens, now)
            .map_err(|e| Refusal::Rejected(e.into()))?
        {
            let wait = wait.min(cap.saturating_sub(unit_waited));
            if wait.is_zero() {
                break;
            }
            now = sleep(now, wait, WaitCause::UnitQuota).await?;
            unit_waited += wait;
        }
        // 3. The server-ordered stop (and, without windows to wait for first, the proactive
        // delay: one look at the server's state serves both).
        let windows = attempt.windows;
        let hold = self.hold(
            rules,
            endpoint,
            start,
            attempt.max_retry_after,
            !windows.is_empty(),
        );
        now = sleep(now, hold.wait, hold.cause).await?;
        // 4. Each strict window's ETA, without taking anything yet, then the proactive delay on
        // the state as it is now.
        if !windows.is_empty() {
            for (w, key) in windows {
                let answer = w.eta(key, units, clock, attempt.instance_count).await?;
                now = clock.now();
                if let WindowAnswer::Wait(wait) = answer {
                    now = sleep(now, wait, WaitCause::Window).await?;
                }
            }
            let hold = self.hold(rules, endpoint, now, attempt.max_retry_after, false);
            now = sleep(now, hold.wait, hold.cause).await?;
        }
        // 5. The adaptive limiter's queue, in the attempt's lane, with what is left of the
        // budget (and of the timeout). Units that are there are taken at once, as the queue's
        // first look would take them, without building its future.
        let slots = attempt.max_concurrent;
        if let Ok(permit) = limiter.try_acquire_at(units, slots, now) {
            now = permit.granted_at();
        } else {
            let waited = now - start;
            let left = max_wait.saturating_sub(waited);
            let timeout_left = attempt.timeout.map(|(end, _)| end - now);
            let mut acquire = limiter
                .acquire_within(units, timeout_left.map_or(left, |t| t.min(left)))
                .priority(attempt.priority);
            if let Some(slots) = slots {
                acquire = acquire.max_concurrent(slots);
            }
            let permit = acquire.await.map_err(|r| match (&r, timeout_left) {
                (
                    RejectReason::WaitTooLong {
                        cause: cause @ (WaitCause::Queue | WaitCause::Concurrency),
                        needed,
                        ..
                    },
                    Some(t),
                ) if t < left && *needed <= left => past_timeout(*cause).expect("a timeout"),
                _ => Refusal::Rejected(RejectReason::from_limiter(&r, waited, max_wait)),
            })?;
            now = permit.granted_at();
        }
        let mut granted = Granted {
            limiter,
            units,
            held: true,
        };
        // 6. Take the windows' units, then the tokens; if others took them meanwhile, wait
        // again (the tokens still within the exhausted-stop cap).
        for (w, key) in windows {
            loop {
                let answer = match w.take(key, units, clock, attempt.instance_count).await {
                    Ok(answer) => answer,
                    Err(e) => {
                        granted.refund();
                        return Err(e);
                    }
                };
                now = clock.now();
                match answer {
                    WindowAnswer::Go => break,
                    // The next take reads the time again.
                    WindowAnswer::Wait(wait) => {
                        if let Err(e) = sleep(now, wait, WaitCause::Window).await {
                            granted.refund();
                            return Err(e);
                        }
                    }
                }
            }
        }
        loop {
            let force = unit_waited >= cap;
            let taken = self.tokens_take(endpoint, attempt.tokens, now, tokens_attempt, force);
            let wait = match taken {
                Ok(None) => break,
                Ok(Some(wait)) => wait.min(cap.saturating_sub(unit_waited)),
                Err(e) => {
                    granted.refund();
                    return Err(Refusal::Rejected(e.into()));
                }
            };
            match sleep(now, wait, WaitCause::UnitQuota).await {
                Ok(after) => now = after,
                Err(e) => {
                    granted.refund();
                    return Err(e);
                }
            }
            unit_waited += wait;
        }
        granted.keep();
        self.sent(endpoint, now);
        Ok(now)
    }
}

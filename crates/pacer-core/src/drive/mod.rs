//! What the drivers share to do the I/O the engine asks for: the engine ([`crate::Engine`])
//! decides and never waits; a driver sleeps, calls the stores, queues, sends and reads.
//!
//! - [`ready`]: an [`Exchange`]'s current attempt's wait, its fast path first;
//! - [`wait`]: an attempt's wait ([`AttemptWait`](crate::AttemptWait)) run on a [`Clock`], its
//!   strict windows asked through their stores, its fleet's pool drawn from, the limiter's queue
//!   awaited: what the reqwest
//!   middleware and the tower layer run before each send;
//! - [`WindowLimit`]: a strict window's store, with what to do when it cannot be reached;
//! - [`read_body`] and [`PacerBody`]: a response's body read where the rules need it, and handed
//!   on whole.

mod body;
mod window_limit;

pub use body::{PacerBody, read_body};
pub use window_limit::{DEFAULT_FRAMES, WindowLimit};

use crate::{
    Attempt, Clock, Driver, Endpoint, Engine, Exchange, Refusal, Refused, Rules, Timestamp,
    WaitStep,
};
use std::sync::Arc;

/// Runs the current attempt's wait of `exchange` on the driver's clock: the fast path
/// ([`Exchange::go_now`]) when nothing holds it, else its whole wait ([`wait`]), counted as a
/// request waiting meanwhile. Returns when it may go ([`Exchange::went`] done), or why it may
/// not ([`Exchange::refused`] done). `windows` are the strict windows the request is counted
/// in, each with its key.
///
/// # Errors
///
/// [`Refused`]: the refusal, and what was done until then.
#[inline]
pub async fn ready(
    exchange: &mut Exchange,
    driver: &Driver<'_>,
    windows: &[(&WindowLimit, String)],
) -> Result<Timestamp, Refused> {
    match exchange.go_now(driver, windows) {
        Some(at) => Ok(at),
        // Boxed: the rare wait would otherwise make every request's future larger.
        None => Box::pin(wait_for(exchange, driver, windows)).await,
    }
}

/// [`ready`]'s slow path.
async fn wait_for(
    exchange: &mut Exchange,
    driver: &Driver<'_>,
    windows: &[(&WindowLimit, String)],
) -> Result<Timestamp, Refused> {
    let _waiting = driver.metrics.waiting();
    let attempt = exchange.attempt(driver, windows);
    let endpoint = Arc::clone(exchange.endpoint());
    let (engine, rules, clock) = (driver.engine, driver.rules, driver.clock);
    match wait(
        engine,
        rules,
        clock,
        &endpoint,
        &attempt,
        exchange.tokens_attempt(),
    )
    .await
    {
        Ok(at) => {
            exchange.went(driver, at);
            Ok(at)
        }
        Err(refusal) => Err(exchange.refused(driver, refusal, clock.now())),
    }
}

/// Runs the wait of `attempt` before its send ([`Engine::begin_wait`]) on `clock`: sleeps what
/// it says, asks its strict windows' stores and its fleet's pool, waits in the endpoint's
/// limiter's queue. Returns
/// when the attempt may go, its send recorded, a request in flight from then on (see
/// [`Engine::go_now`]); `tokens_attempt` is as for [`Engine::begin_wait`].
///
/// ```
/// use pacer_core::{Attempt, Clock, Engine, Limiter, LimiterOptions, ManualClock, Rules, Timestamp};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let clock = ManualClock::new();
/// let shared: Arc<dyn Clock> = Arc::new(clock.clone());
/// let engine = Engine::new(100, Duration::from_secs(3600));
/// let endpoint = engine.endpoint("api", clock.now(), || {
///     Limiter::builder(LimiterOptions::default()).clock(Arc::clone(&shared)).build().unwrap()
/// }, |_| {});
/// let attempt = Attempt::new(1, clock.now(), Duration::from_secs(30));
/// let mut tokens = 0;
/// let sent_at = pacer_core::drive::wait(&engine, &Rules::default(), &shared, &endpoint, &attempt,
///     &mut tokens).await;
/// assert_eq!(sent_at, Ok(clock.now()));
/// # }
/// ```
///
/// # Errors
///
/// [`Refusal::Rejected`] with the reason; [`Refusal::Store`] when a strict window's store
/// failed and its policy does not send without it.
pub async fn wait(
    engine: &Engine,
    rules: &Rules,
    clock: &Arc<dyn Clock>,
    endpoint: &Endpoint,
    attempt: &Attempt<'_>,
    tokens_attempt: &mut u64,
) -> Result<Timestamp, Refusal> {
    let mut machine = engine.begin_wait(rules, endpoint, attempt, tokens_attempt);
    let mut step = machine.start();
    loop {
        step = match step {
            WaitStep::Sleep(until) => {
                clock.sleep_until(until).await;
                machine.slept(clock.now())
            }
            WaitStep::AskWindow { index, take } => {
                let (window, key) = &attempt.windows[index];
                let (units, count) = (attempt.units, attempt.instance_count);
                let answer = if take {
                    window.take(key, units, clock, count).await
                } else {
                    window.eta(key, units, clock, count).await
                };
                machine.window_answered(clock.now(), answer)
            }
            WaitStep::AskPool => {
                let fleet = endpoint
                    .fleet()
                    .expect("only a fleet's member draws from a pool");
                let drawn = fleet.draw(machine.draw_request(), clock.as_ref()).await;
                machine.pool_answered(clock.now(), drawn)
            }
            WaitStep::Queue { within } => {
                let mut acquire = (endpoint.limiter())
                    .acquire_within(attempt.units, within)
                    .priority(attempt.priority);
                if let Some(slots) = attempt.max_concurrent {
                    acquire = acquire.max_concurrent(slots);
                }
                machine.queued(acquire.await.map(|permit| permit.granted_at()))
            }
            WaitStep::Go(at) => return Ok(at),
            WaitStep::Refused(refusal) => return Err(refusal),
        };
    }
}

#[cfg(test)]
mod tests;

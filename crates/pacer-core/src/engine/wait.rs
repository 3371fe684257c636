//! Every wait before a send, in one `MaxWait` budget, in one order for every driver: a state
//! machine that takes the time and the answers of what it asked, and says what to do next. It
//! never sleeps, reads no clock and calls no store: the driver does ([`crate::drive::wait`]
//! for an async driver).

use super::{Attempt, Endpoint, Engine, Refusal, RejectReason, Rules, WaitCause, WindowAnswer};
use crate::Timestamp;
use std::time::Duration;

/// What the driver does next for an attempt's wait ([`AttemptWait`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum WaitStep {
    /// Sleep until this time, then [`AttemptWait::slept`] with the time then.
    Sleep(Timestamp),
    /// Ask the attempt's strict window at `index` (in [`Attempt::windows`]) when its units would
    /// fit (`take: false`: `WindowLimit::eta`) or take them (`take: true`:
    /// `WindowLimit::take`), then [`AttemptWait::window_answered`] with the time after the
    /// store answered.
    AskWindow {
        /// The window's place in the attempt's windows.
        index: usize,
        /// Take the units, rather than ask when they would fit.
        take: bool,
    },
    /// Draw the attempt's units from its fleet's pool ([`AttemptWait::draw_request`], through
    /// [`FleetHandle::draw`](crate::FleetHandle::draw)), then [`AttemptWait::pool_answered`]
    /// with the time after the store answered. Only in a fleet that draws from its pool
    /// ([`FleetMember::pool`](crate::FleetMember::pool)).
    AskPool,
    /// Wait in the endpoint's adaptive limiter's queue for the attempt's units (in its lane,
    /// under its `MaxConcurrent`) at most `within`, then [`AttemptWait::queued`] with the grant's
    /// time or the limiter's refusal.
    Queue {
        /// The most the queue may take: what is left of `MaxWait` and of the timeout.
        within: Duration,
    },
    /// The attempt may go at this time: its units, window units and tokens taken, its send
    /// recorded, a request in flight from then on (see [`Engine::go_now`]).
    Go(Timestamp),
    /// The attempt is refused, having taken nothing (but a window's units taken before another
    /// window refused it).
    Refused(Refusal),
}

/// Where an attempt's wait stands: the step it runs when it is next driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The cost, then a retry's own wait.
    Begin,
    /// The quotas in tokens.
    Tokens,
    /// The server-ordered stop (and, without windows, the proactive delay).
    Hold,
    /// Window `i`'s ETA, asked (`asked`) or to ask.
    Eta { i: usize, asked: bool },
    /// The proactive delay on the state after the windows' ETAs.
    HoldAgain,
    /// The fleet's pool, asked (`asked`) or to ask.
    Pool { asked: bool },
    /// The pool's units are due: a stop that began meanwhile sends the attempt back to draw
    /// after it.
    Drawn,
    /// The adaptive limiter's queue, asked (`asked`) or to ask.
    Queue { asked: bool },
    /// Window `i`'s units taken, asked (`asked`) or to ask.
    Take { i: usize, asked: bool },
    /// The tokens taken.
    TakeTokens,
    /// Over: the attempt went or was refused.
    Over,
}

/// The wait of one attempt before its send, as a state machine ([`Engine::begin_wait`]): every
/// wait within one `MaxWait` from the attempt's start, in this order:
///
/// 1. a cost the limiter could never repay is refused; a retry's own wait
///    ([`Attempt::not_before`]);
/// 2. the quotas in tokens (a cost above one's limit is refused; a wait for a refill is capped
///    like an exhausted stop);
/// 3. the server-ordered stop ([`Engine::hold`]);
/// 4. each strict window's ETA, then the proactive delay (without windows, step 3 gives it);
/// 5. in a fleet that draws from its pool, the units drawn from it (and, if the fleet's stop
///    began before they were due, drawn again after it);
/// 6. the adaptive limiter's units, in the attempt's lane, and a slot among its endpoint's
///    requests in flight under `MaxConcurrent` (the limiter's, and the attempt's own);
/// 7. each window's units are taken, then the tokens (waiting again if another request or
///    process took them meanwhile).
///
/// The driver calls [`start`](Self::start), then does what each [`WaitStep`] says and hands the
/// outcome back, until [`WaitStep::Go`] or [`WaitStep::Refused`]. The machine reads the time
/// only from what it is given: a wait that nothing holds costs no clock read. Dropped between
/// the limiter's grant and its end, it gives the endpoint's slot back
/// ([`Limiter::landed`](crate::Limiter::landed)), so that an abandoned request does not hold a
/// place under `MaxConcurrent` for ever.
///
/// ```
/// use pacer_core::{Attempt, Engine, Limiter, LimiterOptions, Rules, Timestamp, WaitStep};
/// use std::time::Duration;
///
/// let engine = Engine::new(100, Duration::from_secs(3600));
/// let mut options = LimiterOptions::default();
/// options.initial_units_per_minute = Some(60.0);
/// options.burst = Duration::from_secs(1); // room for one unit at a time
/// let endpoint = engine.endpoint("api", Timestamp::ZERO, || Limiter::new(options).unwrap(), |_| {});
/// let rules = Rules::default();
/// let (mut tokens, t0) = (0, Timestamp::ZERO);
///
/// // A request that nothing holds goes at once.
/// let first = Attempt::new(1, t0, Duration::from_secs(30));
/// assert_eq!(engine.begin_wait(&rules, &endpoint, &first, &mut tokens).start(), WaitStep::Go(t0));
/// // The next unit comes a second later: the limiter's queue is asked for it.
/// let second = Attempt::new(1, t0, Duration::from_secs(30));
/// let mut wait = engine.begin_wait(&rules, &endpoint, &second, &mut tokens);
/// assert_eq!(wait.start(), WaitStep::Queue { within: Duration::from_secs(30) });
/// let granted = t0 + Duration::from_secs(1);
/// assert_eq!(wait.queued(Ok(granted)), WaitStep::Go(granted));
/// ```
#[derive(Debug)]
pub struct AttemptWait<'a> {
    engine: &'a Engine,
    rules: &'a Rules,
    endpoint: &'a Endpoint,
    attempt: &'a Attempt<'a>,
    tokens_attempt: &'a mut u64,
    stage: Stage,
    /// The time as the machine last learnt it.
    now: Timestamp,
    /// The time waited for the quotas in tokens, capped like an exhausted stop.
    unit_waited: Duration,
    /// What was left of `MaxWait`, and of the timeout, when the queue was asked.
    queue_left: (Duration, Option<Duration>),
    /// Whether the limiter's grant (units and a slot) is held: given back on a refusal after it
    /// (units and slot) or a drop (the slot).
    granted: bool,
    /// The draw from the fleet's pool a [`WaitStep::AskPool`] asks for.
    draw: Option<crate::DrawRequest>,
}

impl Engine {
    /// The wait of `attempt` before its send, as a state machine the driver runs
    /// ([`AttemptWait`]; an async driver runs it with [`crate::drive::wait`]).
    /// `tokens_attempt` carries the number under which the request's tokens are in flight (0
    /// at first; see [`Engine::tokens_take`]).
    pub fn begin_wait<'a>(
        &'a self,
        rules: &'a Rules,
        endpoint: &'a Endpoint,
        attempt: &'a Attempt<'a>,
        tokens_attempt: &'a mut u64,
    ) -> AttemptWait<'a> {
        AttemptWait {
            engine: self,
            rules,
            endpoint,
            attempt,
            tokens_attempt,
            stage: Stage::Begin,
            now: attempt.start,
            unit_waited: Duration::ZERO,
            queue_left: (Duration::ZERO, None),
            granted: false,
            draw: None,
        }
    }
}

impl AttemptWait<'_> {
    /// The first step, at the attempt's start.
    pub fn start(&mut self) -> WaitStep {
        if let Some(fleet) = self.endpoint.fleet() {
            fleet.asked(self.attempt.units, self.attempt.start);
        }
        self.run()
    }

    /// The sleep a [`WaitStep::Sleep`] asked for is over: `now` is the time after it.
    pub fn slept(&mut self, now: Timestamp) -> WaitStep {
        self.now = now;
        self.run()
    }

    /// The answer to a [`WaitStep::AskWindow`], at `now`, the time after the store answered.
    pub fn window_answered(
        &mut self,
        now: Timestamp,
        answer: Result<WindowAnswer, Refusal>,
    ) -> WaitStep {
        self.now = now;
        let (i, take) = match self.stage {
            Stage::Eta { i, asked: true } => (i, false),
            Stage::Take { i, asked: true } => (i, true),
            stage => panic!("a window's answer while {stage:?}"),
        };
        let wait = match answer {
            Ok(WindowAnswer::Go) => None,
            Ok(WindowAnswer::Wait(wait)) => Some(wait),
            Err(refusal) => return self.refuse(refusal),
        };
        // After an ETA, the next window; after a take that must wait, the same window again
        // (the next take reads the time again).
        self.stage = match (take, wait.is_some()) {
            (false, _) => Stage::Eta {
                i: i + 1,
                asked: false,
            },
            (true, false) => Stage::Take {
                i: i + 1,
                asked: false,
            },
            (true, true) => Stage::Take { i, asked: false },
        };
        match wait {
            Some(wait) => self.sleep_or_run(wait, WaitCause::Window),
            None => self.run(),
        }
    }

    /// The draw a [`WaitStep::AskPool`] asks the fleet's pool for.
    ///
    /// # Panics
    ///
    /// Unless the last step was [`WaitStep::AskPool`].
    #[must_use]
    pub fn draw_request(&self) -> &crate::DrawRequest {
        assert_eq!(self.stage, Stage::Pool { asked: true }, "a pool's draw");
        self.draw.as_ref().expect("the draw asked for")
    }

    /// The answer to a [`WaitStep::AskPool`], at `now`, the time after the store answered: the
    /// units are due at a time (the attempt waits until then), it would wait too long (it is
    /// refused), or the store did not answer (the attempt waits in its own limiter's queue, at
    /// the member's share).
    pub fn pool_answered(&mut self, now: Timestamp, drawn: crate::Drawn) -> WaitStep {
        assert_eq!(self.stage, Stage::Pool { asked: true }, "a pool's answer");
        self.now = now;
        match drawn {
            crate::Drawn::Go(at) => {
                self.stage = Stage::Drawn;
                self.sleep_or_run(at.saturating_duration_since(now), WaitCause::Queue)
            }
            crate::Drawn::TooLong(at) => {
                // The pool hands units out no further ahead than its draw's `max_wait` (a tenth
                // of the fleet's window, or what is left of `MaxWait` when that is less). Units
                // due within `MaxWait` but past that horizon: the attempt waits until they would
                // be within it, and draws again (nothing was taken). Past `MaxWait`: refused.
                let waited = now - self.attempt.start;
                let due = at.saturating_duration_since(now);
                let ahead = self.draw.as_ref().map_or(Duration::ZERO, |d| d.max_wait);
                if due > ahead && waited + due <= self.attempt.max_wait {
                    self.stage = Stage::Pool { asked: false };
                    return self.sleep_or_run(due - ahead, WaitCause::Queue);
                }
                self.refuse(Refusal::Rejected(RejectReason::WaitTooLong {
                    cause: WaitCause::Queue,
                    needed: waited + due,
                    max_wait: self.attempt.max_wait,
                }))
            }
            _ => {
                self.stage = Stage::Queue { asked: false };
                self.run()
            }
        }
    }

    /// The answer to a [`WaitStep::Queue`]: the time the limiter granted the units, or its
    /// refusal.
    pub fn queued(&mut self, granted: Result<Timestamp, RejectReason>) -> WaitStep {
        assert_eq!(self.stage, Stage::Queue { asked: true }, "a queue's answer");
        match granted {
            Ok(at) => {
                self.now = at;
                self.granted = true;
                self.stage = Stage::Take { i: 0, asked: false };
                self.run()
            }
            Err(reason) => {
                let waited = self.now - self.attempt.start;
                let (left, timeout_left) = self.queue_left;
                let refusal = match (&reason, timeout_left) {
                    // The timeout, not MaxWait, cut the queue short.
                    (
                        RejectReason::WaitTooLong {
                            cause: cause @ (WaitCause::Queue | WaitCause::Concurrency),
                            needed,
                            ..
                        },
                        Some(t),
                    ) if t < left && *needed <= left => self.past_timeout(*cause),
                    _ => RejectReason::from_limiter(&reason, waited, self.attempt.max_wait),
                };
                self.refuse(Refusal::Rejected(refusal))
            }
        }
    }

    /// The number under which the request's tokens are in flight now.
    #[must_use]
    pub fn tokens_attempt(&self) -> u64 {
        *self.tokens_attempt
    }

    /// Runs the stages until one needs the driver.
    fn run(&mut self) -> WaitStep {
        loop {
            let attempt = self.attempt;
            let step = match self.stage {
                Stage::Begin => self.begin(),
                Stage::Tokens => self.tokens(),
                Stage::Hold => {
                    let hold = self.engine.hold(
                        self.rules,
                        self.endpoint,
                        attempt.start,
                        attempt.max_retry_after,
                        !attempt.windows.is_empty(),
                    );
                    self.stage = if attempt.windows.is_empty() {
                        Stage::Pool { asked: false }
                    } else {
                        Stage::Eta { i: 0, asked: false }
                    };
                    self.sleep(hold.wait, hold.cause)
                }
                Stage::Eta { i, asked: false } if i < attempt.windows.len() => {
                    self.stage = Stage::Eta { i, asked: true };
                    Some(WaitStep::AskWindow {
                        index: i,
                        take: false,
                    })
                }
                Stage::Eta { .. } => {
                    self.stage = Stage::HoldAgain;
                    None
                }
                Stage::HoldAgain => {
                    let hold = self.engine.hold(
                        self.rules,
                        self.endpoint,
                        self.now,
                        attempt.max_retry_after,
                        false,
                    );
                    self.stage = Stage::Pool { asked: false };
                    self.sleep(hold.wait, hold.cause)
                }
                Stage::Pool { asked: false } => self.pool(),
                Stage::Pool { asked: true } => panic!("an attempt's wait driven before its draw"),
                Stage::Drawn => self.drawn(),
                Stage::Queue { .. } => Some(self.queue()),
                Stage::Take { i, asked: false } if i < attempt.windows.len() => {
                    self.stage = Stage::Take { i, asked: true };
                    Some(WaitStep::AskWindow {
                        index: i,
                        take: true,
                    })
                }
                Stage::Take { .. } => {
                    self.stage = Stage::TakeTokens;
                    None
                }
                Stage::TakeTokens => Some(self.take_tokens()),
                Stage::Over => panic!("an attempt's wait driven after its end"),
            };
            if let Some(step) = step {
                if matches!(step, WaitStep::Go(_) | WaitStep::Refused(_)) {
                    self.stage = Stage::Over;
                }
                return step;
            }
        }
    }

    /// Step 1: a cost the limiter could never repay within `MaxWait`; a retry's own wait (a
    /// refusal for contention), before anything is asked.
    fn begin(&mut self) -> Option<WaitStep> {
        let units = self.attempt.units;
        let max_cost = self.endpoint.limiter().max_cost();
        if units > max_cost {
            return Some(WaitStep::Refused(Refusal::Rejected(
                RejectReason::CostAboveLimit {
                    cost: units,
                    max: max_cost,
                },
            )));
        }
        self.stage = Stage::Tokens;
        let at = self.attempt.not_before.filter(|&at| at > self.now)?;
        self.sleep(at - self.now, WaitCause::ServerStop)
    }

    /// Step 2: the quotas in tokens, each wait capped like an exhausted stop.
    fn tokens(&mut self) -> Option<WaitStep> {
        let cap = self.rules.server_stop().max_exhausted_delay();
        let waiting = (self.engine).tokens_wait(self.endpoint, self.attempt.tokens, self.now);
        let wait = match waiting {
            Ok(Some(wait)) => wait.min(cap.saturating_sub(self.unit_waited)),
            Ok(None) => Duration::ZERO,
            Err(e) => return Some(WaitStep::Refused(Refusal::Rejected(e.into()))),
        };
        if wait.is_zero() {
            self.stage = Stage::Hold;
            return None;
        }
        self.unit_waited += wait;
        self.sleep(wait, WaitCause::UnitQuota)
    }

    /// Step 5: in a fleet that draws from its pool, the draw, with what is left of the budget.
    fn pool(&mut self) -> Option<WaitStep> {
        let left = (self.attempt.max_wait).saturating_sub(self.now - self.attempt.start);
        let draw = self
            .endpoint
            .fleet()
            .and_then(|fleet| fleet.pool(self.attempt.units, left, self.now));
        match draw {
            Some(draw) => {
                self.draw = Some(draw);
                self.stage = Stage::Pool { asked: true };
                Some(WaitStep::AskPool)
            }
            None => {
                self.stage = Stage::Queue { asked: false };
                None
            }
        }
    }

    /// Step 5, its units due: a stop of the fleet's that began meanwhile holds the attempt to
    /// its end, and it draws again then (the units it drew are spent: a fleet's draws held
    /// through a stop and sent at its end would be one burst).
    fn drawn(&mut self) -> Option<WaitStep> {
        let until = self.endpoint.fleet().and_then(|f| f.pause_until(self.now));
        match until {
            Some(until) if until > self.now => {
                self.stage = Stage::Pool { asked: false };
                self.sleep(until - self.now, WaitCause::ServerStop)
            }
            _ => {
                self.stage = Stage::Queue { asked: false };
                None
            }
        }
    }

    /// Step 6: the adaptive limiter's units, taken at once when they are there (as the queue's
    /// first look would take them, without building its future), else the queue, with what is
    /// left of the budget (and of the timeout).
    fn queue(&mut self) -> WaitStep {
        let attempt = self.attempt;
        let limiter = self.endpoint.limiter();
        if let Ok(permit) = limiter.try_acquire_at(attempt.units, attempt.max_concurrent, self.now)
        {
            self.now = permit.granted_at();
            self.granted = true;
            self.stage = Stage::Take { i: 0, asked: false };
            return self.run();
        }
        let left = (attempt.max_wait).saturating_sub(self.now - attempt.start);
        let timeout_left = attempt.timeout.map(|(end, _)| end - self.now);
        self.queue_left = (left, timeout_left);
        self.stage = Stage::Queue { asked: true };
        WaitStep::Queue {
            within: timeout_left.map_or(left, |t| t.min(left)),
        }
    }

    /// Step 6, last: the tokens taken (waiting again, within the exhausted-stop cap, if others
    /// took them meanwhile); then the attempt goes.
    fn take_tokens(&mut self) -> WaitStep {
        let cap = self.rules.server_stop().max_exhausted_delay();
        let force = self.unit_waited >= cap;
        let taken = (self.engine).tokens_take(
            self.endpoint,
            self.attempt.tokens,
            self.now,
            self.tokens_attempt,
            force,
        );
        let wait = match taken {
            Ok(None) => {
                // The driver holds the slot from here.
                self.granted = false;
                self.engine.sent(self.endpoint, self.now);
                return WaitStep::Go(self.now);
            }
            Ok(Some(wait)) => wait.min(cap.saturating_sub(self.unit_waited)),
            Err(e) => return self.refuse(Refusal::Rejected(e.into())),
        };
        self.unit_waited += wait;
        match self.sleep(wait, WaitCause::UnitQuota) {
            Some(step) => step,
            None => self.run(),
        }
    }

    /// A wait of `wait` more from now, if the budget allows: `None` when it is zero (go on at
    /// once), a sleep, or a refusal.
    fn sleep(&mut self, wait: Duration, cause: WaitCause) -> Option<WaitStep> {
        let attempt = self.attempt;
        let needed = (self.now - attempt.start) + wait;
        if needed > attempt.max_wait {
            return Some(self.refuse(Refusal::Rejected(RejectReason::WaitTooLong {
                cause,
                needed,
                max_wait: attempt.max_wait,
            })));
        }
        if let Some((end, _)) = attempt.timeout
            && self.now.saturating_add(wait) > end
        {
            return Some(self.refuse(Refusal::Rejected(self.past_timeout(cause))));
        }
        (!wait.is_zero()).then(|| WaitStep::Sleep(self.now + wait))
    }

    /// [`sleep`](Self::sleep), or the next stages at once when the wait is zero.
    fn sleep_or_run(&mut self, wait: Duration, cause: WaitCause) -> WaitStep {
        match self.sleep(wait, cause) {
            Some(step) => step,
            None => self.run(),
        }
    }

    /// The attempt's timeout would end first.
    fn past_timeout(&self, cause: WaitCause) -> RejectReason {
        let (_, timeout) = self.attempt.timeout.expect("a timeout");
        RejectReason::PastTimeout { cause, timeout }
    }

    /// The attempt is refused: the limiter's grant, if held, goes back (units and slot).
    fn refuse(&mut self, refusal: Refusal) -> WaitStep {
        if std::mem::take(&mut self.granted) {
            self.endpoint.limiter().refund(self.attempt.units);
        }
        self.stage = Stage::Over;
        WaitStep::Refused(refusal)
    }
}

impl Drop for AttemptWait<'_> {
    /// Dropped between the grant and its end: the slot goes back.
    fn drop(&mut self) {
        if self.granted {
            self.endpoint.limiter().landed();
        }
    }
}

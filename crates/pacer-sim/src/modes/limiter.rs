//! The limiter modes: `fixed`, `aimd`, `cubic`, and any limiter built from options or a
//! controller of one's own. Each instance runs the engine the middleware runs
//! ([`ExchangeClient`]). [`LimiterClient`], the simulator's own copy of that path around a
//! [`LimiterCore`], is the fleet modes' until they run the engine's fleet member.

use super::headers::{graphql_response, http_response, wall};
use super::{Client, ClientSetup, ExchangeClient, Mode, ModeError, Response};
use crate::model::Verdict;
use pacer_core::{
    Acquired, Changes, Controller, ControllerFactory, ControllerKind, Feedback, LimiterCore,
    LimiterOptions, RejectReason, Rules, ServerState, Signal, Ticket, Timestamp,
};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The bucket profile's `Pacer.ProbeAfter` ([`LimiterMode::pacer_buckets`]).
const BUCKET_PROFILE_PROBE_AFTER: Duration = Duration::from_secs(4 * 60);
/// The bucket profile's `Pacer.Lead`.
const BUCKET_PROFILE_LEAD: f64 = 1.05;
/// The bucket profile's `Pacer.CutMargin`.
const BUCKET_PROFILE_CUT_MARGIN: f64 = 0.25;

/// Turns the run's limiter options into this mode's.
pub type OptionsAdjust = Arc<dyn Fn(&mut LimiterOptions) + Send + Sync>;

/// Builds an instance's strict windows on its clock (a configured limiter's, kept in memory).
pub type WindowsFn =
    Arc<dyn Fn(Arc<dyn pacer_core::Clock>) -> Vec<pacer_core::WindowLimit> + Send + Sync>;

/// A mode in which every instance's requests go through its own [`LimiterCore`].
#[derive(Clone)]
pub struct LimiterMode {
    name: String,
    adjust: OptionsAdjust,
    controller: Option<ControllerFactory>,
    /// The rules, when not the middleware's defaults (a configured limiter's).
    rules: Option<Rules>,
    /// The strict windows, when it has any (a configured limiter's).
    windows: Option<WindowsFn>,
}

impl fmt::Debug for LimiterMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimiterMode")
            .field("name", &self.name)
            .field("custom_controller", &self.controller.is_some())
            .finish_non_exhaustive()
    }
}

impl LimiterMode {
    /// `fixed`: `MinUnitsPerMinute = MaxUnitsPerMinute = InitialUnitsPerMinute`, the .NET adaptive limiter's way
    /// to keep the rate still. The limiter still pauses on `Retry-After`.
    #[must_use]
    pub fn fixed() -> Self {
        LimiterMode::adjusted("fixed", |o| {
            let initial = o.initial_units_per_minute.unwrap_or(o.max_units_per_minute);
            o.initial_units_per_minute = Some(initial);
            o.min_units_per_minute = initial;
            o.max_units_per_minute = initial;
        })
    }

    /// `aimd` or `cubic`: the built-in controller of that kind with the run's options.
    #[must_use]
    pub fn builtin(kind: ControllerKind) -> Self {
        let name = kind.as_str().to_ascii_lowercase();
        LimiterMode {
            name,
            adjust: Arc::new(move |o: &mut LimiterOptions| o.controller = kind),
            controller: None,
            rules: None,
            windows: None,
        }
    }

    /// `default`: the library's [`LimiterOptions::default`], not the simulator's: a client that
    /// configured nothing. No limit until the first throttle, then the rate starts from the
    /// measured send rate, with the default controller. Only the instance count is the run's.
    #[must_use]
    pub fn library_defaults() -> Self {
        LimiterMode::with_options("default", LimiterOptions::default())
    }

    /// `aimd-600`: the library's defaults before the unlimited start — AIMD from 600 units a
    /// minute, at most 6,000, a queue of 1,000 and a `MaxWait` of 30 s — the comparison for
    /// `default`. Only the instance count is the run's.
    #[must_use]
    pub fn aimd_600() -> Self {
        let mut o = LimiterOptions::default();
        o.controller = ControllerKind::Aimd;
        o.initial_units_per_minute = Some(600.0);
        o.max_units_per_minute = 6000.0;
        LimiterMode::with_options("aimd-600", o)
    }

    /// `pacer-buckets`: the Pacer controller with the profile for servers that count in buckets
    /// when every 429 costs (docs/controllers.md, "When every 429 costs: a profile for
    /// buckets"): `ProbeAfter` 4 minutes, `Lead` 1.05, `CutMargin` 0.25, the run's options
    /// otherwise.
    #[must_use]
    pub fn pacer_buckets() -> Self {
        LimiterMode::adjusted("pacer-buckets", |o| {
            o.controller = ControllerKind::Pacer;
            o.pacer.probe_after = BUCKET_PROFILE_PROBE_AFTER;
            o.pacer.lead = BUCKET_PROFILE_LEAD;
            o.pacer.cut_margin = BUCKET_PROFILE_CUT_MARGIN;
        })
    }

    /// A mode that changes the run's limiter options with `adjust`.
    #[must_use]
    pub fn adjusted(
        name: impl Into<String>,
        adjust: impl Fn(&mut LimiterOptions) + Send + Sync + 'static,
    ) -> Self {
        LimiterMode {
            name: name.into(),
            adjust: Arc::new(adjust),
            controller: None,
            rules: None,
            windows: None,
        }
    }

    /// A mode with options of its own (the plug for `--config FILE --limiter NAME`): they replace
    /// the run's limiter options, except `InstanceCount`, which the run sets.
    #[must_use]
    pub fn with_options(name: impl Into<String>, options: LimiterOptions) -> Self {
        LimiterMode::adjusted(name, move |o| {
            let count = o.instance_count;
            *o = options.clone();
            o.instance_count = count;
        })
    }

    /// A mode with a controller of one's own (the plug for a `pacer` controller): the run's
    /// options, and a fresh controller from `factory` for each instance.
    #[must_use]
    pub fn with_controller(
        name: impl Into<String>,
        factory: impl Fn() -> Box<dyn Controller> + Send + Sync + 'static,
    ) -> Self {
        LimiterMode {
            name: name.into(),
            adjust: Arc::new(|_| {}),
            controller: Some(Arc::new(factory)),
            rules: None,
            windows: None,
        }
    }

    /// A configured limiter (`--config FILE --limiter NAME`): its options (the run's
    /// `InstanceCount` kept), its rules (their `MaxAttempts` the run's) and its strict windows,
    /// built for each instance.
    #[must_use]
    pub fn configured(
        name: impl Into<String>,
        options: LimiterOptions,
        rules: Rules,
        windows: WindowsFn,
    ) -> Self {
        LimiterMode {
            rules: Some(rules),
            windows: Some(windows),
            ..LimiterMode::with_options(name, options)
        }
    }

    /// The options this mode's limiters get, from the run's.
    #[must_use]
    pub fn options_for(&self, run: &LimiterOptions) -> LimiterOptions {
        let mut o = run.clone();
        (self.adjust)(&mut o);
        o
    }
}

impl Mode for LimiterMode {
    fn name(&self) -> &str {
        &self.name
    }

    fn client(&self, setup: &ClientSetup) -> Result<Box<dyn Client>, ModeError> {
        let options = self.options_for(&setup.limiter);
        let rules = (self.rules.clone().unwrap_or_default()).with_max_attempts(setup.max_attempts);
        let controller = self.controller.as_ref().map(|factory| factory());
        let windows = self.windows.clone();
        let client =
            ExchangeClient::new(options, rules, controller, windows, setup.now).map_err(|e| {
                ModeError::InvalidOptions {
                    name: self.name.clone(),
                    message: e.to_string(),
                }
            })?;
        Ok(Box::new(client))
    }
}

/// The endpoint key the engine is given: the model API has one endpoint.
const KEY: &str = "model-api";

/// One instance's limiter and a copy of the middleware's engine around it, on virtual time, with
/// the middleware's default rules ([`Rules::default`]): the fleet modes' client
/// ([`crate::FleetClient`]); the other limiter modes run the engine itself ([`ExchangeClient`]).
///
/// - after each response, [`Rules::read`] classifies it and reads its fields (the model's
///   `Retry-After`, and its draft-11 fields in the `headers` mode) with the middleware's parser;
///   the instance's [`ServerState`] keeps them, the limiter follows the server's numbers when
///   there are any ([`LimiterCore::follow_server`]), then learns from the signal;
/// - before each attempt queues, [`ServerState::hold`] asks for the server's stop and the
///   proactive delay ([`pacer_core::Percentage`]), refused past `MaxWait`;
/// - each attempt granted is in flight until its response comes back
///   ([`LimiterCore::landed`]), which `MaxConcurrent` caps.
#[derive(Debug)]
pub struct LimiterClient {
    core: LimiterCore,
    rules: Rules,
    server: ServerState,
    /// Whether a response has carried rate-limit fields yet.
    seen: bool,
    /// Whether the responses are read as GraphQL cost bodies (the `graphql` mode).
    graphql: bool,
}

impl LimiterClient {
    /// A client around `core`.
    #[must_use]
    pub fn new(core: LimiterCore) -> Self {
        LimiterClient {
            core,
            rules: Rules::default(),
            server: ServerState::default(),
            seen: false,
            graphql: false,
        }
    }

    /// The client reads each response as a GraphQL cost body, with `QueryCost` on (the
    /// `graphql` mode).
    #[must_use]
    pub fn reading_query_cost(mut self) -> Self {
        self.graphql = true;
        self.rules = self.rules.with_query_cost(true);
        self
    }

    /// The limiter.
    #[must_use]
    pub fn core(&self) -> &LimiterCore {
        &self.core
    }

    /// The limiter, to change.
    pub fn core_mut(&mut self) -> &mut LimiterCore {
        &mut self.core
    }
}

/// The classifier of the model: a 429 is a throttle with its `Retry-After` (if any), the rest
/// success.
#[must_use]
pub fn signal_of(verdict: Verdict) -> Signal {
    match verdict {
        Verdict::Accepted => Signal::Success,
        Verdict::Throttled { retry_after } => Signal::Throttled { retry_after },
    }
}

impl Client for LimiterClient {
    fn acquire(&mut self, units: u64, now: Timestamp) -> Result<Acquired, RejectReason> {
        self.core.acquire(units, now)
    }

    fn pop_ready(&mut self, now: Timestamp) -> Option<(Ticket, Duration)> {
        self.core.pop_ready(now)
    }

    fn next_grant_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        self.core.next_grant_at(now)
    }

    fn refuse_expired(&mut self, now: Timestamp) -> Changes {
        self.core.refuse_expired(now)
    }

    fn not_sent(&mut self, _now: Timestamp) {
        let _ = self.core.landed();
    }

    fn hold(&mut self, now: Timestamp) -> Result<Duration, RejectReason> {
        if !self.seen {
            return Ok(Duration::ZERO);
        }
        let options = self.core.options();
        let (max_wait, max_retry_after) = (options.max_wait, options.max_retry_after);
        let hold = self
            .server
            .hold(&self.rules, KEY, now, max_retry_after, false);
        if hold.wait > max_wait {
            return Err(RejectReason::WaitTooLong {
                cause: hold.cause,
                needed: hold.wait,
                max_wait,
            });
        }
        Ok(hold.wait)
    }

    fn sent(&mut self, now: Timestamp) {
        if self.seen {
            self.server.sent(now);
        }
    }

    fn on_response(&mut self, response: &Response, now: Timestamp) -> Changes {
        // The attempt landed: its slot among the requests in flight is free (the engine looks
        // at the queue again after every response).
        let _ = self.core.landed();
        let max_retry_after = self.core.options().max_retry_after;
        let reading = if self.graphql {
            let (status, cost) = graphql_response(response);
            let no_fields = http::HeaderMap::new();
            (self.rules).read_with_cost(
                status,
                &no_fields,
                None,
                cost.as_ref(),
                wall(now),
                max_retry_after,
            )
        } else {
            let (status, headers) = http_response(response);
            (self.rules).read(status, &headers, None, wall(now), max_retry_after)
        };
        let signal = reading.signal();
        let count = self.core.options().instance_count;
        let (kept, quota) = (self.server).observe(reading, self.seen, count, response.sent_at, now);
        self.seen |= kept;
        let mut changes = match quota {
            Some(quota) => self.core.follow_server(quota, now),
            None => Changes::default(),
        };
        let feedback = Feedback {
            units: response.units,
            sent_at: response.sent_at,
            signal,
        };
        changes.merge(self.core.on_response(feedback, now));
        changes
    }

    fn retry_delay(&self, _retry_after: Duration) -> Duration {
        Duration::ZERO
    }

    fn set_instance_count(&mut self, count: u32, now: Timestamp) -> Changes {
        self.core.set_instance_count(count, now).unwrap_or_default()
    }

    fn rate(&self) -> Option<f64> {
        Some(self.core.rate())
    }

    fn memory(&self) -> Option<pacer_core::LimiterMemory> {
        self.core.memory()
    }

    fn recall(&mut self, memory: &pacer_core::LimiterMemory, now: Timestamp) -> Changes {
        self.core.recall(memory, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_limiter_defaults;

    #[test]
    fn fixed_pins_the_rate_to_the_initial_one() {
        let o = LimiterMode::fixed().options_for(&sim_limiter_defaults());
        assert_eq!(
            (
                o.min_units_per_minute,
                o.initial_units_per_minute,
                o.max_units_per_minute
            ),
            (1500.0, Some(1500.0), 1500.0)
        );
    }

    #[test]
    fn builtin_modes_select_their_controller() {
        let cubic = LimiterMode::builtin(ControllerKind::Cubic);
        assert_eq!(cubic.name(), "cubic");
        assert_eq!(
            cubic.options_for(&sim_limiter_defaults()).controller,
            ControllerKind::Cubic
        );
        assert_eq!(LimiterMode::builtin(ControllerKind::Aimd).name(), "aimd");
    }

    #[test]
    fn given_options_replace_the_run_s_but_keep_the_instance_count() {
        let mut mine = LimiterOptions::default();
        mine.queue_limit = 7;
        let mut run = sim_limiter_defaults();
        run.instance_count = 3;
        let o = LimiterMode::with_options("cfg", mine).options_for(&run);
        assert_eq!((o.queue_limit, o.instance_count), (7, 3));
    }

    #[test]
    fn a_response_or_an_attempt_never_sent_gives_the_slot_back() {
        let mut o = sim_limiter_defaults();
        o.max_concurrent = std::num::NonZeroU32::new(1);
        let t0 = Timestamp::ZERO;
        let mut client = LimiterClient::new(LimiterCore::new(o, t0).unwrap());
        assert_eq!(client.acquire(1, t0), Ok(Acquired::Now));
        assert!(matches!(client.acquire(1, t0), Ok(Acquired::Queued { .. })));
        assert_eq!(client.pop_ready(t0), None, "the first is in flight");
        let response = Response {
            units: 1,
            sent_at: t0,
            verdict: Verdict::Accepted,
            headers: None,
        };
        let _ = client.on_response(&response, t0);
        assert!(
            client.pop_ready(t0).is_some(),
            "its response freed the slot"
        );
        client.not_sent(t0);
        assert_eq!(client.core().in_flight(), 0);
    }

    #[test]
    fn invalid_options_are_a_mode_error() {
        let mode = LimiterMode::adjusted("broken", |o| o.min_units_per_minute = -1.0);
        let setup = ClientSetup {
            instance: 0,
            limiter: sim_limiter_defaults(),
            now: Timestamp::ZERO,
            max_attempts: pacer_core::Rules::DEFAULT_MAX_ATTEMPTS,
        };
        let e = mode.client(&setup).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("mode \"broken\": invalid limiter options: MinUnitsPerMinute = -1"),
            "{e}"
        );
    }
}

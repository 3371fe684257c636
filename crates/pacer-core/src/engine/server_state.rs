//! What the server said of one endpoint, free of locks and clocks: the state an [`Endpoint`]
//! keeps behind its lock, and a single-endpoint driver (the simulator) keeps by value.
//!
//! [`Endpoint`]: super::Endpoint

use super::units::UnitQuotas;
use super::{Hold, Reading, Rules};
use crate::{EndpointSnapshot, RateLimitInfo, RateLimitStateProvider, ServerQuota, Timestamp};
use std::time::Duration;

/// What the server said of an endpoint: the last rate-limit state it reported and when, the
/// last send, and the budgets in other units (tokens).
#[derive(Debug, Default)]
pub struct ServerState {
    /// The last non-empty state reported (empty: none yet).
    info: RateLimitInfo,
    observed_at: Timestamp,
    last_send: Option<Timestamp>,
    pub(crate) units: UnitQuotas,
    /// The last penalty ([`RefusalClass::Penalty`](crate::RefusalClass::Penalty)): when it
    /// came, its stop, and how many came in a row before it.
    penalty: Option<(Timestamp, Duration, u32)>,
}

impl ServerState {
    /// Keeps what `reading` reports at `now`, unless it came from a cache or, while no response
    /// of the driver has yet carried rate-limit fields (`seen` false), it reports none. Returns
    /// whether it was kept, and the quota the adaptive limiter is then to follow
    /// ([`crate::Limiter::follow_server`]).
    ///
    /// A reading that reports nothing replaces nothing: servers need not send the fields on
    /// every response, so the last state stands until it is spent.
    ///
    /// It takes the reading: what it reports is kept as it is, not copied (read its
    /// [`signal`](Reading::signal) before). The budgets in other units than requests are this
    /// process's part of the server's, as one of `instance_count` that share them
    /// ([`UnitBudget::shared`](crate::UnitBudget::shared)), read as counted when the answered
    /// request was sent (`sent_at`).
    pub fn observe(
        &mut self,
        reading: Reading,
        seen: bool,
        instance_count: u32,
        sent_at: Timestamp,
        now: Timestamp,
    ) -> (bool, Option<ServerQuota>) {
        if !reading.kept(seen) {
            return (false, None);
        }
        let quota = ServerQuota::from_info(&reading.info);
        if let Some(policies) = &reading.unit_policies {
            self.units.observe(policies, instance_count, sent_at, now);
        }
        if !reading.info.is_empty() {
            std::mem::replace(&mut self.info, reading.info).recycle();
            self.observed_at = now;
        }
        (true, quota)
    }

    /// A penalty at `now` whose `Retry-After` was `retry_after`: the stop it asks, at least
    /// [`PENALTY_PAUSE`](crate::PENALTY_PAUSE) and the `Retry-After`, doubled for each penalty
    /// that came within twice the stop of the one before it, at most `max`.
    pub(crate) fn penalty(
        &mut self,
        retry_after: Option<Duration>,
        max: Duration,
        now: Timestamp,
    ) -> Duration {
        let streak = match self.penalty {
            Some((at, pause, streak)) if now <= at.saturating_add(pause * 2) => streak + 1,
            _ => 0,
        };
        let doubled = crate::PENALTY_PAUSE.saturating_mul(1 << streak.min(16));
        let pause = doubled.max(retry_after.unwrap_or_default()).min(max);
        self.penalty = Some((now, pause, streak));
        pause
    }

    /// `true` when `rules` hold nothing back on this state however old it is (see
    /// [`Rules::holds_nothing`]).
    pub(crate) fn holds_nothing(&self, rules: &Rules) -> bool {
        rules.holds_nothing(&self.info)
    }

    /// Records that a request went at `now` (what [`crate::Pacing`] spaces from). A send
    /// earlier than one already recorded changes nothing.
    pub fn sent(&mut self, now: Timestamp) {
        self.last_send = Some(self.last_send.map_or(now, |l| l.max(now)));
    }

    /// The state adjusted to `now`; `None` when it is spent or none was reported.
    #[must_use]
    pub fn current(&self, now: Timestamp) -> Option<RateLimitInfo> {
        if self.info.is_empty() {
            return None;
        }
        let info = self.info.aged(now - self.observed_at);
        (!info.is_empty()).then_some(info)
    }

    /// What is known at `now` (the state, the time since it was reported and since the last
    /// send), or `None` when nothing was reported or sent.
    #[must_use]
    pub fn snapshot(&self, now: Timestamp) -> Option<EndpointSnapshot> {
        if self.info.is_empty() && self.last_send.is_none() {
            return None;
        }
        Some(EndpointSnapshot::new(
            self.current(now),
            now - self.observed_at,
            self.last_send.map(|s| now - s),
        ))
    }

    /// What this state asks of the next request at `now`, when it is the only endpoint (see
    /// [`Rules::hold`]).
    #[must_use]
    pub fn hold(
        &self,
        rules: &Rules,
        key: &str,
        now: Timestamp,
        max_retry_after: Duration,
        stop_only: bool,
    ) -> Hold {
        let Some(snapshot) = self.snapshot(now) else {
            return Hold::NONE;
        };
        let alone = Alone {
            key,
            info: snapshot.info(),
        };
        let hold = rules.hold(key, &snapshot, &alone, max_retry_after, stop_only);
        snapshot.recycle();
        hold
    }
}

/// One endpoint's state as the only one there is.
struct Alone<'a> {
    key: &'a str,
    info: Option<&'a RateLimitInfo>,
}

impl RateLimitStateProvider for Alone<'_> {
    fn for_each_state(&self, visit: &mut dyn FnMut(&str, &RateLimitInfo)) {
        if let Some(info) = self.info {
            visit(self.key, info);
        }
    }
}

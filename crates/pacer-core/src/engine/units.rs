//! The quotas in other units than requests (tokens), per endpoint: stored from each response as
//! the server sent them, asked before a send, debited at the send. The algorithm is
//! [`UnitBudgets`]; this is the glue, and the count of tokens in flight.

use crate::{CostAboveLimit, Policy, RateLimitInfo, Timestamp, UnitBudgets};
use std::collections::BTreeMap;
use std::time::Duration;

/// An endpoint's budgets in other units, and the tokens of its requests sent and not yet
/// answered.
///
/// A response's remaining was counted when the server handled that request: requests sent
/// after it may not be in it. So a new observation is debited with the tokens in flight but
/// the oldest request's, taken to be the one answered (a server answers one endpoint's requests
/// about in the order they came). When the answer was to another, the estimate errs low, on the
/// safe side.
#[derive(Debug, Default)]
pub(crate) struct UnitQuotas {
    budgets: UnitBudgets,
    /// Attempt number → its tokens, for the attempts sent and not yet answered.
    in_flight: BTreeMap<u64, u64>,
    next: u64,
}

impl UnitQuotas {
    /// Takes `tokens` for a new attempt, its predecessor `previous` (if any) answered; returns the
    /// attempt's number (never 0).
    fn sent(&mut self, previous: u64, tokens: u64, now: Timestamp) -> u64 {
        self.in_flight.remove(&previous);
        self.budgets.spend(tokens, now);
        self.next += 1;
        self.in_flight.insert(self.next, tokens);
        self.next
    }

    /// Tokens in flight, but the oldest attempt's.
    fn in_flight_after_oldest(&self) -> u64 {
        self.in_flight.values().skip(1).sum()
    }

    /// Replaces the budgets with a response's policies in other units, less the tokens in
    /// flight.
    pub(crate) fn observe(&mut self, policies: &[Policy], now: Timestamp) {
        if policies.is_empty() && self.budgets.is_empty() {
            return;
        }
        self.budgets.observe(policies, now);
        let in_flight = self.in_flight_after_oldest();
        self.budgets.spend(in_flight, now);
    }

    /// The wait the budgets ask of a request of `tokens` at `now` (`None`: go), or the quota
    /// whose limit the tokens are above. Takes nothing.
    pub(crate) fn wait(
        &self,
        tokens: Option<u64>,
        now: Timestamp,
    ) -> Result<Option<Duration>, CostAboveLimit> {
        if self.budgets.is_empty() {
            return Ok(None);
        }
        check(&self.budgets, tokens, now)
    }

    /// Like [`wait`](Self::wait), and when the request may go (`Ok(None)`), its tokens are
    /// taken at once, under the same lock (two concurrent requests cannot both take the last
    /// tokens), as attempt number `*attempt` (its previous attempt, if any, answered). With
    /// `force`, it goes whatever the budgets say (its wait reached the exhausted-stop cap),
    /// unless it is above a limit.
    pub(crate) fn take(
        &mut self,
        tokens: Option<u64>,
        now: Timestamp,
        attempt: &mut u64,
        force: bool,
    ) -> Result<Option<Duration>, CostAboveLimit> {
        let Some(t) = tokens.filter(|t| *t > 0) else {
            return self.wait(tokens, now).map(|w| w.filter(|_| !force));
        };
        let wait = check(&self.budgets, tokens, now)?.filter(|_| !force);
        if wait.is_none() {
            *attempt = self.sent(*attempt, t, now);
        }
        Ok(wait)
    }

    /// A request's flow ended: its last attempt is no longer in flight.
    pub(crate) fn landed(&mut self, attempt: u64) {
        if attempt != 0 {
            self.in_flight.remove(&attempt);
        }
    }
}

/// The response's sound policies in other units, or `None` when it reported no policy at all
/// (the budgets then stay as they are, as the header state does). Allocates nothing when there
/// is none.
pub(crate) fn unit_policies(info: &RateLimitInfo) -> Option<Vec<Policy>> {
    if info.policies().is_empty() {
        return None;
    }
    Some(
        info.policies()
            .iter()
            .filter(|p| UnitBudgets::paces(p))
            .cloned()
            .collect(),
    )
}

/// `info` without the policies the unit budgets pace, when it has any: the server-ordered stop
/// and the proactive algorithm then read only what counts requests (an exhausted tokens quota
/// holds a request for its tokens, not every request until it is full). `None`: `info` as it is.
pub(crate) fn without_budget_units(info: &RateLimitInfo) -> Option<RateLimitInfo> {
    if !info.policies().iter().any(UnitBudgets::paces) {
        return None;
    }
    let kept = info.policies().iter().filter(|p| !UnitBudgets::paces(p));
    let mut rest = kept.fold(RateLimitInfo::new(), |i, p| i.with_policy(p.clone()));
    if let Some(retry_after) = info.retry_after() {
        rest = rest.with_retry_after(retry_after);
    }
    Some(rest)
}

fn check(
    budgets: &UnitBudgets,
    tokens: Option<u64>,
    now: Timestamp,
) -> Result<Option<Duration>, CostAboveLimit> {
    let wait = budgets.check(tokens, now)?;
    Ok((!wait.is_zero()).then_some(wait))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, QuotaUnit};

    #[test]
    fn a_response_is_debited_with_the_tokens_in_flight_but_the_oldest() {
        let t0 = Timestamp::ZERO;
        let tokens = |remaining| {
            Policy::new(Dialect::OpenAi)
                .with_unit(QuotaUnit::Tokens)
                .with_limit(6_000)
                .with_remaining(remaining)
                .with_reset_after(Duration::from_secs(60))
        };
        let mut q = UnitQuotas::default();
        q.budgets.observe(&[tokens(6_000)], t0);
        let a = q.sent(0, 1_000, t0);
        let b = q.sent(0, 2_000, t0);
        assert_eq!(
            q.in_flight_after_oldest(),
            2_000,
            "a is taken to be answered first"
        );
        // A retry of `a` replaces its attempt.
        let a2 = q.sent(a, 500, t0);
        assert_eq!(q.in_flight.len(), 2);
        assert_eq!(q.in_flight_after_oldest(), 500);
        q.in_flight.remove(&b);
        q.in_flight.remove(&a2);
        assert_eq!(q.in_flight_after_oldest(), 0);
    }
}

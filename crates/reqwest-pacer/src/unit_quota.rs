//! The quotas in other units than requests (tokens), per endpoint: stored from each response as
//! the server sent them, asked before a send, debited at the send. The algorithm is
//! [`pacer_core::UnitBudgets`]; this is the glue.

use crate::endpoints::Endpoint;
use crate::error::{PacerError, RejectReason, Rejection};
use crate::named::Named;
use pacer_core::{Policy, RateLimitInfo, Timestamp, UnitBudgets};
use std::time::Duration;

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
            .filter(|p| p.is_sound() && UnitBudgets::is_budget_unit(p.unit()))
            .cloned()
            .collect(),
    )
}

/// Replaces the budgets of endpoint `key` (if it has a limiter) with the response's.
pub(crate) fn observe(named: &Named, key: &str, policies: Option<Vec<Policy>>) {
    let Some(policies) = policies else { return };
    let Some(endpoint) = named.endpoints.find(key) else {
        return;
    };
    let mut budgets = endpoint.budgets.lock();
    if policies.is_empty() && budgets.is_empty() {
        return;
    }
    budgets.observe(&policies, named.clock.now());
}

/// The wait the endpoint's budgets ask of a request of `tokens` at `now` (`None`: go), or a
/// refusal when the tokens are above a quota's limit.
pub(crate) fn wait(
    endpoint: &Endpoint,
    tokens: Option<u64>,
    now: Timestamp,
    refuse: &impl Fn(RejectReason) -> Rejection,
) -> Result<Option<Duration>, PacerError> {
    let budgets = endpoint.budgets.lock();
    if budgets.is_empty() {
        return Ok(None);
    }
    match budgets.check(tokens, now) {
        Ok(wait) if wait.is_zero() => Ok(None),
        Ok(wait) => Ok(Some(wait)),
        Err(above) => Err(PacerError::Rejected(refuse(
            RejectReason::AboveQuotaLimit {
                policy: above.policy.map(String::from),
                unit: above.unit,
                limit: above.limit,
                cost: above.cost,
            },
        ))),
    }
}

/// Debits a request of `tokens` sent at `now`.
pub(crate) fn spend(endpoint: &Endpoint, tokens: Option<u64>, now: Timestamp) {
    if let Some(tokens) = tokens.filter(|t| *t > 0) {
        endpoint.budgets.lock().spend(tokens, now);
    }
}

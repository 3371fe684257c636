//! What a response says, read by the rules: [`Reading`].

use super::RefusalClass;
use crate::{BodyVerdict, Policy, QueryCost, RateLimitInfo, Signal};
use std::time::Duration;

/// What a response says, read by [`Rules::read`](crate::Rules::read).
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub(super) signal: Signal,
    pub(super) reports: bool,
    pub(super) from_cache: bool,
    pub(super) info: RateLimitInfo,
    pub(super) unit_policies: Option<Vec<Policy>>,
    pub(super) retry_refused: bool,
    pub(super) quota_exhausted: bool,
    pub(super) refusal: RefusalClass,
}

impl Reading {
    /// True if its rate-limit fields say when a quota with nothing left is back: a policy or a
    /// budget in other units (tokens) with nothing remaining and a reset. A throttle that says
    /// so is held by the server's own stop, not by `PauseWithoutRetryAfter`.
    pub(crate) fn says_when_quota_is_back(&self) -> bool {
        let said =
            |p: &crate::Policy| p.is_exhausted() && p.reset_after().is_some_and(|r| !r.is_zero());
        self.info.policies().iter().any(said) || self.unit_policies.iter().flatten().any(said)
    }

    /// The response's signal for the rate.
    #[must_use]
    pub fn signal(&self) -> Signal {
        self.signal
    }

    /// The rate-limit state it reports, bounded (advisory unless the response is a throttle).
    #[must_use]
    pub fn info(&self) -> &RateLimitInfo {
        &self.info
    }

    /// True if the response reported rate-limit fields and came from a cache (`Age` above
    /// zero): its fields tell nothing of the quota now and are not kept.
    #[must_use]
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// True if the server asked that the request not be sent again (`x-should-retry: false`,
    /// or a body the classifier says is not to be retried).
    #[must_use]
    pub fn retry_refused(&self) -> bool {
        self.retry_refused
    }

    /// True if the body said the account is out of credit: not a throttle, not retried.
    #[must_use]
    pub fn quota_exhausted(&self) -> bool {
        self.quota_exhausted
    }

    /// Makes its stop `pause` long (a penalty's), whatever `Retry-After` it had.
    pub(super) fn set_stop(&mut self, pause: Duration) {
        let info = std::mem::take(&mut self.info);
        self.info = info.with_retry_after(pause);
        self.reports = true;
    }

    /// Keeps no stop of it: its state is advice, as a response's that is not a throttle.
    pub(super) fn drop_stop(&mut self) {
        let info = std::mem::take(&mut self.info);
        self.info = info.into_advisory();
        self.reports = !self.info.is_empty();
    }

    /// Reads a refusal for tokens ([`RefusalClass::Tokens`]) of a request whose tokens were not
    /// known (nothing reserved them) as one for the rate: the budget in tokens cannot hold a
    /// request whose tokens it does not know, so the request rate is what holds the next ones.
    pub(super) fn tokens_unknown(&mut self) {
        if self.refusal == RefusalClass::Tokens {
            self.refusal = RefusalClass::Rate;
        }
    }

    /// Why the server refused it, if it is a throttle ([`RefusalClass::Rate`] otherwise).
    #[must_use]
    pub fn refusal(&self) -> RefusalClass {
        self.refusal
    }

    /// True if the endpoint's server state keeps this reading, `seen` saying whether any
    /// response of the driver has carried rate-limit fields: one that reports fields, or any
    /// once some did (an empty one then counts a response without them), and never one from a
    /// cache. A driver that reads the time only when it is needed asks this first.
    #[must_use]
    pub fn kept(&self, seen: bool) -> bool {
        (self.reports || seen) && !self.from_cache
    }
}

/// What a body said, read within [`Rules::body_limit`](crate::Rules::body_limit)
/// ([`read_body`](crate::read_body), [`Rules::judge_body`](crate::Rules::judge_body)): the
/// classifier's verdict on a 429's, a GraphQL query's cost. Hand both to
/// [`Rules::read_with_cost`](crate::Rules::read_with_cost).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct BodyReading {
    /// What [`ThrottleClassifier::classify_body`](crate::ThrottleClassifier::classify_body)
    /// said of a 429's body.
    pub verdict: Option<BodyVerdict>,
    /// A GraphQL query's cost, when the rules read it
    /// ([`Rules::with_query_cost`](crate::Rules::with_query_cost)).
    pub cost: Option<QueryCost>,
}

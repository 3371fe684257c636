//! [`UnitBudgets`]: an endpoint's budgets in every non-request unit its server reports.

use std::time::Duration;

use super::unit_budget::{CostAboveLimit, UnitBudget};
use crate::{Policy, QuotaUnit, Timestamp};

/// The budgets of an endpoint's policies that do not count requests, each paced with what it
/// counts.
///
/// * [`QuotaUnit::Tokens`] and [`QuotaUnit::InputTokens`] count the request's cost in tokens
///   (its prompt): a request waits until every such budget holds its cost, and its cost is
///   debited from each when it is sent.
/// * [`QuotaUnit::OutputTokens`], and any other unit whose cost is not known before the send
///   (`content-bytes`, a unit Pacer does not know), hold a request only while exhausted: less
///   than one unit left, until the reset. What a request produces is not known before it is
///   sent; the next response's remaining says what it took.
/// * [`QuotaUnit::Requests`] and [`QuotaUnit::ConcurrentRequests`] are not budgets here: the
///   adaptive limiter follows the first ([`crate::ServerQuota::from_info`]) and the
///   server-ordered stop holds the endpoint when either is exhausted.
///
/// A request of unknown cost (no token count) is held like one of unknown output: only by an
/// exhausted budget.
///
/// ```
/// use pacer_core::{Dialect, Policy, QuotaUnit, RateLimitInfo, Timestamp, UnitBudgets};
/// use std::time::Duration;
///
/// let openai = RateLimitInfo::new()
///     .with_policy(Policy::new(Dialect::OpenAi).with_name("requests")
///         .with_limit(60).with_remaining(59).with_reset_after(Duration::from_secs(1)))
///     .with_policy(Policy::new(Dialect::OpenAi).with_name("tokens").with_unit(QuotaUnit::Tokens)
///         .with_limit(6_000).with_remaining(200).with_reset_after(Duration::from_secs(58)));
/// let t0 = Timestamp::ZERO;
/// let mut budgets = UnitBudgets::new();
/// budgets.observe(openai.policies(), t0);
/// assert_eq!(budgets.budgets().len(), 1, "the requests policy is the limiter's");
/// // 100 tokens come back a second: 500 tokens are there in 3 s.
/// assert_eq!(budgets.check(Some(500), t0), Ok(Duration::from_secs(3)));
/// assert_eq!(budgets.check(None, t0), Ok(Duration::ZERO), "not exhausted");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnitBudgets {
    budgets: Vec<UnitBudget>,
}

impl UnitBudgets {
    /// No budgets: nothing is held.
    #[must_use]
    pub fn new() -> UnitBudgets {
        UnitBudgets::default()
    }

    /// Whether a budget of `unit` counts a request's cost in tokens.
    #[must_use]
    pub fn counts_tokens(unit: &QuotaUnit) -> bool {
        matches!(unit, QuotaUnit::Tokens | QuotaUnit::InputTokens)
    }

    /// Whether a policy of `unit` is a budget here (every unit but requests).
    #[must_use]
    pub fn is_budget_unit(unit: &QuotaUnit) -> bool {
        !matches!(unit, QuotaUnit::Requests | QuotaUnit::ConcurrentRequests)
    }

    /// Whether `policy` makes a budget here: it is sound ([`Policy::is_sound`]), of a
    /// [budget unit](Self::is_budget_unit), with a remaining and a reset (an exhausted policy
    /// without a reset has one: [`Policy::effective_reset`]). Such a policy is paced by its
    /// budget alone: the server-ordered stop and the proactive algorithms need not read it.
    #[must_use]
    pub fn paces(policy: &Policy) -> bool {
        policy.is_sound()
            && Self::is_budget_unit(policy.unit())
            && policy.remaining().is_some()
            && policy.effective_reset().is_some()
    }

    /// Replaces every budget with those of `policies`, the policies of one response observed
    /// at `now`: the server's numbers correct what was spent locally. Policies of requests,
    /// unsound ones ([`Policy::is_sound`]) and those without a remaining or a reset make none.
    /// Call it only with a response that reported policies: one without rate-limit fields
    /// changes nothing.
    pub fn observe<'p>(&mut self, policies: impl IntoIterator<Item = &'p Policy>, now: Timestamp) {
        self.budgets = policies
            .into_iter()
            .filter(|p| Self::paces(p))
            .filter_map(|p| UnitBudget::from_policy(p, now))
            .collect();
    }

    /// The budgets.
    #[must_use]
    pub fn budgets(&self) -> &[UnitBudget] {
        &self.budgets
    }

    /// Whether there is no budget.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.budgets.is_empty()
    }

    /// How long a request of `tokens` (`None`: unknown) must wait at `now` before every budget
    /// lets it go: the longest of their waits, zero when it may go now.
    ///
    /// # Errors
    /// [`CostAboveLimit`] when the tokens are above a tokens policy's limit.
    pub fn check(&self, tokens: Option<u64>, now: Timestamp) -> Result<Duration, CostAboveLimit> {
        let mut wait = Duration::ZERO;
        for b in &self.budgets {
            let cost = tokens.filter(|_| Self::counts_tokens(b.unit()));
            wait = wait.max(b.check(cost, now)?);
        }
        Ok(wait)
    }

    /// Debits `tokens` sent at `now` from every budget that counts tokens.
    pub fn spend(&mut self, tokens: u64, now: Timestamp) {
        for b in &mut self.budgets {
            if Self::counts_tokens(b.unit()) {
                b.spend(tokens, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn policy(unit: QuotaUnit, limit: u64, remaining: u64, reset: u64) -> Policy {
        Policy::new(Dialect::Anthropic)
            .with_unit(unit)
            .with_limit(limit)
            .with_remaining(remaining)
            .with_reset_after(secs(reset))
    }

    #[test]
    fn each_unit_paces_what_it_counts() {
        use QuotaUnit::*;
        // (policies, tokens) -> wait in seconds, or refused
        type Case = (Vec<Policy>, Option<u64>, Result<u64, ()>);
        let cases: Vec<Case> = vec![
            // Requests never make a budget, even exhausted.
            (vec![policy(Requests, 60, 0, 30)], Some(10), Ok(0)),
            // Tokens and input tokens count the cost: 10 a second come back.
            (vec![policy(Tokens, 600, 0, 60)], Some(50), Ok(5)),
            (vec![policy(InputTokens, 600, 0, 60)], Some(50), Ok(5)),
            (vec![policy(InputTokens, 600, 100, 50)], Some(50), Ok(0)),
            // The longest wait of all budgets.
            (
                vec![policy(InputTokens, 600, 0, 60), policy(Tokens, 600, 0, 30)],
                Some(50),
                Ok(5),
            ),
            // Output tokens: only exhaustion holds, until the reset.
            (vec![policy(OutputTokens, 600, 1, 59)], Some(500), Ok(0)),
            (vec![policy(OutputTokens, 600, 0, 60)], Some(5), Ok(60)),
            // No token count: only an exhausted budget holds.
            (vec![policy(Tokens, 600, 10, 59)], None, Ok(0)),
            (vec![policy(Tokens, 600, 0, 60)], None, Ok(60)),
            // Above a tokens limit: never; an output limit says nothing of the input.
            (vec![policy(InputTokens, 600, 600, 0)], Some(601), Err(())),
            (vec![policy(OutputTokens, 600, 600, 0)], Some(601), Ok(0)),
            // An unknown unit: only exhaustion.
            (
                vec![policy(Other("complexity".into()), 10, 0, 7)],
                Some(1),
                Ok(7),
            ),
        ];
        for (i, (policies, tokens, want)) in cases.into_iter().enumerate() {
            let mut b = UnitBudgets::new();
            b.observe(&policies, Timestamp::ZERO);
            let got = b.check(tokens, Timestamp::ZERO);
            match want {
                Ok(w) => assert_eq!(got, Ok(secs(w)), "case {i}"),
                Err(()) => assert!(got.is_err(), "case {i}: {got:?}"),
            }
        }
    }

    #[test]
    fn spending_debits_token_budgets_and_a_response_corrects_it() {
        let t0 = Timestamp::ZERO;
        let mut b = UnitBudgets::new();
        let sent = [
            policy(QuotaUnit::InputTokens, 600, 100, 50),
            policy(QuotaUnit::OutputTokens, 600, 100, 50),
        ];
        b.observe(&sent, t0);
        b.spend(100, t0);
        assert_eq!(b.check(Some(10), t0), Ok(secs(1)));
        assert_eq!(b.budgets()[1].available(t0), Some(100), "output untouched");
        // The server's next numbers replace the local count.
        b.observe(&[policy(QuotaUnit::InputTokens, 600, 500, 10)], t0);
        assert_eq!(b.check(Some(10), t0), Ok(Duration::ZERO));
        assert_eq!(b.budgets().len(), 1);
    }

    #[test]
    fn unsound_policies_make_no_budget() {
        let mut b = UnitBudgets::new();
        b.observe(
            &[policy(QuotaUnit::Tokens, 600, 0, 60).unsound()],
            Timestamp::ZERO,
        );
        assert!(b.is_empty());
    }
}

//! [`UnitBudgets`]: an endpoint's budgets in every non-request unit its server reports.

use std::time::Duration;

use super::unit_budget::{CostAboveLimit, UnitBudget};
use crate::{Policy, QuotaUnit, Timestamp, TokenUsage};

/// The budgets of an endpoint's policies that do not count requests, each paced with what it
/// counts.
///
/// * Each budget in tokens counts its part of the request's [`TokenUsage`]
///   ([`TokenUsage::in_unit`]): [`QuotaUnit::Tokens`] the whole, [`QuotaUnit::InputTokens`]
///   the prompt, [`QuotaUnit::OutputTokens`] the output the request said it may produce. A
///   request waits until every budget holds its part, and each part is debited when it is
///   sent; when its answer reports what it used, the difference is settled
///   ([`settle`](Self::settle)).
/// * A budget whose part is not known (an output the request did not say, `content-bytes`, a
///   unit Pacer does not know) holds a request only while exhausted: less than one unit left,
///   until the reset. The next response's remaining says what it took.
/// * [`QuotaUnit::Requests`] and [`QuotaUnit::ConcurrentRequests`] are not budgets here: the
///   adaptive limiter follows the first ([`crate::ServerQuota::from_info`]) and the
///   server-ordered stop holds the endpoint when either is exhausted.
///
/// A request of unknown cost (no token count) is held like one of unknown output: only by an
/// exhausted budget.
///
/// ```
/// use pacer_core::{Dialect, Policy, QuotaUnit, RateLimitInfo, Timestamp, TokenUsage, UnitBudgets};
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
/// assert_eq!(budgets.check(Some(TokenUsage::new(500, None)), t0), Ok(Duration::from_secs(3)));
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
        self.observe_shared(policies, 1, now);
    }

    /// [`observe`](Self::observe) for one of `members` processes that share the server's
    /// budgets: each budget is this process's part ([`UnitBudget::shared`]).
    pub fn observe_shared<'p>(
        &mut self,
        policies: impl IntoIterator<Item = &'p Policy>,
        members: u32,
        now: Timestamp,
    ) {
        self.budgets = policies
            .into_iter()
            .filter(|p| Self::paces(p))
            .filter_map(|p| UnitBudget::from_policy(p, now))
            .map(|b| b.shared(members))
            .collect();
    }

    /// Cuts each budget again as the part of one of `members` processes
    /// ([`UnitBudget::shared`]), when the count moved since the server's numbers were read.
    pub(crate) fn share(&mut self, members: u32) {
        for b in &mut self.budgets {
            b.share(members);
        }
    }

    /// The budgets.
    #[must_use]
    pub fn budgets(&self) -> &[UnitBudget] {
        &self.budgets
    }

    /// The budgets as they stand at `now`, each refilled to it: what
    /// [`UnitBudget::left`] then reads.
    #[must_use]
    pub fn as_of(&self, now: Timestamp) -> UnitBudgets {
        UnitBudgets {
            budgets: self.budgets.iter().map(|b| b.as_of(now)).collect(),
        }
    }

    /// Whether there is no budget.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.budgets.is_empty()
    }

    /// How long a request of `tokens` (`None`: unknown) must wait at `now` before every budget
    /// lets it go: the longest of their waits, zero when it may go now. Each budget asks for the
    /// part of the tokens it counts ([`TokenUsage::in_unit`]); one whose part is not known
    /// holds the request only while exhausted.
    ///
    /// # Errors
    /// [`CostAboveLimit`] when the tokens are above a tokens policy's limit.
    pub fn check(
        &self,
        tokens: Option<TokenUsage>,
        now: Timestamp,
    ) -> Result<Duration, CostAboveLimit> {
        let mut wait = Duration::ZERO;
        for b in &self.budgets {
            let cost = tokens.and_then(|t| t.in_unit(b.unit()));
            wait = wait.max(b.check(cost, now)?);
        }
        Ok(wait)
    }

    /// Debits `tokens` sent at `now` from every budget that counts them, each its part.
    pub fn spend(&mut self, tokens: &TokenUsage, now: Timestamp) {
        for b in &mut self.budgets {
            if let Some(cost) = tokens.in_unit(b.unit()) {
                b.spend(cost, now);
            }
        }
    }

    /// Settles at `now` a request that `reserved` tokens before its send and `used` what its
    /// answer reports: each budget is given back what was reserved above what it counts of the
    /// usage, and charged what was used above the reservation (a part of the reservation not
    /// known counts 0).
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy, QuotaUnit, Timestamp, TokenUsage, UnitBudgets};
    /// use std::time::Duration;
    ///
    /// let output = Policy::new(Dialect::Anthropic).with_unit(QuotaUnit::OutputTokens)
    ///     .with_limit(8_000).with_remaining(8_000).with_reset_after(Duration::ZERO);
    /// let (t0, mut budgets) = (Timestamp::ZERO, UnitBudgets::new());
    /// budgets.observe([&output], t0);
    /// let reserved = TokenUsage::new(500, Some(4_000)); // its max_tokens
    /// budgets.spend(&reserved, t0);
    /// assert_eq!(budgets.budgets()[0].available(t0), Some(4_000));
    /// budgets.settle(&reserved, &TokenUsage::new(480, Some(300)), t0);
    /// assert_eq!(budgets.budgets()[0].available(t0), Some(7_700), "3,700 given back");
    /// ```
    pub fn settle(&mut self, reserved: &TokenUsage, used: &TokenUsage, now: Timestamp) {
        self.settle_in_share(reserved, used, false, now);
    }

    /// [`settle`](Self::settle) for a reservation that the server's count held when these
    /// budgets were last read from it: each budget was then a part of that count
    /// ([`UnitBudget::shared`]), so what comes back of the reservation comes back to this
    /// process's part in the same share, the rest to the others' at their next count; what the
    /// request used above its reservation is charged in full, the safe side until the server's
    /// next count shows it. With one member, the same as [`settle`](Self::settle).
    pub fn settle_counted(&mut self, reserved: &TokenUsage, used: &TokenUsage, now: Timestamp) {
        self.settle_in_share(reserved, used, true, now);
    }

    /// Each budget charged what was used above the reservation and given back what was reserved
    /// above the usage: all of it, or (`counted`) its part's share.
    fn settle_in_share(
        &mut self,
        reserved: &TokenUsage,
        used: &TokenUsage,
        counted: bool,
        now: Timestamp,
    ) {
        for b in &mut self.budgets {
            let Some(used) = used.in_unit(b.unit()) else {
                continue;
            };
            let reserved = reserved.in_unit(b.unit()).unwrap_or(0);
            let share = if counted { b.members().max(1) } else { 1 };
            if used > reserved {
                b.spend(used - reserved, now);
            } else {
                b.give_back((reserved - used) / u64::from(share), now);
            }
        }
    }

    /// Gives back at `now` the `reserved` tokens of a request the server did not count (its
    /// send failed, or it was refused).
    pub fn refund(&mut self, reserved: &TokenUsage, now: Timestamp) {
        for b in &mut self.budgets {
            if let Some(cost) = reserved.in_unit(b.unit()) {
                b.give_back(cost, now);
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
            let got = b.check(tokens.map(|t| TokenUsage::new(t, None)), Timestamp::ZERO);
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
        b.spend(&TokenUsage::new(100, None), t0);
        assert_eq!(b.check(Some(TokenUsage::new(10, None)), t0), Ok(secs(1)));
        assert_eq!(b.budgets()[1].available(t0), Some(100), "output untouched");
        // The server's next numbers replace the local count.
        b.observe(&[policy(QuotaUnit::InputTokens, 600, 500, 10)], t0);
        assert_eq!(
            b.check(Some(TokenUsage::new(10, None)), t0),
            Ok(Duration::ZERO)
        );
        assert_eq!(b.budgets().len(), 1);
    }

    #[test]
    fn a_known_output_is_paced_by_the_output_budget_and_the_whole_by_tokens() {
        let t0 = Timestamp::ZERO;
        let mut b = UnitBudgets::new();
        b.observe(
            &[
                policy(QuotaUnit::OutputTokens, 600, 100, 50),
                policy(QuotaUnit::Tokens, 6_000, 6_000, 0),
            ],
            t0,
        );
        // 500 output tokens: 400 missing at 10 a second.
        let asked = TokenUsage::new(50, Some(500));
        assert_eq!(b.check(Some(asked), t0), Ok(secs(40)));
        b.spend(&asked, t0);
        assert_eq!(b.budgets()[1].available(t0), Some(5_450), "the whole");
        // An over-estimate is given back, an under-estimate charged, unit by unit.
        b.settle(&asked, &TokenUsage::new(70, Some(100)), t0);
        assert_eq!(b.budgets()[0].available(t0), Some(0), "100 - 500 + 400");
        assert_eq!(
            b.budgets()[1].available(t0),
            Some(5_830),
            "550 reserved, 170 used"
        );
        // A refund gives the whole reservation back, never above the limit.
        b.refund(&TokenUsage::new(10_000, Some(10_000)), t0);
        assert_eq!(b.budgets()[1].available(t0), Some(6_000));
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

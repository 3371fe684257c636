//! [`UnitBudget`]: one policy of a non-request unit, the server's last numbers less what this
//! process spent since, refilled as the server says.

use std::time::Duration;

use crate::{Policy, QuotaUnit, Timestamp};

/// A request's cost is above a policy's limit: it could never fit, however long it waited.
///
/// ```
/// use pacer_core::{Dialect, Policy, QuotaUnit, Timestamp, UnitBudget};
/// use std::time::Duration;
///
/// let tokens = Policy::new(Dialect::OpenAi).with_name("tokens").with_unit(QuotaUnit::Tokens)
///     .with_limit(6_000).with_remaining(6_000).with_reset_after(Duration::ZERO);
/// let budget = UnitBudget::from_policy(&tokens, Timestamp::ZERO).expect("a budget");
/// let above = budget.check(Some(7_000), Timestamp::ZERO).unwrap_err();
/// assert_eq!((above.limit, above.cost), (6_000, 7_000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a cost of {cost} {unit:?} is above the limit of policy {policy:?} ({limit})")]
#[non_exhaustive]
pub struct CostAboveLimit {
    /// The policy's name, if the server named it.
    pub policy: Option<Box<str>>,
    /// What the policy counts.
    pub unit: QuotaUnit,
    /// The policy's limit.
    pub limit: u64,
    /// The request's cost in that unit.
    pub cost: u64,
}

/// The local view of one quota in a unit other than requests: the remaining the server last
/// sent, less what this process spent since, plus what came back since.
///
/// * **Refill.** The server's reset is read as the time until the quota is **full** again
///   (OpenAI's `x-ratelimit-reset-tokens`, which refills continuously): with a limit `L`, a
///   remaining `R < L` and a reset `T`, the budget refills at `(L − R) / T` units a second, up
///   to `L`. When those numbers give no rate (`R ≥ L`: a full quota reports a reset of `0s`; or
///   no reset sent) it refills at `L` per the policy's window, else per
///   [`DEFAULT_WINDOW`](Self::DEFAULT_WINDOW) (a minute). Without a limit there is no rate:
///   the budget holds what is left until the reset, then holds nothing (its numbers are stale)
///   until the next observation replaces it.
/// * **Spending.** [`spend`](Self::spend) debits a request's cost when it is sent; the level
///   may go below zero (concurrent requests) and later requests wait that debt out. The next
///   response's remaining replaces the local count: the server corrects it.
/// * **A request of a known cost `C`** goes when the level holds `C`, else waits until it does
///   (at the refill rate, or until the reset); `C > L` is [`CostAboveLimit`].
/// * **A request of an unknown cost** is held only while the budget is exhausted (less than
///   one unit left): until the reset, and at least until one unit is back.
///
/// Times are [`Timestamp`]s of one monotonic clock; nothing here reads one.
///
/// ```
/// use pacer_core::{Dialect, Policy, QuotaUnit, Timestamp, UnitBudget};
/// use std::time::Duration;
///
/// // 6,000 tokens a minute, 1,000 left, full again in 50 s: 100 tokens come back a second.
/// let tokens = Policy::new(Dialect::OpenAi).with_name("tokens").with_unit(QuotaUnit::Tokens)
///     .with_limit(6_000).with_remaining(1_000).with_reset_after(Duration::from_secs(50));
/// let t0 = Timestamp::ZERO;
/// let mut budget = UnitBudget::from_policy(&tokens, t0).expect("a budget");
/// assert_eq!(budget.check(Some(800), t0), Ok(Duration::ZERO));
/// budget.spend(800, t0);
/// // 200 left: 500 more tokens take 3 s to come back.
/// assert_eq!(budget.check(Some(500), t0), Ok(Duration::from_secs(3)));
/// assert_eq!(budget.check(Some(500), t0 + Duration::from_secs(3)), Ok(Duration::ZERO));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct UnitBudget {
    policy: Option<Box<str>>,
    unit: QuotaUnit,
    limit: Option<u64>,
    /// Units left at `updated` (below zero: a debt).
    level: f64,
    /// Units a second that come back, up to `limit`; 0 when the server's numbers give no rate.
    refill: f64,
    updated: Timestamp,
    /// When the server said the quota is full again.
    reset_at: Timestamp,
    /// The processes that share the server's budget, this one among them: it takes an even
    /// part of what the server reports left and of its refill ([`shared`](Self::shared)).
    members: u32,
}

impl UnitBudget {
    /// The window a policy with a limit and no window is taken to count over, for its refill
    /// rate when its numbers give none: a minute, as OpenAI and Anthropic count tokens (tokens
    /// per minute, their rate-limit guides).
    pub const DEFAULT_WINDOW: Duration = Duration::from_secs(60);

    /// The budget of `policy` as observed at `now`, when it has a remaining and a reset (an
    /// exhausted policy without a reset resets after its window, else 1 s, as
    /// [`Policy::effective_reset`] says).
    #[must_use]
    pub fn from_policy(policy: &Policy, now: Timestamp) -> Option<UnitBudget> {
        let remaining = policy.remaining()?;
        let reset = policy.effective_reset()?;
        let limit = policy.limit().filter(|l| *l > 0);
        // A rate only from a reset the server sent (not the fallback of an exhausted policy).
        let sent_reset = policy.reset_after().filter(|r| !r.is_zero());
        let window = policy.window().filter(|w| !w.is_zero());
        let refill = match (limit, sent_reset) {
            (Some(l), Some(t)) if remaining < l => (l - remaining) as f64 / t.as_secs_f64(),
            (Some(l), _) => l as f64 / window.unwrap_or(Self::DEFAULT_WINDOW).as_secs_f64(),
            (None, _) => 0.0,
        };
        Some(UnitBudget {
            policy: policy.name().map(Into::into),
            unit: policy.unit().clone(),
            limit,
            level: remaining as f64,
            refill,
            updated: now,
            reset_at: now + reset,
            members: 1,
        })
    }

    /// The same budget as the part of one of `members` processes that share the server's
    /// budget (a fleet, whose live count this is, or `InstanceCount` processes): each takes
    /// `1 / members` of the units the server reports left, of its refill and of its limit, so
    /// that they do not all spend what is left at once between two of the server's answers;
    /// each answer reads the server's whole count again, so what one leaves unspent the others
    /// see. A request that costs more than a member's whole part goes when its part is full
    /// (and leaves a debt). A part already cut is cut again from the whole it was cut from,
    /// what it holds now (a debt too) and its refill: a fleet's live count that grows while its
    /// members start must not leave each with the larger part of a smaller count (0 counts as
    /// 1).
    ///
    /// ```
    /// use pacer_core::{Dialect, Policy, QuotaUnit, Timestamp, UnitBudget};
    /// use std::time::Duration;
    ///
    /// let tokens = Policy::new(Dialect::OpenAi).with_unit(QuotaUnit::Tokens).with_limit(30_000)
    ///     .with_remaining(12_000).with_reset_after(Duration::from_secs(36));
    /// let t0 = Timestamp::ZERO;
    /// let part = UnitBudget::from_policy(&tokens, t0).unwrap().shared(4);
    /// assert_eq!(part.left(), Some(3_000));
    /// assert_eq!(part.refill_per_second(), Some(125.0));
    /// // 1,900 tokens fit; 3,500 wait for the refill.
    /// assert_eq!(part.check(Some(1_900), t0), Ok(Duration::ZERO));
    /// assert_eq!(part.check(Some(3_500), t0), Ok(Duration::from_secs(4)));
    /// // 9,000 is more than a part (7,500): it goes when the part is full.
    /// assert_eq!(part.check(Some(9_000), t0), Ok(Duration::from_secs(36)));
    /// // Cut by 2 first, then by 4 once the count grew: the same quarter.
    /// let half = UnitBudget::from_policy(&tokens, t0).unwrap().shared(2);
    /// assert_eq!(half.left(), Some(6_000));
    /// let quarter = half.shared(4);
    /// assert_eq!((quarter.left(), quarter.members()), (Some(3_000), 4));
    /// assert_eq!(quarter.refill_per_second(), Some(125.0));
    /// ```
    #[must_use]
    pub fn shared(mut self, members: u32) -> UnitBudget {
        self.share(members);
        self
    }

    /// [`shared`](Self::shared), in place.
    pub(crate) fn share(&mut self, members: u32) {
        let members = members.max(1);
        if members != self.members {
            let scale = f64::from(self.members.max(1)) / f64::from(members);
            self.level *= scale;
            self.refill *= scale;
            self.members = members;
        }
    }

    /// The processes whose parts of the server's budget this is one of
    /// ([`shared`](Self::shared)); 1 when it is the whole.
    #[must_use]
    pub fn members(&self) -> u32 {
        self.members
    }

    /// The policy's name, if the server named it.
    #[must_use]
    pub fn policy(&self) -> Option<&str> {
        self.policy.as_deref()
    }

    /// What the policy counts.
    #[must_use]
    pub fn unit(&self) -> &QuotaUnit {
        &self.unit
    }

    /// The policy's limit, if the server sent one.
    #[must_use]
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Units that come back a second, if the server's numbers give a rate.
    #[must_use]
    pub fn refill_per_second(&self) -> Option<f64> {
        (self.refill > 0.0).then_some(self.refill)
    }

    /// Whole units left at `now` (0 while in debt); `None` once the budget is stale (no limit
    /// and the reset has passed).
    #[must_use]
    pub fn available(&self, now: Timestamp) -> Option<u64> {
        let level = self.level_at(now);
        level.is_finite().then(|| level.max(0.0).floor() as u64)
    }

    /// Whole units left when the budget was last brought up to date (an answer's numbers, a
    /// send, a settlement, or [`UnitBudgets::as_of`](crate::UnitBudgets::as_of), which the
    /// endpoint's state is read with); `None` once it is stale.
    #[must_use]
    pub fn left(&self) -> Option<u64> {
        self.available(self.updated)
    }

    /// The same budget refilled to `now` (a time before its last update changes nothing).
    #[must_use]
    pub fn as_of(&self, now: Timestamp) -> UnitBudget {
        let mut b = self.clone();
        if b.refill > 0.0 && now > b.updated {
            b.level = b.level_at(now);
            b.updated = now;
        } else {
            b.updated = b.updated.max(now);
        }
        b
    }

    /// How long a request that costs `cost` units (`None`: unknown) must wait at `now` before it
    /// fits: zero when it may go now.
    ///
    /// # Errors
    /// [`CostAboveLimit`] when `cost` is above the policy's limit: it could never fit.
    pub fn check(&self, cost: Option<u64>, now: Timestamp) -> Result<Duration, CostAboveLimit> {
        if let (Some(cost), Some(limit)) = (cost, self.limit)
            && cost > limit
        {
            return Err(CostAboveLimit {
                policy: self.policy.clone(),
                unit: self.unit.clone(),
                limit,
                cost,
            });
        }
        let level = self.level_at(now);
        let need = cost.map_or(1.0, |c| (c as f64).min(self.cap()));
        if level >= need {
            return Ok(Duration::ZERO);
        }
        let until_reset = self.reset_at - now;
        let refilled = if self.refill > 0.0 {
            Some(secs((need - level) / self.refill))
        } else {
            None
        };
        Ok(match (cost, refilled) {
            // A known cost: until the refill brings it.
            (Some(_), Some(refilled)) => refilled,
            // Unknown: an exhausted budget holds until the reset, and at least one unit.
            (None, Some(refilled)) => refilled.max(until_reset),
            // No rate: everything comes back at the reset.
            (_, None) => until_reset,
        })
    }

    /// Debits `amount` units spent at `now` (a request sent).
    pub fn spend(&mut self, amount: u64, now: Timestamp) {
        self.level = self.level_at(now) - amount as f64;
        self.updated = self.updated.max(now);
    }

    /// Credits `amount` units at `now` that were debited and not spent (a reservation above
    /// what the request took, or a request the server did not count), up to the limit.
    pub fn give_back(&mut self, amount: u64, now: Timestamp) {
        let level = self.level_at(now);
        if level.is_finite() {
            self.level = (level + amount as f64).min(self.cap());
            self.updated = self.updated.max(now);
        }
    }

    /// The most this process's part holds: its part of the limit (no cap without a limit).
    fn cap(&self) -> f64 {
        self.limit
            .map_or(f64::INFINITY, |l| l as f64 / f64::from(self.members.max(1)))
    }

    /// The level at `now`: refilled since `updated`; without a rate (no limit), stale from the
    /// reset on.
    fn level_at(&self, now: Timestamp) -> f64 {
        if self.refill > 0.0 {
            let elapsed = (now - self.updated).as_secs_f64();
            (self.level + self.refill * elapsed).min(self.cap())
        } else if now >= self.reset_at {
            f64::INFINITY
        } else {
            self.level
        }
    }
}

/// Seconds as a `Duration`, rounded up to the nanosecond (a wait never ends early).
fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).map_or(Duration::MAX, |d| {
        if d.as_secs_f64() < s {
            d + Duration::from_nanos(1)
        } else {
            d
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Clock;
    use crate::{Dialect, ManualClock};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn tokens(limit: Option<u64>, remaining: u64, reset: Duration) -> Policy {
        let p = Policy::new(Dialect::OpenAi)
            .with_name("tokens")
            .with_unit(QuotaUnit::Tokens)
            .with_remaining(remaining)
            .with_reset_after(reset);
        match limit {
            Some(l) => p.with_limit(l),
            None => p,
        }
    }

    #[test]
    fn a_request_waits_until_its_cost_is_back() {
        // (limit, remaining, reset ms, spent, elapsed ms, cost) -> wait in ms (`Err`: never)
        type Case = (
            Option<u64>,
            u64,
            u64,
            u64,
            u64,
            Option<u64>,
            Result<u64, ()>,
        );
        let cases: [Case; 17] = [
            // 6,000 a minute, 1,000 left, full in 50 s: 100 a second.
            (Some(6000), 1000, 50_000, 0, 0, Some(1000), Ok(0)),
            (Some(6000), 1000, 50_000, 0, 0, Some(1500), Ok(5_000)),
            (Some(6000), 1000, 50_000, 800, 0, Some(500), Ok(3_000)),
            (Some(6000), 1000, 50_000, 800, 1_000, Some(500), Ok(2_000)),
            // A debt is waited out.
            (Some(6000), 1000, 50_000, 1500, 0, Some(100), Ok(6_000)),
            // Refilled past the limit: capped at it.
            (Some(6000), 1000, 50_000, 0, 600_000, Some(6000), Ok(0)),
            // Above the limit: never.
            (Some(6000), 1000, 50_000, 0, 0, Some(6001), Err(())),
            // Unknown cost: held only while exhausted, then until the reset.
            (Some(6000), 1, 50_000, 0, 0, None, Ok(0)),
            (Some(6000), 0, 50_000, 0, 0, None, Ok(50_000)),
            (Some(6000), 0, 50_000, 0, 5, None, Ok(49_995)),
            (Some(6000), 0, 50_000, 0, 10_000, None, Ok(0)),
            // No limit: no rate; everything comes back at the reset, then the budget is stale.
            (None, 100, 20_000, 0, 0, Some(300), Ok(20_000)),
            (None, 100, 20_000, 0, 20_000, Some(300_000), Ok(0)),
            // Full (R = L, reset 0): the limit per minute, 100 a second.
            (Some(6000), 6000, 0, 5000, 0, Some(500), Ok(0)),
            (Some(6000), 6000, 0, 6000, 0, Some(500), Ok(5_000)),
            // Exhausted without a reset: the limit per minute too.
            (Some(6000), 0, 0, 0, 0, Some(10), Ok(100)),
            // ... and an unknown cost until the reset (1 s, `Policy::effective_reset`).
            (Some(6000), 0, 0, 0, 0, None, Ok(1_000)),
        ];
        for (i, (limit, remaining, reset, spent, elapsed, cost, want)) in
            cases.into_iter().enumerate()
        {
            let clock = ManualClock::new();
            let t0 = clock.now();
            let mut b = UnitBudget::from_policy(&tokens(limit, remaining, ms(reset)), t0)
                .expect("a budget");
            b.spend(spent, t0);
            clock.advance(ms(elapsed));
            let got = b.check(cost, clock.now());
            match want {
                Ok(w) => assert_eq!(got, Ok(ms(w)), "case {i}"),
                Err(()) => assert!(got.is_err(), "case {i}: {got:?}"),
            }
        }
    }

    #[test]
    fn without_a_rate_from_the_numbers_the_limit_refills_over_the_window_or_a_minute() {
        let t0 = Timestamp::ZERO;
        // (window) -> wait for 100 tokens after spending all 1,000
        for (window, want) in [(Some(ms(10_000)), ms(1_000)), (None, ms(6_000))] {
            let mut p = tokens(Some(1000), 1000, Duration::ZERO);
            if let Some(w) = window {
                p = p.with_window(w);
            }
            let mut b = UnitBudget::from_policy(&p, t0).unwrap();
            b.spend(1000, t0);
            assert_eq!(b.check(Some(100), t0), Ok(want), "{window:?}");
        }
    }

    #[test]
    fn a_budget_without_a_limit_goes_stale_at_the_reset() {
        let t0 = Timestamp::ZERO;
        let b = UnitBudget::from_policy(&tokens(None, 5, ms(1_000)), t0).unwrap();
        assert_eq!(b.available(t0), Some(5));
        assert_eq!(b.available(t0 + ms(1_000)), None);
    }

    #[test]
    fn a_policy_without_a_remaining_or_a_reset_makes_no_budget() {
        let no_remaining = Policy::new(Dialect::OpenAi).with_limit(10);
        assert_eq!(
            UnitBudget::from_policy(&no_remaining, Timestamp::ZERO),
            None
        );
        let no_reset = Policy::new(Dialect::OpenAi)
            .with_limit(10)
            .with_remaining(5);
        assert_eq!(UnitBudget::from_policy(&no_reset, Timestamp::ZERO), None);
    }

    #[test]
    fn a_clock_step_back_refills_nothing() {
        let clock = ManualClock::new();
        clock.advance(ms(10_000));
        let t = clock.now();
        let mut b = UnitBudget::from_policy(&tokens(Some(6000), 0, ms(60_000)), t).unwrap();
        b.spend(0, t);
        assert_eq!(b.available(Timestamp::ZERO), Some(0));
    }
}

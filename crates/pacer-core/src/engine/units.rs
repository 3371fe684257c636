//! The quotas in other units than requests (tokens), per endpoint: stored from each response as
//! the server sent them, asked before a send, debited at the send, settled when the answer says
//! what the request used. The algorithm is [`UnitBudgets`]; this is the glue, and the tokens of
//! the requests in flight.

use crate::{CostAboveLimit, Policy, RateLimitInfo, Timestamp, TokenUsage, UnitBudgets};
use std::collections::BTreeMap;
use std::time::Duration;

/// An endpoint's budgets in other units, and the tokens of its requests sent and not yet
/// answered or not yet settled.
///
/// A response's remaining was counted when the server took that request (the model APIs
/// count a request's tokens when it comes): requests sent after it are not in it, those sent
/// before it are. So a new observation is debited with the tokens of the attempts in flight
/// sent after the answered one, and an answer to a request sent before the one whose count the
/// budgets hold says less than they know: its count is not read (answers come out of order when
/// they take as long as the text they write).
///
/// A settlement applies whenever the usage comes: the model APIs reserve a request's tokens
/// when it comes (its prompt and its `max_tokens`) and adjust them at its end (OpenAI's and
/// Anthropic's rate-limit guides say so), so the numbers the answer itself carries count the
/// reservation, and the adjustment is still to come. A refund applies only while the debit is
/// still in the local level (sent after the last observation, or in flight and not the oldest
/// at it): a refused request is not in the server's count, and once an observation came after
/// it, that count replaced the debit.
#[derive(Debug, Default)]
pub(crate) struct UnitQuotas {
    budgets: UnitBudgets,
    /// Attempt number → its reservation, for the attempts sent and not yet answered.
    in_flight: BTreeMap<u64, Reserved>,
    /// Attempt number → its reservation, for the attempts answered whose usage the driver is
    /// reading (a [`Settlement`](super::Settlement) holds each).
    settling: BTreeMap<u64, Reserved>,
    next: u64,
    /// When the request whose count the budgets hold was sent.
    counted: Option<Timestamp>,
    /// Whether an attempt of known tokens was answered (or failed): until then, one at a time.
    answered: bool,
}

/// How often the requests that wait for the endpoint's first answer look again
/// ([`UnitQuotas::take`]): a tenth of a second, the most they go late after it; a model API's
/// first answer takes longer (its time to the first token).
const FIRST_ANSWER_POLL: Duration = Duration::from_millis(100);

/// The tokens an attempt reserved, and whether its debit is still in the local level.
#[derive(Debug, Clone, Copy)]
struct Reserved {
    tokens: TokenUsage,
    held: bool,
    sent: Timestamp,
}

impl UnitQuotas {
    /// Takes `tokens` for a new attempt, its predecessor `previous` (if any) answered; returns the
    /// attempt's number (never 0).
    fn sent(&mut self, previous: u64, tokens: TokenUsage, now: Timestamp) -> u64 {
        self.in_flight.remove(&previous);
        self.budgets.spend(&tokens, now);
        self.next += 1;
        let held = true;
        let sent = now;
        (self.in_flight).insert(self.next, Reserved { tokens, held, sent });
        self.next
    }

    /// Replaces the budgets with a response's policies in other units, this process's part
    /// of them as one of `members` ([`UnitBudget::shared`](crate::UnitBudget::shared)), less
    /// the tokens in flight sent after `counted`, when the answered request was sent. An
    /// answer to a request sent before the one whose count the budgets hold changes nothing.
    pub(crate) fn observe(
        &mut self,
        policies: &[Policy],
        members: u32,
        counted: Timestamp,
        now: Timestamp,
    ) {
        if policies.is_empty() && self.budgets.is_empty() {
            return;
        }
        self.answered = true;
        if self.counted.is_some_and(|c| counted < c) {
            return;
        }
        self.counted = Some(counted);
        self.budgets.observe_shared(policies, members, now);
        for r in self.in_flight.values_mut() {
            r.held = r.sent > counted;
            if r.held {
                self.budgets.spend(&r.tokens, now);
            }
        }
    }

    /// The wait the budgets ask of a request of `tokens` at `now` (`None`: go), or the quota
    /// whose limit the tokens are above. Takes nothing.
    pub(crate) fn wait(
        &self,
        tokens: Option<TokenUsage>,
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
    /// unless it is above a limit. While the endpoint has budgets, a request of unknown tokens
    /// is in flight too, having reserved none: its answer's usage is charged. `count`: the
    /// count of processes the parts are cut by, once it is settled (a fleet member's, once its
    /// second sync is back; always, outside a fleet); the parts are cut again when it moved.
    pub(crate) fn take(
        &mut self,
        tokens: Option<TokenUsage>,
        now: Timestamp,
        attempt: &mut u64,
        force: bool,
        count: Option<u32>,
    ) -> Result<Option<Duration>, CostAboveLimit> {
        if let Some(members) = count {
            self.budgets.share(members);
        }
        let counted = count.is_some();
        // Before the first budget, a request of known tokens is in flight all the same: the
        // first observation is debited with it.
        if self.budgets.is_empty() && tokens.is_none_or(|t| t.total() == 0) {
            return Ok(None);
        }
        // Before any answer, one request of known tokens at a time: the first answer's numbers
        // say what the others may take (processes that start together would otherwise send
        // every worker's reservation before any of them knows the budget). So too before a
        // fleet member knows how many share the budget: its part of the first numbers is cut
        // by the members it has counted, too few while the others are still joining.
        let parts_known = self.answered && counted;
        if !parts_known && !force && !self.in_flight.is_empty() {
            return Ok(Some(FIRST_ANSWER_POLL));
        }
        let wait = check(&self.budgets, tokens, now)?.filter(|_| !force);
        if wait.is_none() {
            *attempt = self.sent(*attempt, tokens.unwrap_or_default(), now);
        }
        Ok(wait)
    }

    /// A request's flow ended: its last attempt is no longer in flight, and its usage will not
    /// be read.
    pub(crate) fn landed(&mut self, attempt: u64) {
        if attempt != 0 {
            self.answered = true;
            self.in_flight.remove(&attempt);
            self.settling.remove(&attempt);
        }
    }

    /// The attempt was answered and its usage is being read: it waits for
    /// [`settle`](Self::settle). Says whether it holds a reservation.
    pub(crate) fn answered_for_settling(&mut self, attempt: u64) -> bool {
        self.answered = true;
        match self.in_flight.remove(&attempt) {
            Some(r) => {
                self.settling.insert(attempt, r);
                true
            }
            None => false,
        }
    }

    /// The attempt's answer reported `used` at `now`: its reservation is settled.
    pub(crate) fn settle(&mut self, attempt: u64, used: &TokenUsage, now: Timestamp) {
        let reserved = self.settling.remove(&attempt);
        let reserved = reserved.or_else(|| self.in_flight.remove(&attempt));
        match reserved {
            Some(r) if r.held => self.budgets.settle(&r.tokens, used, now),
            Some(r) => self.budgets.settle_counted(&r.tokens, used, now),
            None => {}
        }
    }

    /// The attempt was not counted by the server (its send failed, or it was refused): its
    /// reservation is given back at `now`, if its debit is still local.
    pub(crate) fn refund(&mut self, attempt: u64, now: Timestamp) {
        self.answered = true;
        if let Some(r) = self.in_flight.remove(&attempt).filter(|r| r.held) {
            self.budgets.refund(&r.tokens, now);
        }
    }

    /// The budgets as they stand.
    pub(crate) fn budgets(&self) -> &UnitBudgets {
        &self.budgets
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

/// Whether a throttle with these fields was refused for a budget in other units (tokens), not
/// for the request rate ([`RefusalClass::Tokens`](crate::RefusalClass::Tokens)): they count
/// requests, none of them exhausted, and a budget the unit budgets pace besides. A server that
/// counts requests and says some are left refused the request for something else it counts.
pub(crate) fn refused_for_units(info: &RateLimitInfo) -> bool {
    let mut requests = info
        .policies()
        .iter()
        .filter(|p| !UnitBudgets::is_budget_unit(p.unit()) && p.is_sound())
        .peekable();
    requests.peek().is_some()
        && requests.all(|p| p.remaining().is_some_and(|r| r > 0))
        && info.policies().iter().any(UnitBudgets::paces)
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
    tokens: Option<TokenUsage>,
    now: Timestamp,
) -> Result<Option<Duration>, CostAboveLimit> {
    let wait = budgets.check(tokens, now)?;
    Ok((!wait.is_zero()).then_some(wait))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, QuotaUnit};

    fn tokens(remaining: u64) -> Policy {
        Policy::new(Dialect::OpenAi)
            .with_unit(QuotaUnit::Tokens)
            .with_limit(6_000)
            .with_remaining(remaining)
            .with_reset_after(Duration::from_secs(600))
    }

    fn level(q: &UnitQuotas) -> u64 {
        q.budgets.budgets()[0].available(Timestamp::ZERO).unwrap()
    }

    fn take(q: &mut UnitQuotas, n: u64) -> u64 {
        take_at(q, n, Timestamp::ZERO)
    }

    fn take_at(q: &mut UnitQuotas, n: u64, at: Timestamp) -> u64 {
        let mut attempt = 0;
        let t = TokenUsage::new(n, None);
        q.take(Some(t), at, &mut attempt, true, Some(1)).unwrap();
        attempt
    }

    #[test]
    fn a_response_is_debited_with_the_tokens_sent_after_the_answered_one() {
        let t = |s: u64| Timestamp::ZERO + Duration::from_secs(s);
        let mut q = UnitQuotas::default();
        let a = take_at(&mut q, 1_000, t(0));
        let _b = take_at(&mut q, 2_000, t(1));
        // a's answer: counted when a came, before b.
        q.observe(&[tokens(5_000)], 1, t(0), t(2));
        assert_eq!(level(&q), 3_000);
        // A retry of `a` replaces its attempt.
        let mut a2 = a;
        q.take(
            Some(TokenUsage::new(500, None)),
            t(3),
            &mut a2,
            true,
            Some(1),
        )
        .unwrap();
        assert_eq!(q.in_flight.len(), 2);
        // b's answer: a2 came after it.
        q.observe(&[tokens(5_000)], 1, t(1), t(4));
        assert_eq!(level(&q), 4_500, "b answered, a2 in flight");
        // An answer to a request sent before b, coming later, says less than b's did.
        q.observe(&[tokens(9_000)], 1, t(0), t(5));
        assert_eq!(level(&q), 4_500);
    }

    #[test]
    fn before_any_answer_one_request_of_known_tokens_at_a_time() {
        let t0 = Timestamp::ZERO;
        let mut q = UnitQuotas::default();
        let cost = Some(TokenUsage::new(1_000, Some(500)));
        let (mut a, mut b) = (0, 0);
        assert_eq!(q.take(cost, t0, &mut a, false, Some(1)), Ok(None));
        let wait = Some(FIRST_ANSWER_POLL);
        assert_eq!(q.take(cost, t0, &mut b, false, Some(1)), Ok(wait));
        assert_eq!(b, 0, "nothing taken");
        // a's answer brings the numbers: b may go.
        q.observe(&[tokens(5_000)], 1, t0, t0);
        assert_eq!(q.take(cost, t0, &mut b, false, Some(1)), Ok(None));
        assert_eq!(level(&q), 3_500);
    }

    #[test]
    fn a_fleet_member_whose_count_is_unsettled_sends_one_at_a_time_then_cuts_by_the_count() {
        let t0 = Timestamp::ZERO;
        let mut q = UnitQuotas::default();
        let cost = Some(TokenUsage::new(1_000, None));
        let (mut a, mut b) = (0, 0);
        assert_eq!(q.take(cost, t0, &mut a, false, None), Ok(None));
        // a's answer came while the member counted itself alone (its first sync): 6,000 left.
        q.observe(&[tokens(6_000)], 1, t0, t0);
        q.landed(a);
        let mut c = 0;
        let small = Some(TokenUsage::new(500, None));
        assert_eq!(
            q.take(small, t0, &mut c, false, None),
            Ok(None),
            "one at a time goes"
        );
        let wait = Some(FIRST_ANSWER_POLL);
        assert_eq!(q.take(cost, t0, &mut b, false, None), Ok(wait));
        assert_eq!(b, 0, "the count unsettled: not a second one");
        // The second sync counts 4: the part is a quarter of what the numbers gave, less c.
        assert_eq!(q.take(cost, t0, &mut b, false, Some(4)), Ok(None));
        assert_eq!(level(&q), 6_000 / 4 - 500 / 4 - 1_000);
        assert_eq!(q.budgets.budgets()[0].members(), 4);
    }

    #[test]
    fn a_member_s_part_gets_its_share_of_what_a_counted_reservation_gives_back() {
        let t = |s: u64| Timestamp::ZERO + Duration::from_secs(s);
        let mut q = UnitQuotas::default();
        let a = take_at(&mut q, 2_000, t(0));
        let b = take_at(&mut q, 1_000, t(1));
        // a's answer: 4,000 left, this member's part a quarter, less b (sent after a).
        q.observe(&[tokens(4_000)], 4, t(0), t(2));
        assert_eq!(level(&q), 0);
        assert_eq!(q.budgets.budgets()[0].members(), 4);
        // a was in the count the parts were cut from: a quarter of what it gives back.
        assert!(q.answered_for_settling(a));
        q.settle(a, &TokenUsage::new(400, Some(0)), t(2));
        assert_eq!(level(&q), 400);
        // b was debited here in full: all of what it gives back.
        assert!(q.answered_for_settling(b));
        q.settle(b, &TokenUsage::new(200, Some(0)), t(2));
        assert_eq!(level(&q), 1_200);
    }

    #[test]
    fn a_reservation_is_settled_before_or_after_the_server_s_numbers() {
        let t0 = Timestamp::ZERO;
        let used = TokenUsage::new(100, Some(0));
        let mut q = UnitQuotas::default();
        q.observe(&[tokens(6_000)], 1, t0, t0);
        // Sent after the observation: its over-estimate comes back.
        let a = take(&mut q, 1_000);
        assert!(q.answered_for_settling(a));
        q.settle(a, &used, t0);
        assert_eq!(level(&q), 5_900);
        // Its answer's numbers count its reservation (the server adjusts at the end): the
        // over-estimate comes back all the same.
        let b = take(&mut q, 1_000);
        q.observe(&[tokens(4_900)], 1, t0, t0);
        assert!(q.answered_for_settling(b));
        q.settle(b, &used, t0);
        assert_eq!(level(&q), 5_800);
        // An under-estimate is charged.
        let c = take(&mut q, 50);
        assert!(q.answered_for_settling(c));
        q.settle(c, &TokenUsage::new(80, Some(20)), t0);
        assert_eq!(level(&q), 5_700);
        assert!(q.settling.is_empty() && q.in_flight.is_empty());
    }

    #[test]
    fn a_refusal_or_a_failed_send_refunds_what_is_still_local() {
        let t0 = Timestamp::ZERO;
        let mut q = UnitQuotas::default();
        q.observe(&[tokens(6_000)], 1, t0, t0);
        let a = take(&mut q, 1_000);
        let b = take(&mut q, 2_000);
        assert_eq!(level(&q), 3_000);
        q.refund(b, t0);
        assert_eq!(level(&q), 5_000, "b failed: given back");
        // a is answered by a refusal that carries the server's count: it stands.
        q.observe(&[tokens(6_000)], 1, t0, t0);
        q.refund(a, t0);
        assert_eq!(level(&q), 6_000);
        assert!(q.in_flight.is_empty());
    }
}
